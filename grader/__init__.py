"""autograd-lab's grader: a sandboxed autograder for the autograd problem set.

Kept import-light on purpose: the worker process imports this package, so nothing
here may pull in test cases, solutions or heavy modules.
"""

__version__ = "0.1.0"
