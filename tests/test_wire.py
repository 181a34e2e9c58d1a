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


# ============================================================================= one grammar, four ends
# Every kind of grader.protocol.grammar through the four ends that speak it: the trusted side's encoder
# of arguments (markers.encode_arguments), the worker's ArgumentBuilder, the worker's Encoder of replies,
# and the trusted side's decoder (wire.decode). A kind an end lacks, or a tensor field one end writes
# and the other does not read, fails here; so does a kind in the grammar that no row exercises.

from grader import catalog  # noqa: E402
from grader.protocol import grammar  # noqa: E402
from grader.protocol.markers import SESSION_DEVICE, Graph, Leaf  # noqa: E402
from grader.sandboxed import helpers, worker  # noqa: E402

T = torch.arange(3, dtype=torch.float64)
G = torch.full((3,), 0.5, dtype=torch.float64)


def _leaf_with_grad():
    leaf = T.clone().requires_grad_(True)
    leaf.grad = G.clone()
    return leaf


# (kind, argument the trusted side sends, what the worker builds, a value the worker replies with,
#  what the trusted side decodes); None where the kind does not go that way.
FOUR_ENDS = [
    ("plain", [1, 2.5, "x", None, True], [1, 2.5, "x", None, True], [1, 2.5, "x", None, True], [1, 2.5, "x", None, True]),
    (grammar.TUPLE, (1, "a"), (1, "a"), (1, "a"), (1, "a")),
    (grammar.DICT, {"k": 3}, {"k": 3}, {"k": 3}, {"k": 3}),
    (grammar.DTYPE, torch.float64, torch.float64, torch.float64, torch.float64),
    (grammar.DEVICE, SESSION_DEVICE, torch.device("cpu"), torch.device("cpu"), torch.device("cpu")),
    (grammar.TENSOR, Leaf(T, grad=G), _leaf_with_grad(), _leaf_with_grad(),
     RemoteTensor(data=T, dtype=torch.float64, shape=(3,), device="cpu", requires_grad=True,
                  grad=RemoteTensor(data=G, dtype=torch.float64, shape=(3,), device="cpu"))),
    (grammar.FN, Fn("product_sum"), "FUNCTIONS:product_sum", None, None),
    (grammar.GRAPH, Graph("leaf", (T,)), "GRAPHS:leaf", None, None),
    (grammar.OBJECT, None, None, object(), RemoteObject("object")),
]


@pytest.fixture(scope="module", autouse=True)
def course_tables():
    if not helpers.FUNCTIONS:  # the worker's tables, as the zygote fills them
        helpers.load_course([str(p) for p in catalog.load().helpers])


def same(got, want) -> bool:
    if type(want) is str and ":" in want:  # a table entry, built by the course's helpers
        table, name = want.split(":")
        if table == "FUNCTIONS":
            return got is helpers.FUNCTIONS[name]
        return type(got) is torch.Tensor and torch.equal(got.detach(), helpers.GRAPHS[name](T).detach())
    if type(want) is torch.Tensor:
        return (type(got) is torch.Tensor and torch.equal(got.detach(), want.detach())
                and got.requires_grad == want.requires_grad and same(got.grad, want.grad))
    if type(want) is RemoteTensor:
        return (type(got) is RemoteTensor and torch.equal(got.data, want.data) and got.dtype == want.dtype
                and got.shape == want.shape and got.requires_grad == want.requires_grad and same(got.grad, want.grad))
    if type(want) in (list, tuple):
        return type(got) is type(want) and len(got) == len(want) and all(map(same, got, want))
    if type(want) is dict:
        return type(got) is dict and got.keys() == want.keys() and all(same(got[k], want[k]) for k in want)
    return type(got) is type(want) and got == want


