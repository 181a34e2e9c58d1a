"""Calls into the student's code: the trusted side of the worker boundary.

`StudentCode` is what a test gets as its `student` fixture. `student.call(name,
*args)` sends the arguments to the worker as data, waits at most the time the limits
leave, and returns a `CallResult` holding plain data only: the decoded return value,
the exception the student's code raised, and the state of every argument before and after
the call. A worker that dies, hangs, or answers with garbage is killed and replaced; the
failure is charged to the test that caused it and nothing else. A module whose import
kills or hangs the worker is never imported again for this submission.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Iterator


from grader.host.channel import (  # noqa: F401  (framing: importable from here too, the old place)
    WATCH_INTERVAL_S, DeadlinePassed, MemoryLimitExceeded, MemoryWatch, MessageTooLarge, WorkerHandle,
    WorkerLauncher, _recv_exact, recv_message, send_message,
)
from grader.host.pipeline import Described, Entry, Pipeline, PlannedCall, packed
from grader.protocol import wire
from grader.protocol.limits import NAMESPACE_MODES, Limits
from grader.protocol.messages import CallRequest, ImportRequest, LoadRequest, Op, Outcome, Request, TamperKind

if TYPE_CHECKING:
    from grader.catalog import Course


class CallTimeout(Exception):
    """The student's code did not answer in time (status `timeout`)."""


class WorkerFault(Exception):
    """The worker died or sent garbage (status `error`)."""


class Tampered(WorkerFault):
    """The submission changed what the worker relies on: the grader's own code there, or torch and
    the interpreter while its code ran (status `error`; the exercise, or at import the module,
    scores 0: `grader.host.scoring.zero_tampered`)."""


def tampered_message(kind: object, detail: object) -> str:
    """What a student reads when a step of their code tampered (`kind`: a `TamperKind`, from the reply)."""
    detail = str(detail)[:120]
    if kind == TamperKind.TORCH:
        return (f"tampered: the submission changed what the grader relies on in torch or Python while its code ran "
                f"({detail}): nothing it reports can be trusted / 篡改：提交的代码在运行时修改了评分程序所依赖的 "
                f"torch 或 Python 对象（{detail}），它报告的任何结果都不可信")
    return (f"tampered: the submission changed the grader's code in the worker ({detail}): nothing it reports can "
            f"be trusted / 篡改：提交的代码修改了工作进程中评分程序的代码（{detail}），它报告的任何结果都不可信")


class SecondReply(WorkerFault):
    """A frame answered a request that had its answer already: the submission's code wrote to the worker's
    connection (the first answer may have been its own). The exercise the first answer went to scores 0
    (`StudentCode.answered`); the request being read, an innocent one, is made again on a fresh worker
    (`call`, `_ensure_imported`). Not a `Tampered`: that would charge the exercise being read."""


def second_reply_message() -> str:
    return ("tampered: a second reply came for one request, so the submission's code wrote to the worker's "
            "connection itself: nothing it reports can be trusted / 篡改：同一请求收到了第二个回复，说明提交的代码"
            "自己向工作进程的连接写入了数据，它报告的任何结果都不可信")


class CodeUnavailable(Exception):
    """The function cannot be called: missing module or name, or an import that failed (status `error`)."""


# The argument markers and their encoding live in the protocol, where the kit imports them too;
# they stay importable from here (the old place).
from grader.protocol.markers import (  # noqa: E402,F401
    SESSION_DEVICE, Arg, Fn, Graph, Leaf, _encode_tensor, _SessionDevice, encode_arguments,
)


# ----------------------------------------------------------------------------- results

@dataclass
class CallResult:
    """Everything a test may look at after one call. Plain data, decoded on the trusted side."""

    function: str
    args: tuple  # what was sent (trusted objects)
    outcome: Outcome  # RETURNED or RAISED
    value: Any = None
    exception: dict | None = None
    args_after: list = field(default_factory=list)
    versions_before: list = field(default_factory=list)
    elapsed: float = 0.0
    device: str = "cpu"
    api_calls: dict = field(default_factory=dict)  # autograd entry points the call used, as reported
    printed: str = ""  # what the call printed and warned: captured calls only (`StudentCode.capture`)


# ----------------------------------------------------------------------------- time budgets and module fates

