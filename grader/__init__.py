"""autograd-lab's grader: a sandboxed autograder for the autograd problem set.

The package is laid out by the trust boundary (README.md, Layout): `grader.sandboxed` runs
with student code, `grader.host` decides scores, `grader.protocol` is what they speak;
`grader.cases` holds the tests, `grader.exports` and `grader.lms` what leaves for other tools.

Kept import-light on purpose: every worker imports this package, so nothing here may pull in
the CLI, test cases, solutions or heavy modules (a worker holds `grader`, `grader.protocol.*`
and `grader.sandboxed.*` only: tests/test_layout.py).

The path of one test through the whole engine, and a glossary: docs/engine.md.
"""

import warnings

__version__ = "0.1.0"

# Students install torch without NumPy (pyproject.toml: torch, pytest and pyyaml only): torch then warns "Failed to initialize NumPy" at
# import, in every process. The grader never uses NumPy; the warning would only alarm them.
warnings.filterwarnings("ignore", message=r"Failed to initialize NumPy", category=UserWarning)
