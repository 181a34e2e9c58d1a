"""The typed protocol: what the worker and the engine say to each other, checked on a real worker."""

import os
import time

from grader.host.student_code import recv_message, send_message
from grader.protocol import wire
from grader.protocol.messages import LoadRequest, Op, Outcome, PingRequest, TestStatus
from grader.sandboxed import worker


def test_members_travel_as_their_bare_strings():
    body, _ = wire.unpack(wire.pack({"op": Op.CALL, "outcome": Outcome.IMPORT_ERROR, "status": TestStatus.TIMEOUT}, []))
    assert body == {"op": "call", "outcome": "import_error", "status": "timeout"}
    assert all(type(v) is str for v in body.values())  # what the host decodes is plain data
    assert body["op"] == Op.CALL and Outcome(body["outcome"]) is Outcome.IMPORT_ERROR
    assert f"{Outcome.RETURNED}" == str(Outcome.RETURNED) == "returned"


def test_the_worker_answers_every_operation_but_exit(tmp_path):
    handlers = worker.Worker(None, str(tmp_path)).handlers()
    assert set(handlers) == set(Op) - {Op.EXIT}


def test_the_tampered_reply_is_built_without_the_enums_yet_says_tampered():
    frame = worker._tampered_reply(7, "grader.sandboxed.worker.Encoder.tensor", "grader")
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4
    body, blobs = wire.unpack(frame[4:])
    assert body == {"outcome": Outcome.TAMPERED, "id": 7, "detail": "grader.sandboxed.worker.Encoder.tensor",
                    "kind": "grader"}
    assert blobs == []
    body, _ = wire.unpack(worker._tampered_reply(8, 'a torch function mode"}, "x": {"', "torch")[4:])
    assert body == {"outcome": Outcome.TAMPERED, "id": 8, "detail": "a torch function mode x: ", "kind": "torch"}


def test_a_real_worker_speaks_the_protocol(engine):
    """Load, ping, an unknown module and exit, on a sandboxed worker forked by the zygote."""
    process = engine.launcher.spawn()
    fd = process.conn.fileno()

    def ask(request, blobs=()):
        send_message(fd, wire.pack(request, list(blobs)), time.monotonic() + 10)
        return wire.unpack(recv_message(fd, time.monotonic() + 10, wire.MAX_MESSAGE_BYTES))[0]

    try:
        load: LoadRequest = {"op": Op.LOAD, "id": 1, "modules": ["grad"], "files": {"grad.py": 0},
                             "device": "cpu", "seed": 0, "gpu_memory_fraction": 0.25}
        assert ask(load, [b"def f():\n    return 1\n"]) == {"ok": True, "device": "cpu", "id": 1}
        ping: PingRequest = {"op": Op.PING, "id": 2}
        reply = ask(ping)
        assert reply["ok"] is True and reply["id"] == 2 and reply["pid"] != os.getpid()
        # a module the load request did not name is not imported, whatever is on the worker's path
        reply = ask({"op": Op.IMPORT, "id": 3, "module": "os"})
        assert reply["outcome"] == Outcome.MISSING and reply["exception"]["type"] == "LookupError"
        assert ask({"op": Op.IMPORT, "id": 4, "module": "grad"}) == {"outcome": Outcome.IMPORTED, "id": 4}
        send_message(fd, wire.pack({"op": Op.EXIT}, []), time.monotonic() + 5)
        assert process.wait_gone(5)
    finally:
        process.close()


def test_the_seal_covers_the_protocol(monkeypatch):
    """A submission that rebinds an outcome, or a name of the protocol module, is caught before the
    worker's next reply. TypedDicts are left out of the seal (annotations, no code); their names are not."""
    from grader.protocol import messages
    from grader.sandboxed import seal

    snapshot = seal.take(seal.reply_path_modules(), worker._tables(), worker._attributes())
    assert seal.check(snapshot) is None
    assert not [e for e in snapshot if e[1] == "grader.protocol.messages.CallReply"]
    returned = Outcome.__dict__["RETURNED"]
    type.__setattr__(Outcome, "RETURNED", Outcome.RAISED)  # what `Outcome.RETURNED = ...` cannot do
    try:
        assert seal.check(snapshot) == "grader.protocol.messages.Outcome.RETURNED"
    finally:
        type.__setattr__(Outcome, "RETURNED", returned)
    monkeypatch.setattr(messages, "CallReply", dict)
    assert seal.check(snapshot) == "grader.protocol.messages.CallReply"