@dataclass
class Budget:
    """The time a submission's code may take. Only time spent waiting for workers counts: the
    grader's own work (collecting tests, computing expected values) is never charged to the
    student. Loading and importing are charged to the submission, calls to their exercise too."""

    limits: Limits
    spent: dict[str, float] = field(default_factory=dict)  # exercise -> seconds its calls took
    student_time: float = 0.0  # seconds spent waiting for workers: what the submission budget limits

    def left(self, exercise: str | None, setup: bool = False) -> float:
        """Seconds the next request may take."""
        submission_left = self.limits.submission_budget_s - self.student_time
        if setup:
            return min(self.limits.call_timeout_s, submission_left)
        exercise_left = self.limits.exercise_budget_s - self.spent.get(exercise, 0.0)
        return min(self.limits.call_timeout_s, exercise_left, submission_left)

    def charge(self, exercise: str | None, seconds: float, setup: bool = False) -> None:
        self.student_time += seconds
        if exercise is not None and not setup:
            self.spent[exercise] = self.spent.get(exercise, 0.0) + seconds


class Fate(str, Enum):
    """Why a module is never imported again for this submission."""

    UNAVAILABLE = "unavailable"  # its import killed or hung the worker
    TAMPERED = "tampered"  # its import tampered: its exercises score 0
    IMPORT_ERROR = "import_error"  # its import raised (the worker caches it)


@dataclass(frozen=True)
class ModuleFate:
    fate: Fate
    message: str


# ----------------------------------------------------------------------------- the fixture object

