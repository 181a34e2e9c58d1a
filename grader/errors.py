"""The errors that cross module boundaries, in a module of their own.

Commands, exports and the engine raise these; the CLI catches them. Keeping them here means no
module imports the CLI or the engine just to raise one (that made import cycles).
"""


class UsageError(Exception):
    """Bad input from the person at the keyboard: the CLI prints the message and exits 2."""


class GraderError(RuntimeError):
    """A problem with the grader's own set-up (not with a submission)."""
