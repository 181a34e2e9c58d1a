"""The data-only wire format between the trusted grader and the student's worker.

A message is one byte string: a 4-byte big-endian header length, a UTF-8 JSON header,
then the raw bytes of every tensor it mentions. Nothing is pickled, ever. JSON gives back
exact built-in types only; tensors are rebuilt from raw bytes with a dtype from a fixed
list, after their size has been checked. Decoding an untrusted message therefore runs no
code of the sender's, and an odd message raises `WireError` instead of doing anything.

Values are JSON trees where dicts carry a single `$kind` key: `{"$tensor": {...}}`,
`{"$tuple": [...]}`, `{"$dict": [[key, value], ...]}`, `{"$dtype": "float32"}`, `{"$device": "cpu"}`,
`{"$object": "TypeName"}` in replies, `{"$fn": name}` and `{"$graph": {...}}` in arguments. Which
kinds and which tensor fields each direction carries is `grader.protocol.grammar`'s: `decode` here
reads replies by it.
"""

from __future__ import annotations

import ctypes
import json
import math
import struct
from dataclasses import dataclass, field
from typing import Any

import torch

from grader.protocol import grammar

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
MAX_HEADER_BYTES = 4 * 1024 * 1024
MAX_DEPTH = 32
MAX_NODES = 100_000

DTYPES: dict[str, torch.dtype] = {
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    "float64": torch.float64,
    "complex64": torch.complex64,
    "complex128": torch.complex128,
    "int8": torch.int8,
    "int16": torch.int16,
    "int32": torch.int32,
    "int64": torch.int64,
    "uint8": torch.uint8,
    "bool": torch.bool,
}
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}


class WireError(ValueError):
    """A message that does not follow the format: treated as garbage from the worker."""


# ----------------------------------------------------------------------------- framing

def pack(body: Any, blobs: list[bytes]) -> bytes:
    header = json.dumps({"body": body, "blobs": [len(b) for b in blobs]}, allow_nan=True).encode()
    return b"".join([struct.pack(">I", len(header)), header, *blobs])


