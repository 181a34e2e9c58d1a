"""The errors that cross module boundaries, in a module of their own.

Commands, exports and the engine raise these; the CLI catches them. Keeping them here means no
module imports the CLI or the engine just to raise one (that made import cycles).
"""


class UsageError(Exception):
    """Bad input from the person at the keyboard: the CLI prints the message and exits 2."""


class GraderError(RuntimeError):
    """A problem with the grader's own set-up (not with a submission)."""


class RunStopped(GraderError):
    """A grading run that stopped part-way: a stop signal, or a fault of the machine (a full disk, a
    folder that can no longer be written). The message says what happened; `summary` (the runner's
    RunSummary) what was written; `signum` the signal, if one stopped it; `remedy` what to do before
    going on ("free some space on that device"), if anything."""

    def __init__(self, message: str, summary=None, signum: int | None = None, remedy: str = ""):
        super().__init__(message)
        self.summary = summary
        self.signum = signum
        self.remedy = remedy
