"""Requests sent ahead: a submission's calls go to its worker before the tests ask for their results.

Every test's first call into the student's code depends on nothing the student's code returned:
its arguments come from the test's own `rng` and the course's data. So the session describes them
(`grader.host.session.describe_calls`), once per session since they are the same for every
submission: each test is run up to its first `student.call`, which is recorded instead of sent
(`Described`). The calls, with the import
each module needs before its first call, become a `Pipeline`: the requests go to the worker a few
at a time, in the order the tests will make them, and the worker answers each one in turn while the
trusted side runs the tests. A test's `student.call` then finds its reply already read (or reads it
now) instead of making a round trip of its own; the test, on the trusted side, judges it as before.

Nothing is trusted more for it: each reply is read and checked exactly as a reply to a request made
on the spot (`StudentCode._receive`: its id, its size, tampering, the memory watch), with a deadline
of its own that the time budgets of its exercise and submission set when it is read. What the
pipeline changes is when requests are sent:

- a test that has made more than one call (the engine learns this from the submissions it graded,
  `GradingSession.most_calls`), or that it has not yet seen, is a *barrier*: nothing after its
  first call is sent before the test is over, so its later calls reach the worker in order;
- a worker that fails (a timeout, a crash, a tampered reply, garbage) stops the pipeline: what was
  sent after the failing request is dropped, and every request from then on is made on the spot,
  as without a pipeline (to a fresh worker);
- a request the plan does not hold (a test that calls again where the engine has not seen it do
  so) is made on the spot, after the replies already on their way are read.

Time is charged as before, as the trusted side's wait for each reply: a worker's work that
overlapped the trusted side's own (a few milliseconds a test) is not charged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from grader.protocol import wire
from grader.protocol.messages import Op

WINDOW = 8  # requests in flight to one worker at most
WINDOW_BYTES = 64 * 1024  # and at most this many bytes of them: neither side's socket buffer fills
LOOKAHEAD = 4  # a request may skip this many planned ones (a test that made no call)


class Described(BaseException):
    """Raised by `student.call` while the tests are being described: the call was recorded, not made.
    A BaseException, so that a test's `except Exception` does not swallow it."""


@dataclass
class PlannedCall:
    """One test's first call, as `student.call` would send it."""

    test: str  # the test's node id
    exercise: str | None
    module: str
    function: str
    body: dict  # the request, without its id
    blobs: list[bytes]


@dataclass
class Entry:
    """One request of the plan and what became of it."""

    module: str
    body: dict  # without id
    blobs: list[bytes]
    what: str
    setup: bool
    exercise: str | None
    barrier: bool = False  # nothing after it is sent before the next entry is asked for
    request_id: int = 0
    sent_at: float = 0.0
    state: str = "planned"  # planned, sent, read, dropped, used
    reply: tuple | None = None  # (body, blobs) once read
    error: BaseException | None = None  # what reading it raised, raised again when it is asked for
    tampered: str | None = None  # the message when the reply said tampered (charged when asked for)
    size: int = 0


@dataclass
class Pipeline:
    """The plan of one submission's requests and how far it has got (driven by `StudentCode`)."""

    entries: list[Entry] = field(default_factory=list)
    next_send: int = 0
    next_read: int = 0
    next_use: int = 0
    send_limit: int = -1  # entries up to this index may be sent
    stopped: bool = False

    @classmethod
    def plan(cls, calls: list[PlannedCall], barrier_tests: set[str], imported: set[str]) -> Pipeline:
        pipeline, seen = cls(), set(imported)
        for call in calls:
            if call.module not in seen:
                seen.add(call.module)
                pipeline.entries.append(Entry(call.module, {"op": Op.IMPORT, "module": call.module}, [],
                                              f"importing {call.module}.py", True, call.exercise))
            pipeline.entries.append(Entry(call.module, call.body, call.blobs, call.function, False, call.exercise,
                                          barrier=call.test in barrier_tests))
        pipeline.send_limit = pipeline._next_barrier(0)
        return pipeline

    def _next_barrier(self, start: int) -> int:
        for i in range(start, len(self.entries)):
            if self.entries[i].barrier:
                return i
        return len(self.entries) - 1

    def find(self, body: dict, blobs: list[bytes]) -> int | None:
        """The index of the planned entry this request is, or None: the next unused one, or one of
        the few after it (the tests between made none of their planned calls)."""
        for i in range(self.next_use, min(self.next_use + LOOKAHEAD + 1, len(self.entries))):
            entry = self.entries[i]
            if entry.state != "dropped" and entry.blobs == blobs and _same(entry.body, body):
                return i
        return None

    def reached(self, index: int) -> None:
        """The tests asked for entry `index`: every test before its own is over."""
        for skipped in self.entries[self.next_use:index]:
            if skipped.state == "planned":
                skipped.state = "dropped"
        self.next_use = index + 1
        self.send_limit = max(self.send_limit, self._next_barrier(index))

    def in_flight(self) -> list[Entry]:
        return [e for e in self.entries[self.next_read:self.next_send] if e.state == "sent"]

    def sendable(self) -> Entry | None:
        """The next entry to send now, if the window and the barriers allow it."""
        if self.stopped or self.next_send >= len(self.entries) or self.next_send > self.send_limit:
            return None
        flying = self.in_flight()
        if flying and (len(flying) >= WINDOW or sum(e.size for e in flying) >= WINDOW_BYTES):
            return None
        return self.entries[self.next_send]

    def stop(self) -> None:
        """The worker is gone: what was sent and not read, and what was not sent, is dropped."""
        self.stopped = True
        for entry in self.entries[self.next_read:]:
            if entry.state in ("planned", "sent"):
                entry.state = "dropped"


def _same(planned: dict, asked: dict) -> bool:
    """The same request: equal as data, or as JSON (a NaN is not equal to itself as a float)."""
    return planned == asked or wire.pack(planned, []) == wire.pack(asked, [])


def packed(body: dict, request_id: int, blobs: list[bytes]) -> bytes:
    return wire.pack({**body, "id": request_id}, blobs)

