"""The trusted end of a worker's socket: what a worker handle and a launcher offer, one framed
message out or in with a deadline and a size limit, and the memory watch while a worker works.

`WorkerHandle` and `WorkerLauncher` are the two shapes the trusted side relies on: the zygote's
(`grader.host.launcher.WorkerProcess`, `Launcher`, `SpawnLauncher`) and the in-process floor's
(`bench/inprocess.py`) have them; `tests/test_channel.py` checks all of them against these.

The framing is multiprocessing.Connection's (a 4-byte big-endian length, or -1 and 8 bytes), which
the worker's `Connection` reads and writes. The trusted end is non-blocking and every read and
write has a deadline, so a worker that stops reading or sends half a message costs at most the
time left; `recv_message` calls `on_wait` about every `WATCH_INTERVAL_S` while it waits: a
`MemoryWatch`, which bounds a worker and every process it started together.
"""

from __future__ import annotations

import os
import select
import struct
import time
from typing import Protocol, runtime_checkable

from grader.protocol import wire
from grader.protocol.limits import SandboxPlan


@runtime_checkable
class WorkerConnection(Protocol):
    """The trusted end of a worker's socket (non-blocking; read and written with deadlines here)."""

    def fileno(self) -> int: ...

    def close(self) -> None: ...


@runtime_checkable
class WorkerOutput(Protocol):
    """What a worker printed, as collected on the trusted side."""

    def text(self) -> str: ...


@runtime_checkable
class WorkerHandle(Protocol):
    """One running worker, seen from the trusted side (`StudentCode` holds one per slot)."""

    conn: WorkerConnection
    output: WorkerOutput

    def tree_memory_kb(self, precise: bool = False) -> int | None:
        """The memory of the worker and every process it started, in KiB; None if unknown."""

    def end_status(self, timeout: float = 1.0) -> str:
        """How it ended: 'exit N', 'signal N' or 'unknown'."""

    def peak_memory_mb(self) -> float | None:
        """Its peak resident memory, if known."""

    def kill(self) -> None:
        """End it now, without waiting for its clean-up (`close` waits for it afterwards)."""

    def close(self, grace: float = 0.0) -> None:
        """End it (after `grace` seconds for it to exit by itself) and wait for its clean-up."""


@runtime_checkable
class WorkerLauncher(Protocol):
    """Starts workers for one engine: a fresh one per `spawn()`; `plan` says how they are isolated."""

    plan: SandboxPlan

    def spawn(self) -> WorkerHandle: ...

    def close(self) -> None: ...


class DeadlinePassed(Exception):
    """The worker did not finish sending (or reading) a message in time."""


class MemoryLimitExceeded(Exception):
    def __init__(self, used_mb: float):
        super().__init__(used_mb)
        self.used_mb = used_mb


class MessageTooLarge(Exception):
    def __init__(self, size: int):
        super().__init__(size)
        self.size = size


def send_message(fd: int, payload: bytes, deadline: float) -> None:
    """Write one message in multiprocessing.Connection's framing, giving up at `deadline`.

    The trusted end of the socket is non-blocking: a worker that stops reading cannot hang us."""
    n = len(payload)
    header = struct.pack("!i", n) if n <= 0x7FFFFFFF else struct.pack("!i", -1) + struct.pack("!Q", n)
    for part in (header, payload):
        view = memoryview(part)
        while view:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([], [fd], [], left)[1]:
                raise DeadlinePassed
            try:
                view = view[os.write(fd, view[: 1 << 20]):]
            except BlockingIOError:
                pass


WATCH_INTERVAL_S = 0.05


class MemoryWatch:
    """The memory limit of one worker and every process it started, together (CPU only): called
    about every `WATCH_INTERVAL_S` while the worker works, it raises `MemoryLimitExceeded` once they
    use more than `limit_mb` above the worker's start. RLIMIT_AS bounds each process by itself.

    The cheap measure is an upper bound; only when it passes the limit is the precise one taken,
    and never for more than a fifth of the time (many processes make it slow)."""

    def __init__(self, worker: WorkerHandle, limit_mb: int):
        self.worker = worker
        self.limit_mb = limit_mb
        self.baseline_kb = worker.tree_memory_kb(precise=True)
        self.peak_mb: float | None = None  # the most the precise measure saw
        self._precise_not_before = 0.0

    def __call__(self) -> None:
        if self.baseline_kb is None:
            self.baseline_kb = self.worker.tree_memory_kb(precise=True)
            if self.baseline_kb is None:
                return
        limit = self.baseline_kb + self.limit_mb * 1024
        cheap = self.worker.tree_memory_kb()
        if cheap is None or cheap <= limit:
            return
        now = time.monotonic()
        if now < self._precise_not_before:
            return
        used = self.worker.tree_memory_kb(precise=True) or 0
        self._precise_not_before = now + 4 * (time.monotonic() - now)
        self.peak_mb = max(self.peak_mb or 0.0, used / 1024)
        if used > limit:
            raise MemoryLimitExceeded((used - self.baseline_kb) / 1024)


def recv_message(fd: int, deadline: float, max_size: int, on_wait=None) -> bytes:
    """Read one whole message, or raise DeadlinePassed: a worker that sends half a message and
    stops (or trickles bytes) costs at most the time left, never a hung grading run."""
    (n,) = struct.unpack("!i", _recv_exact(fd, 4, deadline, on_wait))
    if n == -1:
        (n,) = struct.unpack("!Q", _recv_exact(fd, 8, deadline, on_wait))
    if n < 0 or n > max_size:
        raise MessageTooLarge(n)
    if n < 4:
        return _recv_exact(fd, n, deadline, on_wait)
    # A grader.protocol.wire message starts with its JSON header's length: refuse a huge header unread.
    prefix = _recv_exact(fd, 4, deadline, on_wait)
    if struct.unpack(">I", prefix)[0] > wire.MAX_HEADER_BYTES:
        raise MessageTooLarge(n)
    return prefix + _recv_exact(fd, n - 4, deadline, on_wait)


def _recv_exact(fd: int, n: int, deadline: float, on_wait=None) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            raise DeadlinePassed
        if not select.select([fd], [], [], min(left, WATCH_INTERVAL_S) if on_wait else left)[0]:
            if on_wait is not None:
                on_wait()
            continue
        try:
            chunk = os.read(fd, min(n - len(buf), 1 << 20))
        except BlockingIOError:
            continue
        if not chunk:
            raise EOFError("the worker closed the connection")
        buf += chunk
    return bytes(buf)