@pytest.mark.parametrize("kind, sent, built, replied, decoded", FOUR_ENDS, ids=[row[0] for row in FOUR_ENDS])
def test_every_kind_through_the_four_ends(kind, sent, built, replied, decoded):
    if sent is not None:
        blobs: list[bytes] = []
        node = encode_arguments(sent, blobs)  # 1. the trusted side encodes an argument
        kinds, fields = grammar.shape_of(node)
        assert kinds <= grammar.ARGUMENT_KINDS and (kind == "plain" or kind in kinds)
        assert fields <= set(grammar.ARGUMENT_TENSOR_FIELDS) and set(grammar.TENSOR_REQUIRED) <= fields or not fields
        body, blobs = wire.unpack(wire.pack({"args": [node]}, blobs))
        assert same(worker.ArgumentBuilder(blobs, "cpu").build(body["args"][0]), built)  # 2. the worker builds it
    if replied is not None:
        encoder = worker.Encoder(())
        node = encoder.value(replied)  # 3. the worker encodes a reply
        kinds, fields = grammar.shape_of(node)
        assert kinds <= grammar.REPLY_KINDS and (kind == "plain" or kind in kinds)
        assert not fields or fields == set(grammar.REPLY_TENSOR_FIELDS)
        body, blobs = wire.unpack(wire.pack({"value": node}, encoder.blobs))
        assert same(wire.decode(body["value"], blobs), decoded)  # 4. the trusted side decodes it


def test_the_table_covers_the_grammar():
    assert {row[0] for row in FOUR_ENDS if row[1] is not None} - {"plain"} == grammar.ARGUMENT_KINDS
    assert {row[0] for row in FOUR_ENDS if row[3] is not None} - {"plain"} == grammar.REPLY_KINDS


@pytest.mark.parametrize("kind", sorted(grammar.ARGUMENT_KINDS - grammar.REPLY_KINDS) + ["$leaf"])
def test_the_trusted_side_refuses_what_no_reply_carries(kind):
    with pytest.raises(WireError, match="unknown value kind"):
        wire.decode({kind: "x"}, [])


@pytest.mark.parametrize("kind", sorted(grammar.REPLY_KINDS - grammar.ARGUMENT_KINDS) + ["$leaf"])
def test_the_worker_refuses_what_no_argument_carries(kind):
    with pytest.raises(ValueError, match="unknown argument kind"):
        worker.ArgumentBuilder([], "cpu").build({kind: "x"})


def test_the_worker_checks_its_copies_against_the_grammar(monkeypatch):
    worker.check_grammar()  # as the zygote does, before any student code
    monkeypatch.setattr(worker, "_ARGUMENT_KINDS", worker._ARGUMENT_KINDS + ("$leaf",))
    monkeypatch.setattr(grammar, "REPLY_TENSOR_FIELDS", grammar.REPLY_TENSOR_FIELDS + ("stride",))
    with pytest.raises(RuntimeError, match=r"argument kinds .*\$leaf.*; the encoder writes the tensor fields"):
        worker.check_grammar()


def test_tensor_bytes_without_numpy_are_the_same_bytes(tmp_path):
    """Students install torch, pytest and pyyaml only (NumPy is optional for torch): the worker and the
    course's probes then take a tensor's bytes through the storage's own writer, and get the same bytes."""
    import subprocess
    import sys

    code = """
import sys
sys.modules['numpy'] = None
import torch
from grader.sandboxed import worker
from grader.cases.public import helpers
assert worker._tobytes is None and helpers._ndarray_tobytes is None
base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
cases = [base, base[1:3], base[:, 2:4], base.t(), torch.tensor([True, False]), torch.zeros(0),
         torch.arange(5, dtype=torch.float64)[2:], torch.tensor(3.5), torch.tensor([1 + 2j]).conj()]
for t in cases:
    want = bytes(t.detach().resolve_conj().contiguous().reshape(-1).view(torch.uint8).tolist())
    assert worker._tensor_bytes(t) == want, t
    assert helpers.freeze(t)[0] == want, t
    assert torch.equal(helpers.thaw(helpers.freeze(t)), t.resolve_conj()), t
print("same", len(cases))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "same 9"