class StudentCode:
    """One submission's code behind the worker boundary. Not thread-safe; one per submission.

    By default the submission's modules share one worker (slot "all"), and the worker puts torch
    and Python back before each import and call. With `--worker-per-module` (CPU only) each module
    runs in a worker of its own: what one module does to its interpreter (patching torch, leaving
    threads, breaking its worker) cannot change how another module's functions behave or are
    reported. On a GPU the modules always share one worker: each worker would hold a CUDA context
    of its own and a share of the device's memory."""

    def __init__(self, files: dict[str, bytes], launcher: WorkerLauncher, modules: dict[str, str], limits: Limits,
                 device: str = "cpu", seed: int = 0, course: Course | None = None, spare: Spare | None = None):
        """`spare`: a worker started ahead for this submission (`start_spare`, the engine's), which its first
        worker start takes."""
        self.files = files
        self.launcher = launcher
        self.modules = modules  # function or class name -> module name ("partial_grads" -> "grad")
        self.course = course  # the course being graded: what the kit needs of one (docstring examples)
        self.limits = limits
        self.device = device
        self.seed = seed
        self.workers: dict[str, WorkerHandle] = {}  # slot ("all", or a module name with worker_per_module) -> its worker
        self.watches: dict[str, MemoryWatch] = {}  # slot -> its worker's memory watch (CPU only)
        self.imported: set[str] = set()  # modules imported in their slot's live worker
        self.module_fates: dict[str, ModuleFate] = {}  # module -> why it is never imported again
        self.tampered_exercises: dict[str, str] = {}  # exercise -> how a call tampered: it scores 0
        self._exercise: str | None = None  # written by `working_on` only
        self._test: str | None = None  # the node id of the test being run (`working_on`)
        self.calls_made: dict[str, int] = {}  # test -> how many calls it made (the session learns from it)
        self.probed: dict[str, bool] = {}  # test -> whether its last call ran a probe on the result
        self.describing: list[PlannedCall] | None = None  # while the session describes the tests' first calls
        self.pipeline: Pipeline | None = None  # the requests sent ahead (grader.host.pipeline)
        self.budget = Budget(limits)
        self.workers_started = 0
        self.peak_memory_mb: float | None = None
        self.output: list[str] = []
        # A public check of `grader check`: the worker captures each call's prints and warnings, collected
        # in `printed` for the test that made the calls (`working_on` turns it on per test, never for a hidden one).
        self.capture = False
        self.printed: list[str] = []
        self.requests = 0
        # request id -> (exercise, module) its reply was charged to: a second frame with that id is a forgery's
        # trace (`SecondReply`), found while reading the next reply or by the ping before a worker ends
        self.answered: dict[int, tuple[str | None, str]] = {}
        # workers killed and not reaped yet (`end_workers`): slot, handle, memory watch, whether its output counts
        self.ending: list[tuple[str, WorkerHandle, MemoryWatch | None, bool]] = []
        # a worker started ahead (the engine's, or `spare_ahead`): its thread and what it started; taken by the
        # next start
        self.spare: Spare | None = spare
        self.spared_ahead = False  # `spare_ahead` started one
        self.spares_taken = 0

    # -- the test being run: its exercise ------------------------------------------------
    @contextmanager
    def working_on(self, exercise: str, capture: bool = False, test: str | None = None) -> Iterator[None]:
        """Within: calls are one test of `exercise`'s (`test`: its node id). Their time is charged to
        its budget, a tamper scores it 0, and with `capture` what they print is kept in `printed` (a
        fresh list). The one place the current exercise is written (the plugin enters it around each
        test, the session around each test it describes)."""
        saved = self._exercise, self.capture, self.printed, self._test
        self._exercise, self.capture, self.printed, self._test = exercise, capture, [], test
        try:
            yield
        finally:
            self._exercise, self.capture, self.printed, self._test = saved

    @property
    def current_test(self) -> str | None:
        """The node id of the test being run (`working_on`), None between tests."""
        return self._test

    @property
    def current_exercise(self) -> str | None:
        """The exercise whose test is running (`working_on`), None between tests."""
        return self._exercise

    # -- what became of the modules (read by the engine) ---------------------------------
    def _fates(self, fate: Fate) -> dict[str, str]:
        return {module: f.message for module, f in self.module_fates.items() if f.fate is fate}

    @property
    def fatal_modules(self) -> dict[str, str]:
        return self._fates(Fate.UNAVAILABLE)

    @property
    def tampered_modules(self) -> dict[str, str]:
        return self._fates(Fate.TAMPERED)

    @property
    def import_errors(self) -> dict[str, str]:
        return self._fates(Fate.IMPORT_ERROR)

    def module_problems(self) -> list[str]:
        """Every module's fate, as the score file's `submission_errors` lists them."""
        return sorted({f.message for f in self.module_fates.values()})

    @property
    def spent(self) -> dict[str, float]:
        return self.budget.spent

    @property
    def student_time(self) -> float:
        return self.budget.student_time

    def _settle(self, module: str, fate: Fate, message: str) -> str:
        self.module_fates[module] = ModuleFate(fate, message)
        return message

    # -- public API for tests ------------------------------------------------------------
    def call(self, function: str, *args: Any, probe: str | None = None, **kwargs: Any) -> CallResult:
        module = self.modules[function]
        fate = self.module_fates.get(module)
        if fate is not None and fate.fate is Fate.TAMPERED:
            raise Tampered(fate.message)
        if fate is not None and fate.fate is Fate.UNAVAILABLE:
            raise CodeUnavailable(fate.message)
        if self.current_exercise in self.tampered_exercises:  # its other tests are not run: they score 0
            raise Tampered(self.tampered_exercises[self.current_exercise])
        blobs: list[bytes] = []
        request: CallRequest = {
            "op": Op.CALL,
            "target": f"{module}.{function}",
            "probe": probe,
            "args": encode_arguments(list(args), blobs),
            "kwargs": encode_arguments(dict(kwargs), blobs),
        }
        if self.capture:
            request["capture"] = True
        if self.describing is not None:  # recorded, not made: the tests are being described
            if not any(c.test == self.current_test for c in self.describing[-1:]):
                self.describing.append(PlannedCall(self.current_test, self.current_exercise, module, function,
                                                   request, blobs))
            raise Described
        if self.current_test is not None:
            self.calls_made[self.current_test] = self.calls_made.get(self.current_test, 0) + 1
            self.probed[self.current_test] = probe is not None
        self._ensure_imported(module)

        def again() -> None:  # an earlier request's second reply: this one is made again, on a fresh worker
            if self.current_exercise in self.tampered_exercises:
                raise Tampered(self.tampered_exercises[self.current_exercise])
            self._ensure_imported(module)

        body, reply_blobs = self._request_retrying(module, request, blobs, f"{function}", again)
        outcome = body.get("outcome")
        if outcome in (Outcome.IMPORT_ERROR, Outcome.MISSING):
            raise CodeUnavailable(_unavailable_message(module, body))
        if outcome not in (Outcome.RETURNED, Outcome.RAISED):
            raise self._garbage(module, "an unknown outcome")
        outcome = Outcome(outcome)
        try:
            value = wire.decode(body.get("value"), reply_blobs) if outcome == Outcome.RETURNED else None
            after = wire.decode(body.get("args_after", []), reply_blobs)
            exception = body.get("exception") if outcome == Outcome.RAISED else None
            if exception is not None and not (type(exception) is dict
                                               and all(type(exception.get(k)) is str for k in ("type", "message"))):
                raise wire.WireError("bad exception record")
        except wire.WireError as exc:
            raise self._garbage(module, str(exc)) from None
        api_calls = body.get("api_calls")
        if type(api_calls) is not dict or not all(type(k) is str and type(v) is int for k, v in api_calls.items()):
            api_calls = {}
        versions_before = body.get("versions_before")
        printed = body.get("printed") if self.capture and type(body.get("printed")) is str else ""
        if printed:
            self.printed.append(printed)
        return CallResult(
            function=function, args=args, outcome=outcome, value=value, exception=exception,
            args_after=after if type(after) is list else [],
            versions_before=versions_before if type(versions_before) is list else [],
            elapsed=float(body["elapsed"]) if type(body.get("elapsed")) is float else 0.0,
            device=self.device, api_calls=api_calls, printed=printed,
        )

    # -- worker lifecycle ------------------------------------------------------------------
    def _slot(self, module: str) -> str:
        return module if self.device == "cpu" and self.limits.worker_per_module else "all"

    def _ensure_worker(self, module: str):
        slot = self._slot(module)
        if slot not in self.workers:
            if self._time_left(setup=True) <= 0:
                raise CallTimeout("no time left in this submission's time budget / 本次提交的时间预算已用完")
            ready = self._take_spare() if slot == "all" else None
            if ready is not None:
                worker = self.workers[slot] = ready[0]
                self.watches[slot] = ready[1]  # its baseline read when it started, before any request
            else:
                try:
                    worker = self.workers[slot] = self.launcher.spawn()
                except (OSError, RuntimeError) as exc:
                    raise WorkerFault(f"could not start a worker: {exc} / 无法启动工作进程：{exc}") from None
                if self.device == "cpu":
                    self.watches[slot] = MemoryWatch(worker, self.limits.memory_mb)
            self.workers_started += 1
            self.imported -= {m for m in self.imported if self._slot(m) == slot}
            blobs = list(self.files.values())
            load: LoadRequest = {"op": Op.LOAD, "modules": list(dict.fromkeys(self.modules.values())),
                    "files": {name: i for i, name in enumerate(self.files)},
                    "device": self.device, "seed": self.seed,
                    "gpu_memory_fraction": self.limits.gpu_memory_fraction}
            try:
                self._request(module, load, blobs, what="loading the submission", setup=True)
            except BaseException:
                self._discard_worker(module)  # never leave a worker that did not get the submission
                raise
        return self.workers[slot]

    def _ensure_imported(self, module: str) -> None:
        self._ensure_worker(module)
        if module in self.imported:
            return
        full_timeout = self._time_left(setup=True) >= self.limits.call_timeout_s
        request: ImportRequest = {"op": Op.IMPORT, "module": module}
        try:
            body, _ = self._request_retrying(module, request, [], f"importing {module}.py",
                                             lambda: self._ensure_worker(module), setup=True)
        except CallTimeout:
            if not full_timeout:  # the submission's budget ran out, not the import's own time
                raise
            raise CodeUnavailable(self._settle(module, Fate.UNAVAILABLE,
                                               f"importing {module}.py did not finish in time (an infinite loop at "
                                               f"import?) / 导入 {module}.py 超时（导入时有死循环？）")) from None
        except Tampered as exc:
            raise Tampered(self._settle(module, Fate.TAMPERED, f"importing {module}.py: {exc}")) from None
        except WorkerFault as exc:
            raise CodeUnavailable(self._settle(module, Fate.UNAVAILABLE, f"importing {module}.py killed the worker / "
                                                                         f"导入 {module}.py 时工作进程终止: {exc}")) from None
        if body.get("outcome") != Outcome.IMPORTED:
            # An import that raised is cached by the worker; it costs this module's exercises only.
            raise CodeUnavailable(self._settle(module, Fate.IMPORT_ERROR, _unavailable_message(module, body)))
        self.imported.add(module)

    def _request_retrying(self, module: str, body: Request, blobs: list[bytes], what: str, again,
                          setup: bool = False):
        """`_request`, made once more where the reply read was an earlier request's second (`SecondReply`:
        that worker is gone): `again()` readies the fresh worker first (its load, and a call's import)."""
        try:
            return self._request(module, body, blobs, what=what, setup=setup)
        except SecondReply:
            again()
            return self._request(module, body, blobs, what=what, setup=setup)

    def _time_left(self, setup: bool = False) -> float:
        """Seconds the next request may take (`Budget.left`)."""
        return self.budget.left(self.current_exercise, setup)

    def _request(self, module: str, body: Request, blobs: list[bytes], what: str, setup: bool = False):
        """One request's reply (body, blobs): from the pipeline when it sent this very request ahead,
        else sent now, after the replies already on their way are read."""
        if self.pipeline is not None:
            reply = self._from_pipeline(body, blobs)
            if reply is not None:
                return reply
            self._drain()
        worker = self.workers[self._slot(module)]
        timeout = self._time_left(setup)
        if timeout <= 0:
            raise CallTimeout(f"{what}: no time left in this exercise's or this submission's time budget / "
                              f"{_zh_what(what)}：本题或本次提交的时间预算已用完")
        self.requests += 1
        request_id = self.requests
        start = time.monotonic()
        try:
            send_message(worker.conn.fileno(), wire.pack({**body, "id": request_id}, blobs), start + timeout)
        except DeadlinePassed:
            self.budget.charge(self.current_exercise, time.monotonic() - start, setup)
            self._discard_worker(module)
            raise CallTimeout(f"{what} did not return within {timeout:.1f} s") from None
        except OSError as exc:
            self.budget.charge(self.current_exercise, time.monotonic() - start, setup)
            status = worker.end_status()
            self._discard_worker(module)
            raise WorkerFault(f"the worker process ended while {what} ({_describe_end(status, exc)})") from None
        return self._receive(module, request_id, what, start, timeout, setup, self.current_exercise)

    def _receive(self, module: str, request_id: int, what: str, start: float, timeout: float, setup: bool,
                 exercise: str | None, charge_tamper: bool = True):
        """Read and check the reply to request `request_id` (sent at or before `start`), waiting at
        most `timeout` seconds from `start`; the wait is charged to `exercise` (or the submission)."""
        worker = self.workers[self._slot(module)]
        deadline = start + timeout
        try:
            reply = recv_message(worker.conn.fileno(), deadline, wire.MAX_MESSAGE_BYTES,
                                 on_wait=self.watches.get(self._slot(module)))
        except DeadlinePassed:
            self._discard_worker(module)
            raise CallTimeout(f"{what} did not return within {timeout:.1f} s (an infinite loop?) / "
                              f"{_zh_what(what)} 没有在 {timeout:.1f} 秒内返回（死循环？）") from None
        except MemoryLimitExceeded as exc:
            self._discard_worker(module)
            raise WorkerFault(f"{what}: the worker and the processes it started used {exc.used_mb:.0f} MB more "
                              f"memory than at its start, together; {self.limits.memory_mb} MB are allowed; killed / "
                              f"{_zh_what(what)}：工作进程及其启动的进程共比启动时多用了 {exc.used_mb:.0f} MB 内存，"
                              f"上限为 {self.limits.memory_mb} MB，已终止") from None
        except MessageTooLarge as exc:
            self._discard_worker(module)
            raise WorkerFault(f"the reply to {what} was too large ({exc.size / 2**20:.0f} MiB; at most "
                              f"{wire.MAX_MESSAGE_BYTES // 2**20} MiB) / {_zh_what(what)} 的返回结果过大"
                              f"（{exc.size / 2**20:.0f} MiB，上限 {wire.MAX_MESSAGE_BYTES // 2**20} MiB）") from None
        except (EOFError, OSError) as exc:
            status = worker.end_status()
            self._discard_worker(module)
            end, end_zh = _describe_end(status, exc)
            raise WorkerFault(f"the worker process ended while {what} ({end}) / 运行 {_zh_what(what)} 时工作进程终止"
                              f"（{end_zh}）") from None
        finally:
            self.budget.charge(exercise, time.monotonic() - start, setup)
        try:
            reply_body, reply_blobs = wire.unpack(reply)
        except wire.WireError as exc:
            raise self._garbage(module, str(exc)) from None
        if type(reply_body) is not dict:
            raise self._garbage(module, "the reply is not a JSON object")
        if reply_body.get("id") != request_id:
            if self._second_reply(reply_body.get("id")):
                self._discard_worker(module)
                raise SecondReply(second_reply_message())
            raise self._garbage(module, "an answer to another request")
        self.answered[request_id] = (None if setup else exercise, module)
        if reply_body.get("outcome") == Outcome.TAMPERED:
            self._discard_worker(module)  # the next call gets a fresh worker, with torch as it was
            message = tampered_message(reply_body.get("kind"), reply_body.get("detail"))
            if charge_tamper and not setup and exercise is not None:
                self.tampered_exercises[exercise] = message
            raise Tampered(message)
        return reply_body, reply_blobs

    def _second_reply(self, request_id: object) -> bool:
        """Whether `request_id` had its answer already; if so, what that answer went to scores 0 (the exercise,
        or every exercise of the module whose import it answered)."""
        if type(request_id) is not int or request_id not in self.answered:
            return False
        exercise, module = self.answered[request_id]
        charged = [exercise] if exercise is not None else [e for e, m in self.modules.items() if m == module]
        for name in charged:
            self.tampered_exercises.setdefault(name, second_reply_message())
        return True

    def _confirm_replies(self, slot: str, seconds: float = 1.0) -> None:
        """Before a live worker ends: a ping, and every frame before its answer read. A second reply to an
        answered request (written by a step that then returned or raised) is found here when no later request
        read it. Not charged to any budget; a worker that does not answer within `seconds` is left to end."""
        worker = self.workers.get(slot)
        if worker is None:
            return
        self.requests += 1
        ping_id, deadline = self.requests, time.monotonic() + seconds
        try:
            send_message(worker.conn.fileno(), wire.pack({"op": Op.PING, "id": ping_id}, []), deadline)
            while True:
                body, _ = wire.unpack(recv_message(worker.conn.fileno(), deadline, wire.MAX_MESSAGE_BYTES))
                frame_id = body.get("id") if type(body) is dict else None
                if frame_id == ping_id:
                    return
                if not self._second_reply(frame_id) and frame_id not in self._unread_ids():
                    return  # neither a second reply nor one nobody read: nothing more to learn from this worker
        except (DeadlinePassed, MessageTooLarge, EOFError, OSError, wire.WireError):
            return

    def _unread_ids(self) -> set[int]:
        """Ids of requests sent ahead whose replies nobody has read (their frames come before the ping's)."""
        pipeline = self.pipeline
        return {e.request_id for e in pipeline.entries if e.state == "sent"} if pipeline is not None else set()

    # -- requests sent ahead (grader.host.pipeline) ----------------------------------------
    def plan_ahead(self, calls: list[PlannedCall], barrier_tests: set[str]) -> None:
        """Send the tests' first calls (and the imports before them) ahead, as far as the plan allows."""
        self.pipeline = Pipeline.plan(calls, barrier_tests, self.imported)
        self._pump()

    def _from_pipeline(self, body: Request, blobs: list[bytes]):
        pipeline = self.pipeline
        index = pipeline.find(body, blobs)
        if index is None:
            return None
        pipeline.reached(index)
        entry = pipeline.entries[index]
        while entry.state in ("planned", "sent"):
            if pipeline.in_flight():
                self._read_next()
            elif not self._pump():
                break
        if entry.state != "read":
            return None  # dropped: made on the spot
        entry.state = "used"
        self._pump()  # the worker works on the next ones while this test judges this one
        if isinstance(entry.error, Tampered) and not entry.setup and self.current_exercise is not None:
            self.tampered_exercises[self.current_exercise] = str(entry.error)
        if entry.error is not None:
            raise entry.error
        return entry.reply

    def _pump(self) -> bool:
        """Send what the plan allows now; False when nothing could be sent."""
        pipeline, sent = self.pipeline, False
        while pipeline is not None and (entry := pipeline.sendable()) is not None:
            if entry.state == "dropped":
                pipeline.next_send += 1
                continue
            try:
                worker = self._ensure_worker(entry.module)  # a fresh worker is loaded on the spot
            except (CallTimeout, WorkerFault):
                pipeline.stop()
                return sent
            self.requests += 1
            entry.request_id = self.requests
            data = packed(entry.body, entry.request_id, entry.blobs)
            entry.size = len(data)
            try:
                send_message(worker.conn.fileno(), data, time.monotonic() + self.limits.call_timeout_s)
            except (DeadlinePassed, OSError):
                self._discard_worker(entry.module)  # stops the pipeline
                return sent
            entry.state, entry.sent_at = "sent", time.monotonic()
            pipeline.next_send += 1
            sent = True
        return sent

    def _read_next(self) -> None:
        """Read the reply to the oldest request in flight; a failure is kept for the test that asks."""
        pipeline = self.pipeline
        while pipeline.entries[pipeline.next_read].state != "sent":
            pipeline.next_read += 1
        entry: Entry = pipeline.entries[pipeline.next_read]
        entry.state, pipeline.next_read = "read", pipeline.next_read + 1
        timeout = self.budget.left(entry.exercise, entry.setup)
        try:
            if timeout <= 0:
                self._discard_worker(entry.module)  # it is running a request there is no time left for
                raise CallTimeout(f"{entry.what}: no time left in this exercise's or this submission's time budget")
            entry.reply = self._receive(entry.module, entry.request_id, entry.what, time.monotonic(), timeout,
                                        entry.setup, entry.exercise, charge_tamper=False)
        except (CallTimeout, WorkerFault) as exc:  # (a SecondReply too: its test makes the request again)
            entry.error = exc

    def _drain(self) -> None:
        """Read every reply on its way, so that the next reply on the socket is the next request's."""
        while self.pipeline is not None and self.pipeline.in_flight():
            self._read_next()

    def _garbage(self, module: str, why: str) -> WorkerFault:
        self._discard_worker(module)
        return WorkerFault(f"the worker sent a malformed reply ({why}) / 工作进程发回了格式错误的回复（{why}）")

    def _discard_worker(self, module: str, grace: float = 0.0, wait: bool = True, keep_output: bool = True) -> None:
        """End the module's worker. `wait` false: it is killed now and reaped by `close` (its peak memory and,
        with `keep_output`, what it printed are counted then), so that nothing waits here for its end."""
        slot = self._slot(module)
        worker = self.workers.pop(slot, None)
        watch = self.watches.pop(slot, None)
        self.imported -= {m for m in self.imported if self._slot(m) == slot}
        if self.pipeline is not None:
            self.pipeline.stop()  # what was sent to it is lost; from now on every request is made on the spot
        if worker is None:
            return
        if not wait and grace == 0.0 and self.workers_apart():
            worker.kill()
            self.ending.append((slot, worker, watch, keep_output))
            return
        self._reaped(slot, worker, watch, keep_output, grace)

    def _reaped(self, slot: str, worker: WorkerHandle, watch: MemoryWatch | None, keep_output: bool,
                grace: float = 0.0) -> None:
        worker.close(grace)
        # from wait4, now that the worker has ended; and what the watch saw of its processes together
        for peak in (worker.peak_memory_mb(), watch.peak_mb if watch is not None else None):
            if peak is not None:
                self.peak_memory_mb = max(self.peak_memory_mb or 0.0, peak)
        text = worker.output.text()
        if text and keep_output:
            label = "all modules" if slot == "all" else f"{slot}.py"
            self.output.append(f"--- {label} ---\n{text}" + ("" if text.endswith("\n") else "\n"))

    def spare_ahead(self) -> None:
        """Start, in a thread of its own, the worker that this submission's next worker start takes (the
        counterexample search's, once grading has found an input to search for): forked, sandboxed and
        sealed by the zygote, and its memory watch's baseline read, while grading goes on. It gets no request
        before it is taken, so it never held a hidden input; it is this submission's only (`close` ends it if
        untaken); its limits are every worker's. Once a submission, and only where `spares_allowed` (the
        engine's spare, while untaken, is the next start already)."""
        if (self.spared_ahead or (self.spare is not None and not self.spare[1].get("taken"))
                or not spares_allowed(self.launcher, self.limits, self.device)):
            return
        self.spared_ahead = True
        self.spare = start_spare(self.launcher, self.limits.memory_mb)

    def _take_spare(self) -> tuple[WorkerHandle, MemoryWatch] | None:
        """The spare worker for a start (`spares_taken` counts it): None when there is none or it failed."""
        ready = self._join_spare()
        if ready is not None:
            self.spares_taken += 1
        return ready

    def _join_spare(self) -> tuple[WorkerHandle, MemoryWatch] | None:
        """The spare worker once its start has finished, at most once: None when there is none, it was had
        already, or its start failed (a worker it started then is closed)."""
        if self.spare is None or self.spare[1].get("taken"):
            return None
        thread, started = self.spare
        thread.join()
        started["taken"] = True
        if "error" in started:
            if "worker" in started:
                started["worker"].close()
            return None
        return started["worker"], started["watch"]

    def workers_apart(self) -> bool:
        """Two of this submission's workers alive at once share nothing: each has its PID, mount (its own
        /tmp), network and IPC namespaces (the namespace sandboxes). In the process sandbox they would share
        the grader's user id and file system, so a worker that saw hidden inputs is gone before the next starts."""
        return self.launcher.plan.mode in NAMESPACE_MODES

    def end_workers(self, keep_output: bool = True) -> None:
        """End every worker now: the next call starts a fresh one, which holds nothing of the calls before
        (a counterexample search runs where no hidden test's inputs ever were). Each is killed at once and
        reaped by `close`, its clean-up overlapping what comes next (where `workers_apart`; else it is reaped
        here); without `keep_output` what it printed is dropped (a search's workers: no part of the grading's
        output). Before it ends, a ping reads every frame it sent (`_confirm_replies`)."""
        for slot in list(self.workers):
            self._confirm_replies(slot)
            self._discard_worker(next((m for m in self.modules.values() if self._slot(m) == slot), slot),
                                 wait=False, keep_output=keep_output)

    def close(self) -> None:
        """End the workers and reap every one ended before: when this returns, each is gone, with whatever it
        started (the score file is written after), and its peak memory and output are counted."""
        untaken = self._join_spare()  # a spare no start took: it ran nothing, so it counts for nothing
        if untaken is not None:
            untaken[0].close()
        ending, self.ending = self.ending, []
        for entry in ending:  # killed earlier: in the order they ended, so their output keeps its order
            self._reaped(*entry)
        for slot in list(self.workers):
            self._confirm_replies(slot)
        if self.pipeline is not None and self.pipeline.in_flight():
            self.pipeline.stop()  # requests no test asked for: the worker is killed, not asked to finish them
            for module in list(self.workers):
                self._discard_worker(module)
        for worker in self.workers.values():
            try:
                send_message(worker.conn.fileno(), wire.pack({"op": Op.EXIT}, []), time.monotonic() + 0.5)
            except (OSError, DeadlinePassed):
                pass
        for module in list(self.workers):
            self._discard_worker(module, grace=0.5)

    def captured_output(self) -> str:
        """What the workers printed, at most the output limit in all."""
        text, cap = "".join(self.output), self.limits.output_kb * 1024
        if len(text) > cap:
            text = text[:cap] + f"\n[... {len(text) - cap} more characters of output dropped]\n"
        return text


