"""The data-only wire format: what the trusted side accepts from a worker, and what it refuses."""

import json
import pickle
import struct

import pytest
import torch

from grader.host.student_code import Arg, Fn, encode_arguments
from grader.protocol import wire
from grader.protocol.wire import RemoteObject, RemoteTensor, WireError


def message(body, blobs=()):
    return wire.pack(body, list(blobs))


def test_round_trip_of_plain_values_and_tensors():
    t = torch.arange(6, dtype=torch.float64).reshape(2, 3)
    body = {"$tuple": [1, 2.5, "x", None, True, [1, 2], {"$dict": [["k", 3]]},
                       {"$tensor": {"blob": 0, "dtype": "float64", "shape": [2, 3], "device": "cpu",
                                    "requires_grad": True, "is_leaf": False, "grad_fn": "MulBackward0",
                                    "version": 2}}]}
    decoded = wire.decode(*wire.unpack(message(body, [wire.tensor_bytes(t)])))
    assert decoded[:7] == (1, 2.5, "x", None, True, [1, 2], {"k": 3})
    remote = decoded[7]
    assert type(remote) is RemoteTensor and type(remote.data) is torch.Tensor
    assert torch.equal(remote.data, t) and remote.grad_fn == "MulBackward0" and remote.version == 2


def test_empty_and_zero_dim_tensors():
    for t in (torch.empty(0, 3), torch.tensor(3.5)):
        body = {"$tensor": {"blob": 0, "dtype": "float32", "shape": list(t.shape), "device": "cpu"}}
        got = wire.decode(*wire.unpack(message(body, [wire.tensor_bytes(t.float())])))
        assert got.shape == tuple(t.shape) and torch.equal(got.data, t.float())


@pytest.mark.parametrize("raw", [
    b"",                                              # too short
    b"\x00\x00\x00\x10{}",                            # header length past the end
    struct.pack(">I", 4) + b"nope",                   # not JSON
    struct.pack(">I", 2) + b"[]",                     # not an object
    pickle.dumps({"body": 1, "blobs": []}),           # a pickle is just garbage here
])
def test_malformed_messages_raise_wire_error(raw):
    with pytest.raises(WireError):
        wire.unpack(raw)


@pytest.mark.parametrize("body, blobs", [
    ({"$tensor": {"blob": 0, "dtype": "float32", "shape": [3], "device": "cpu"}}, [b"\x00" * 8]),  # size mismatch
    ({"$tensor": {"blob": 1, "dtype": "float32", "shape": [1], "device": "cpu"}}, [b"\x00" * 4]),  # missing blob
    ({"$tensor": {"blob": 0, "dtype": "object", "shape": [1], "device": "cpu"}}, [b"\x00" * 8]),   # bad dtype
    ({"$tensor": {"blob": 0, "dtype": "float32", "shape": [-1], "device": "cpu"}}, [b""]),          # bad shape
    ({"$tensor": {"blob": 0, "dtype": "float32", "shape": [1], "device": "cpu", "version": "1"}}, [b"\0" * 4]),
    ({"$tensor": {"blob": 0, "dtype": "float32", "shape": [1], "device": "cpu", "__reduce__": 1}}, [b"\0" * 4]),
    ({"$pickle": "gASV"}, []),                                                                      # unknown kind
    ({"a": 1, "b": 2}, []),                                                                         # not one key
    ({"$device": "not a device"}, []),
])
def test_suspicious_values_raise_wire_error(body, blobs):
    with pytest.raises(WireError):
        wire.decode(*wire.unpack(message(body, blobs)))


def test_nesting_is_bounded():
    body = 0
    for _ in range(wire.MAX_DEPTH + 5):
        body = [body]
    with pytest.raises(WireError):
        wire.decode(*wire.unpack(message(body)))


def test_objects_stay_names():
    got = wire.decode(*wire.unpack(message({"$object": "AlwaysEqual"})))
    assert type(got) is RemoteObject and got.type_name == "AlwaysEqual"
    assert got != 1  # a plain dataclass: no student-defined comparison survives the boundary


def test_arguments_encode_exact_types_only():
    blobs = []
    encoded = encode_arguments([Fn("sin"), Arg(torch.ones(2), True, torch.zeros(2)), (1, "a"), {"k": None}], blobs)
    assert encoded[0] == {"$fn": "sin"}
    assert encoded[1]["$tensor"]["requires_grad"] is True and "grad" in encoded[1]["$tensor"]
    assert json.loads(json.dumps(encoded)) == encoded and len(blobs) == 2

    class Sub(torch.Tensor):
        pass

    with pytest.raises(TypeError):
        encode_arguments([torch.ones(1).as_subclass(Sub)], [])
