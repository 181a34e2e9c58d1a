"""The errors that cross module boundaries, in a module of their own.

Commands, exports and the engine raise these; the CLI catches them. Keeping them here means no
module imports the CLI or the engine just to raise one (that made import cycles).

Bad input is one family: `UsageError` and its kinds, each package's own (`CatalogError` for a
course file, `ScoreFileError`, `PolicyError`, `ReportError`, `LmsError`). `grader.cli.main` prints
every one of them the same way, `grader: error: <message>`, and exits 2; `usage_errors` wraps a
command so that a file it cannot read or write, or a missing optional dependency, joins the family.
"""

from __future__ import annotations

import functools


class UsageError(Exception):
    """Bad input from the person at the keyboard (an option, a file, a folder, a course): the CLI
    prints the message, `grader: error: ...`, and exits 2. The root of every bad-input error."""


def usage_errors(command, missing_hint: str = ""):
    """`command(args)`, with an OSError (a file that cannot be read or written, a full disk) and,
    given `missing_hint`, an ImportError (an optional dependency not installed) turned into a
    UsageError: the one wrapper the commands share, so that all of them fail the same way."""

    @functools.wraps(command)
    def run(args):
        try:
            return command(args)
        except OSError as exc:
            raise UsageError(f"{exc.filename or ''}: {exc.strerror or exc}") from None
        except ImportError as exc:
            if not missing_hint:
                raise
            raise UsageError(f"{getattr(args, 'command', 'this command')} needs {exc.name or exc}: "
                             f"{missing_hint}") from None
    return run


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