Spare = tuple[threading.Thread, dict]  # a worker being started ahead: its thread, and what it started


def spares_allowed(launcher: WorkerLauncher, limits: Limits, device: str) -> bool:
    """Whether a worker may be started ahead of its use: where two workers alive at once share nothing (the
    namespace sandboxes: `StudentCode.workers_apart`), on the CPU, with one worker for all modules (a GPU
    worker holds a CUDA context and a share of the device's memory)."""
    return device == "cpu" and not limits.worker_per_module and launcher.plan.mode in NAMESPACE_MODES


def start_spare(launcher: WorkerLauncher, limit_mb: int) -> Spare:
    """A worker forked, sandboxed and sealed by the zygote in a thread of its own, and its memory watch's
    baseline read; it gets no request until a worker start takes it (`StudentCode._take_spare`)."""
    started: dict = {}

    def start() -> None:
        try:
            started["worker"] = launcher.spawn()
            started["watch"] = MemoryWatch(started["worker"], limit_mb)
        except Exception as exc:  # noqa: BLE001  (the start then happens on the spot, as without a spare)
            started["error"] = exc

    thread = threading.Thread(target=start, name="spare-worker", daemon=True)
    thread.start()
    return thread, started


def close_spare(spare: Spare | None) -> None:
    """End a spare no start took (it ran nothing): wait for its start, then close what it started."""
    if spare is None or spare[1].get("taken"):
        return
    thread, started = spare
    thread.join()
    started["taken"] = True
    if "worker" in started:
        started["worker"].close()


