"""The in-process floor: the same pytest run over the same cases, with no isolation at all.

For measurements only, never for grading: the submission's code is imported into this very
process. `InProcessEngine.grade(path)` differs from `grader.runner.Engine.grade` in one thing,
the `submission` fixture's transport: requests go straight to a `grader.worker.Worker` object
here instead of a sandboxed process, so the difference between the two is the cost of isolation
(fork, namespaces, limits, the socket round trips).
"""

from __future__ import annotations

import sys
import tempfile

from grader import worker as worker_module
from grader.proxy import StudentCode
from grader.runner import Engine, Options


class _Transport:
    def __init__(self):
        self.workdir = tempfile.mkdtemp(prefix="autograd-lab-inprocess-")
        self.worker = worker_module.Worker(None, self.workdir)
        self.reply = None

    def send_bytes(self, message: bytes) -> None:
        self.reply = self.worker.handle(message)

    def poll(self, timeout: float) -> bool:
        return True

    def recv_bytes(self, maxlength: int | None = None) -> bytes:
        return self.reply


class _InProcessWorker:
    def __init__(self):
        self.conn = _Transport()
        self.output = type("Output", (), {"text": staticmethod(lambda: "")})()

    def peak_memory_mb(self):
        return None

    def close(self):
        sys.path[:] = [p for p in sys.path if p != self.conn.workdir]
        for name in worker_module.MODULES:
            sys.modules.pop(name, None)


class _InProcessLauncher:
    def __init__(self, plan):
        self.plan = plan

    def spawn(self):
        return _InProcessWorker()

    def close(self):
        pass


class InProcessEngine(Engine):
    def __init__(self, options: Options):
        super().__init__(options)
        self.real_launcher = self.launcher
        self.launcher = _InProcessLauncher(self.real_launcher.plan)
        worker_module.prepare_process()

    def close(self) -> None:
        self.real_launcher.close()


__all__ = ["InProcessEngine", "StudentCode"]
