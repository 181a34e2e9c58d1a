"""The vocabulary of grading, typed: operations, outcomes, statuses, and every message's shape.

The engine's student handle (`grader.host.student_code`) sends the worker one request at a
time; the worker (`grader.sandboxed.worker`) answers each with one reply. Both travel as the
JSON body of a `grader.protocol.wire` message, tensors as blobs; the engine adds an `id` to
every request and the worker echoes it. What a request and a reply hold is declared here:

    load    LoadRequest   -> LoadReply                the modules' sources and the session's settings
    import  ImportRequest -> ImportedReply | FailureReply
    call    CallRequest   -> CallReply | FailureReply  (returned or raised: a verdict is never sent)
    ping    PingRequest   -> PingReply
    exit    ExitRequest   -> (none: the worker ends)
    any     -> TamperedReply                           the submission changed what the worker relies on

The zygote's control socket has its own, smaller vocabulary (`ZygoteOp`, `ZygoteHello`,
`SpawnReply`), as JSON lines. `TestStatus` is what the engine makes of a test in the score file.

The enums are strings: a member equals its bare value, hashes like it and is written as it in
JSON, so the host can compare the plain strings it decodes with them, and the worker can send
them as they are. A reply is data from an untrusted process: the host checks every field's
type before it uses one; these declarations say what it expects, not what it got.
"""

from __future__ import annotations

import enum
from typing import Any, Literal, TypedDict, Union

try:
    from enum import StrEnum
except ImportError:  # Python 3.10
    class StrEnum(str, enum.Enum):
        def __str__(self) -> str:
            return str.__str__(self)


# ----------------------------------------------------------------------------- the worker protocol

class Op(StrEnum):
    """What the engine asks the worker to do."""

    LOAD = "load"  # take the submission's module files and the session's settings (once per worker)
    IMPORT = "import"  # import one module
    CALL = "call"  # call one function of the student's code
    PING = "ping"  # are you there (tests, diagnostics)
    EXIT = "exit"  # end, no reply


class TamperKind(StrEnum):
    """What a submission that tampered changed (a `TamperedReply`'s `kind`)."""

    GRADER = "grader"  # the worker's reply path: the grader's own code there (`grader.sandboxed.seal`)
    TORCH = "torch"  # torch or the interpreter while its code ran (`grader.sandboxed.guard`)


class Outcome(StrEnum):
    """What the worker says happened. It reports; the engine judges."""

    IMPORTED = "imported"  # the module was imported
    RETURNED = "returned"  # the call returned a value (reported as data)
    RAISED = "raised"  # the call raised an exception (its type and message)
    MISSING = "missing"  # no such module or function in the submission
    IMPORT_ERROR = "import_error"  # importing the function's module raised
    TAMPERED = "tampered"  # the submission changed what the worker relies on: nothing it reports counts


class _Message(TypedDict, total=False):
    id: int  # the engine's request number, added when sent; the worker echoes it in its reply


class LoadRequest(_Message):
    op: Literal[Op.LOAD]
    modules: list[str]  # the exercise modules ("graph", ...): the course's, since the worker cannot read it
    files: dict[str, int]  # module file name -> index of its source among the message's blobs
    device: str  # "cpu" or "cuda"
    seed: int  # torch's seed before any student code runs
    gpu_memory_fraction: float


class ImportRequest(_Message):
    op: Literal[Op.IMPORT]
    module: str  # "grad"


class CallRequest(_Message):
    op: Literal[Op.CALL]
    target: str  # "module.function"
    probe: str | None  # a probe of grader.sandboxed.helpers.PROBES that calls the target, or None
    args: Any  # a wire value tree: a list of the positional arguments
    kwargs: Any  # a wire value tree: {"$dict": [[name, value], ...]}
    capture: bool  # a public check of `grader check`: the reply carries what the call printed and warned


class PingRequest(_Message):
    op: Literal[Op.PING]


class ExitRequest(_Message):
    op: Literal[Op.EXIT]


Request = Union[LoadRequest, ImportRequest, CallRequest, PingRequest, ExitRequest]


class ExceptionRecord(TypedDict, total=False):
    type: str  # the exception's class name
    message: str  # str(exception), cut to a maximum length
    frames: list  # [file, line, source line] of each frame in the submission's own modules, innermost last
    traceback: str  # import errors only: the last lines, no source of the grader's


class LoadReply(_Message):
    ok: bool
    device: str


class PingReply(_Message):
    ok: bool
    pid: int


class ImportedReply(_Message):
    outcome: Literal[Outcome.IMPORTED]


class FailureReply(_Message):
    """The code asked for is not there: the module is missing, lacks the name, or did not import."""

    outcome: Literal[Outcome.MISSING, Outcome.IMPORT_ERROR]
    exception: ExceptionRecord


class _CallReply(_Message, total=False):
    value: Any  # returned: a wire value tree
    exception: ExceptionRecord  # raised
    printed: str  # only when the request asked to `capture`: the call's prints and warnings, plain text


class CallReply(_CallReply):
    outcome: Literal[Outcome.RETURNED, Outcome.RAISED]
    elapsed: float  # seconds the call took, as the worker measured it
    api_calls: dict[str, int]  # autograd entry points the call used ("torch.autograd.grad": 2)
    versions_before: list[int | None]  # each tensor argument's version counter before the call
    args_after: list  # wire value trees: every argument as it was after the call


class TamperedReply(_Message):
    outcome: Literal[Outcome.TAMPERED]
    kind: TamperKind  # what it changed
    detail: str  # the first change found


Reply = Union[LoadReply, PingReply, ImportedReply, FailureReply, CallReply, TamperedReply]


# ----------------------------------------------------------------------------- the zygote's control socket

class ZygoteOp(StrEnum):
    SPAWN = "spawn"  # fork a worker; the worker's socket, output and status pipes come as file descriptors


class SpawnRequest(TypedDict):
    op: Literal[ZygoteOp.SPAWN]


class ZygoteHello(TypedDict, total=False):
    """The zygote's first line: the sandbox plan it chose, or why it could not start."""

    plan: dict  # a grader.protocol.limits.SandboxPlan, as JSON
    error: str


class SpawnReply(TypedDict, total=False):
    pid: int  # the worker's pid
    parent: int  # its parent's: the first child, subreaper of whatever the worker leaves behind
    error: str


# ----------------------------------------------------------------------------- the score file

class TestStatus(StrEnum):
    """A test's status in the score file, decided by the engine."""

    __test__ = False  # not a pytest test class

    PASSED = "passed"
    FAILED = "failed"  # the student's result was checked and is wrong
    ERROR = "error"  # the code could not be called (missing, import error, a dead or tampered worker)
    TIMEOUT = "timeout"  # a time limit ran out
