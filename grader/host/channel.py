"""The trusted end of a worker's socket: one framed message out or in, with a deadline and a size limit.

The framing is multiprocessing.Connection's (a 4-byte big-endian length, or -1 and 8 bytes), which
the worker's `Connection` reads and writes. The trusted end is non-blocking and every read and
write has a deadline, so a worker that stops reading or sends half a message costs at most the
time left; `recv_message` calls `on_wait` about every `WATCH_INTERVAL_S` while it waits (the
memory watch of `grader.host.student_code`).
"""

from __future__ import annotations

import os
import select
import struct
import time

from grader.protocol import wire


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