def _unavailable_message(module: str, body: dict) -> str:
    exc = body.get("exception") if type(body.get("exception")) is dict else {}
    kind, message = str(exc.get("type", "Error"))[:100], str(exc.get("message", ""))[:500]
    if body.get("outcome") == Outcome.MISSING:
        return _missing_message(module, message)
    return f"{module}.py could not be imported: {kind}: {message} / 无法导入 {module}.py"


def _zh_what(what: str) -> str:
    """A request's `what` in Chinese: a function's name stays itself."""
    if what == "loading the submission":
        return "载入提交"
    if what.startswith("importing "):
        return "导入 " + what.removeprefix("importing ")
    return what


def _missing_message(module: str, message: str) -> str:
    """The worker's sentence for what is missing, in both languages."""
    import re

    defines = re.fullmatch(r"(\w+)\.py defines no (\w+)", message)
    if defines:
        return f"{message} / {defines[1]}.py 中没有定义 {defines[2]}"
    if re.fullmatch(r"the submission has no \w+\.py", message):
        return f"{message} / 提交中没有 {message.rsplit(' ', 1)[1]}"
    return f"{message or f'missing in {module}.py'} / {module}.py 中缺少所需的代码"


def _describe_end(status: str, exc: BaseException) -> tuple[str, str]:
    """How the worker ended, (in English, in Chinese)."""
    import signal as _signal

    if status.startswith("signal "):
        number = int(status.split()[1])
        try:
            name = _signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        hints = {"SIGSEGV": ("a crash in native code", "原生代码崩溃"),
                 "SIGKILL": ("killed: by the code itself (a kill of its own process or group), or by the system when "
                             "memory ran out", "被终止：代码自己终止了自身进程或进程组，或内存耗尽时被系统终止"),
                 "SIGXCPU": ("CPU time limit", "超出 CPU 时间限制"), "SIGXFSZ": ("file size limit", "超出文件大小限制")}
        en, zh = hints.get(name, ("", ""))
        return f"killed by {name}" + (f": {en}" if en else ""), f"被 {name} 终止" + (f"：{zh}" if zh else "")
    if status.startswith("exit "):
        code = status.split()[1]
        return (f"it exited with status {code}: os._exit or a fatal error in the student's code",
                f"以状态 {code} 退出：学生代码调用了 os._exit，或发生了致命错误")
    return type(exc).__name__, type(exc).__name__
