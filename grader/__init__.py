"""autograd-lab's grader: a sandboxed autograder for the autograd problem set.

Kept import-light on purpose: the worker process imports this package, so nothing
here may pull in test cases, solutions or heavy modules.
"""

import warnings

__version__ = "0.1.0"

# Students install torch without NumPy (grader.md): torch then warns "Failed to initialize NumPy" at
# import, in every process. The grader never uses NumPy; the warning would only alarm them.
warnings.filterwarnings("ignore", message=r"Failed to initialize NumPy", category=UserWarning)
