"""A second frame for one request is a forgery's trace (issue 29): the submission's code wrote a reply of its own
on the worker's connection, and the worker's honest reply followed it. `StudentCode` finds it while reading the
next reply, or by the ping it sends before a worker ends; the exercise the first reply went to scores 0, and the
innocent request that read the stale frame is made again on a fresh worker.

These tests drive `StudentCode` against a scripted worker on a socket pair (a thread speaking the wire
protocol), so that each order of frames is exact; tests/test_hostile.py grades the real submission
(`forged_reply_frame`) in the real sandbox.
"""

from __future__ import annotations

import socket
import threading
import time

from grader.host.channel import recv_message, send_message
from grader.host.student_code import StudentCode, second_reply_message
from grader.protocol import wire
from grader.protocol.limits import Limits


class _Output:
    def text(self) -> str:
        return ""


class ScriptedWorker:
    """A worker that answers every request honestly (a call to `f` returns 1, to `g` 2), and, where `forge` names
    a function, answers that call twice: first with a forged value, then with the honest one."""

    def __init__(self, forge: str | None):
        self.conn, self._peer = socket.socketpair()
        self.conn.setblocking(False)
        self.output = _Output()
        self.pings = 0
        self._forge = forge
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        # The thread owns its end: it alone closes it (an end closed from outside frees its descriptor's number,
        # which the next worker's socket pair may take while this thread still reads that number).
        with self._peer:
            try:
                self._answer(self._peer.fileno())
            except OSError:  # the trusted side closed its end: this worker is over
                pass

    def _answer(self, fd: int) -> None:
        while True:
            try:
                body, _ = wire.unpack(recv_message(fd, time.monotonic() + 30, wire.MAX_MESSAGE_BYTES))
            except (EOFError, OSError, wire.WireError):
                return
            op, rid = body.get("op"), body.get("id")
            if op == "exit":
                return
            if op == "ping":
                self.pings += 1
                reply = {"ok": True, "pid": 0}
            elif op == "load":
                reply = {"ok": True, "device": "cpu"}
            elif op == "import":
                reply = {"outcome": "imported"}
            else:
                name = body["target"].partition(".")[2]
                honest = {"outcome": "returned", "value": {"f": 1, "g": 2}[name], "args_after": [],
                          "versions_before": [], "elapsed": 0.0, "api_calls": {}}
                if name == self._forge:
                    self._send(fd, {**honest, "value": 100, "id": rid})  # the submission's own frame, first
                reply = honest
            self._send(fd, {**reply, "id": rid})

    @staticmethod
    def _send(fd: int, body: dict) -> None:
        send_message(fd, wire.pack(body, []), time.monotonic() + 5)

    def tree_memory_kb(self, precise: bool = False):
        return None

    def end_status(self, timeout: float = 1.0) -> str:
        return "exit 0"

    def peak_memory_mb(self):
        return None

    def kill(self) -> None:
        self.conn.close()  # the thread sees the end of its stream and closes its own end

    def close(self, grace: float = 0.0) -> None:
        self.kill()


class ScriptedLauncher:
    plan = None

    def __init__(self, forge: str | None):
        self.forge = forge
        self.spawned: list[ScriptedWorker] = []

    def spawn(self) -> ScriptedWorker:
        # only the first worker forges: the fresh one a retried request goes to is honest
        worker = ScriptedWorker(self.forge if not self.spawned else None)
        self.spawned.append(worker)
        return worker

    def close(self) -> None:
        pass


def _student(forge: str | None) -> tuple[StudentCode, ScriptedLauncher]:
    launcher = ScriptedLauncher(forge)
    student = StudentCode({"m.py": b""}, launcher, {"f": "m", "g": "m"}, Limits(call_timeout_s=5))
    return student, launcher


def _call(student: StudentCode, name: str):
    with student.working_on(name):
        return student.call(name).value


def test_the_next_request_reads_the_second_reply():
    student, launcher = _student(forge="f")
    assert _call(student, "f") == 100  # the forged frame came first: nothing can tell, yet
    assert _call(student, "g") == 2  # it read f's honest reply, so it was made again, on a fresh worker
    assert student.tampered_exercises == {"f": second_reply_message()}
    assert len(launcher.spawned) == 2
    student.close()
    assert student.tampered_exercises == {"f": second_reply_message()}


def test_the_closing_ping_reads_the_second_reply():
    student, launcher = _student(forge="f")
    assert _call(student, "g") == 2
    assert _call(student, "f") == 100  # the last call: no later request reads what follows it
    assert student.tampered_exercises == {}
    student.close()
    assert student.tampered_exercises == {"f": second_reply_message()}
    assert len(launcher.spawned) == 1


def test_an_honest_worker_is_pinged_once_and_nothing_is_charged():
    student, launcher = _student(forge=None)
    assert [_call(student, "f"), _call(student, "g"), _call(student, "f")] == [1, 2, 1]
    student.close()
    assert student.tampered_exercises == {}
    assert launcher.spawned[0].pings == 1 and len(launcher.spawned) == 1


def test_the_message_is_bilingual():
    message = second_reply_message()
    assert message.startswith("tampered:") and "篡改" in message