def unpack(message: bytes) -> tuple[Any, list[bytes]]:
    """Split a message into its JSON body and its blobs, checking every length."""
    if type(message) is not bytes:
        raise WireError("message is not bytes")
    if len(message) < 4:
        raise WireError("message too short")
    (header_len,) = struct.unpack(">I", message[:4])
    if header_len > MAX_HEADER_BYTES or 4 + header_len > len(message):
        raise WireError("bad header length")
    try:
        header = json.loads(message[4 : 4 + header_len].decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # bad UTF-8 or JSON, an int too long to convert
        raise WireError(f"header is not JSON: {exc}") from None
    if type(header) is not dict or set(header) != {"body", "blobs"}:
        raise WireError("header must hold exactly 'body' and 'blobs'")
    sizes = header["blobs"]
    if type(sizes) is not list or any(type(n) is not int or n < 0 for n in sizes):
        raise WireError("bad blob table")
    if 4 + header_len + sum(sizes) != len(message):
        raise WireError("blob sizes do not add up to the message length")
    blobs, offset = [], 4 + header_len
    for n in sizes:
        blobs.append(message[offset : offset + n])
        offset += n
    return header["body"], blobs


# ----------------------------------------------------------------------------- tensors

def tensor_bytes(t: torch.Tensor) -> bytes:
    """Raw bytes of a tensor's values, copied to the CPU (no numpy needed)."""
    flat = t.detach().to("cpu").contiguous()
    nbytes = flat.numel() * flat.element_size()
    if nbytes == 0:
        return b""
    return ctypes.string_at(flat.data_ptr(), nbytes)


def tensor_from_bytes(blob: bytes, dtype_name: str, shape: list[int]) -> torch.Tensor:
    """Rebuild a plain CPU tensor from raw bytes, after checking dtype and size."""
    dtype = DTYPES.get(dtype_name) if type(dtype_name) is str else None
    if dtype is None:
        raise WireError(f"unsupported dtype {dtype_name!r}")
    if type(shape) is not list or any(type(n) is not int or n < 0 for n in shape):
        raise WireError("bad shape")
    numel = math.prod(shape)
    nbytes = numel * dtype.itemsize
    if nbytes != len(blob):
        raise WireError(f"tensor of shape {shape} and dtype {dtype_name} needs {nbytes} bytes, got {len(blob)}")
    if numel == 0:
        return torch.empty(shape, dtype=dtype)
    flat = torch.frombuffer(bytearray(blob), dtype=dtype)
    return flat if len(shape) == 1 else flat.reshape(shape)  # (a reshape is 3.5 us, half of the rest)


@dataclass
class RemoteTensor:
    """What the worker reported about a tensor: its values (as a plain CPU tensor) and state."""

    data: torch.Tensor
    dtype: torch.dtype
    shape: tuple[int, ...]
    device: str
    requires_grad: bool = False
    is_leaf: bool = True
    grad_fn: str | None = None
    version: int = 0
    is_inference: bool = False
    grad: "RemoteTensor | None" = None
    same_as_arg: int | None = None
    shares_storage_with_arg: int | None = None
    extra: dict = field(default_factory=dict)

    @property
    def device_type(self) -> str:
        return self.device.split(":")[0]

    def __repr__(self) -> str:  # short: messages quote it
        return f"RemoteTensor(shape={list(self.shape)}, dtype={DTYPE_NAMES.get(self.dtype)}, device={self.device})"


@dataclass
class RemoteObject:
    """A returned value of a type that is not allowed across the boundary."""

    type_name: str

    def __repr__(self) -> str:
        return f"<{self.type_name} object>"


# ----------------------------------------------------------------------------- decoding (trusted side)

_TENSOR_KEYS = frozenset(grammar.REPLY_TENSOR_FIELDS)
_TENSOR_REQUIRED = frozenset(grammar.REPLY_TENSOR_REQUIRED)


def decode(body: Any, blobs: list[bytes]) -> Any:
    """Turn a reply body into Python values with RemoteTensor leaves. Raises WireError."""
    counter = [0]
    return _decode(body, blobs, 0, counter)


def _decode(node: Any, blobs: list[bytes], depth: int, counter: list[int]) -> Any:
    counter[0] += 1
    if depth > MAX_DEPTH or counter[0] > MAX_NODES:
        raise WireError("value nested too deeply or too large")
    if node is None or type(node) in (bool, int, float, str):
        return node
    if type(node) is list:
        return [_decode(x, blobs, depth + 1, counter) for x in node]
    if type(node) is not dict or len(node) != 1:
        raise WireError("a JSON object must have exactly one $kind key")
    ((kind, payload),) = node.items()
    if kind not in grammar.REPLY_KINDS:
        raise WireError(f"unknown value kind {kind!r}")
    if kind == grammar.TUPLE and type(payload) is list:
        return tuple(_decode(x, blobs, depth + 1, counter) for x in payload)
    if kind == grammar.DICT and type(payload) is list:
        out = {}
        for pair in payload:
            if type(pair) is not list or len(pair) != 2 or type(pair[0]) is not str:
                raise WireError("bad $dict entry")
            out[pair[0]] = _decode(pair[1], blobs, depth + 1, counter)
        return out
    if kind == grammar.DTYPE and type(payload) is str:
        if payload not in DTYPES:
            raise WireError(f"unknown dtype {payload!r}")
        return DTYPES[payload]
    if kind == grammar.DEVICE and type(payload) is str:
        return torch.device(_device_string(payload))
    if kind == grammar.OBJECT and type(payload) is str:
        return RemoteObject(payload[:200])
    if kind == grammar.TENSOR and type(payload) is dict:
        return _decode_tensor(payload, blobs, depth, counter)
    raise WireError(f"bad payload for {kind!r}")


def _device_string(text: str) -> str:
    try:
        return str(torch.device(text))
    except (RuntimeError, ValueError):
        raise WireError(f"bad device {text[:40]!r}") from None


def _decode_tensor(p: dict, blobs: list[bytes], depth: int, counter: list[int]) -> RemoteTensor:
    if not set(p) <= _TENSOR_KEYS or not _TENSOR_REQUIRED <= set(p):
        raise WireError("bad tensor description")
    index = p["blob"]
    if type(index) is not int or not 0 <= index < len(blobs):
        raise WireError("tensor refers to a missing blob")
    data = tensor_from_bytes(blobs[index], p["dtype"], p["shape"])
    grad = p.get("grad")
    if grad is not None:
        if type(grad) is not dict or set(grad) != {grammar.TENSOR} or type(grad[grammar.TENSOR]) is not dict:
            raise WireError("bad grad")
        grad = _decode_tensor(grad[grammar.TENSOR], blobs, depth + 1, counter)
    return RemoteTensor(
        data=data,
        dtype=data.dtype,
        shape=tuple(data.shape),
        device=_device_string(_typed(p, "device", str, "cpu")),
        requires_grad=_typed(p, "requires_grad", bool, False),
        is_leaf=_typed(p, "is_leaf", bool, True),
        grad_fn=_typed(p, "grad_fn", (str, type(None)), None),
        version=_typed(p, "version", int, 0),
        is_inference=_typed(p, "is_inference", bool, False),
        grad=grad,
        same_as_arg=_typed(p, "same_as_arg", (int, type(None)), None),
        shares_storage_with_arg=_typed(p, "shares_storage_with_arg", (int, type(None)), None),
    )


def _typed(p: dict, key: str, types, default):
    value = p.get(key, default)
    types = types if isinstance(types, tuple) else (types,)
    if type(value) not in types:
        raise WireError(f"tensor field {key!r} has type {type(value).__name__}")
    return value
