"""The in-process floor: the same pytest run over the same cases, with no isolation at all.

For measurements only, never for grading: the submission's code runs in a thread of this very
process. `InProcessEngine.grade(path)` differs from `grader.host.runner.Engine.grade` in one thing,
what stands behind the `student` fixture's socket: a `grader.sandboxed.worker.Worker` serving requests
in a thread here (no fork, no namespaces, no limits, no seal) instead of a sandboxed process.
The difference between the two is the cost of isolation. `_InProcessWorker` and
`_InProcessLauncher` have the shapes of `grader.host.channel.WorkerHandle` and `WorkerLauncher`,
as the zygote's do (`tests/test_channel.py` checks both).
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
import threading
from multiprocessing.connection import Connection

from grader.host.channel import WorkerHandle, WorkerLauncher
from grader.host.runner import Engine, Options
from grader.protocol.limits import SandboxPlan
from grader.sandboxed import worker as worker_module


class _Output:
    @staticmethod
    def text() -> str:
        return ""


class _InProcessWorker:
    """A `WorkerHandle` like grader.host.launcher.WorkerProcess to the trusted side; serves from a thread."""

    def __init__(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        ours.setblocking(False)
        self.conn = Connection(ours.detach())
        self.workdir = tempfile.mkdtemp(prefix="autograd-lab-inprocess-")
        self.cwd = os.getcwd()  # the worker imports from its workdir (os.chdir): this process's is put back
        self.worker = worker_module.Worker(None, self.workdir)
        # Every thread here is the bench's own (the grading session, other workers' threads), none a
        # submission's: the reply is built in this thread, never in a forked copy of the process.
        self.worker.threads_at_start = 1 << 30
        self.output = _Output()
        self.thread = threading.Thread(target=self._serve, args=(Connection(theirs.detach()),), daemon=True)
        self.thread.start()

    def _serve(self, conn: Connection) -> None:
        while True:
            try:
                reply = self.worker.handle(conn.recv_bytes())
            except (EOFError, OSError):
                return
            if reply is None:
                return
            worker_module._send(conn.fileno(), reply)  # already framed like Connection.send_bytes

    def tree_memory_kb(self, precise: bool = False) -> int | None:
        return None

    def end_status(self, timeout: float = 1.0) -> str:
        return "unknown"

    def peak_memory_mb(self) -> float | None:
        return None

    def kill(self) -> None:
        self.conn.close()  # the serving thread sees the end of its stream

    def close(self, grace: float = 0.0) -> None:
        self.conn.close()
        self.thread.join(timeout=5)
        sys.path[:] = [p for p in sys.path if p != self.workdir]
        os.chdir(self.cwd)
        for name in self.worker.module_names:
            sys.modules.pop(name, None)
        shutil.rmtree(self.workdir, ignore_errors=True)


class _InProcessLauncher:
    """A `WorkerLauncher` whose workers are threads of this process."""

    def __init__(self, plan: SandboxPlan):
        self.plan = plan

    def spawn(self) -> WorkerHandle:
        return _InProcessWorker()

    def close(self) -> None:
        pass



class InProcessEngine(Engine):
    def __init__(self, options: Options):
        super().__init__(options)
        self.real_launcher = self.launcher
        self.launcher: WorkerLauncher = _InProcessLauncher(self.real_launcher.plan)
        worker_module.prepare_process([str(p) for p in self.catalog.helpers])

    def close(self) -> None:
        self.launcher = self.real_launcher
        super().close()
