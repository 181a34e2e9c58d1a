"""The wire's value grammar: the one owner of the kinds a value may take and of the `$tensor` fields.

A value crosses the worker boundary as a JSON tree (`grader.protocol.wire` frames it): `None`,
`bool`, `int`, `float`, `str` and lists stand for themselves; anything else is a one-key object
`{kind: payload}`. Two directions, two sets of kinds:

- arguments, trusted side -> worker (written by `grader.protocol.markers.encode_arguments`, read by
  the worker's `ArgumentBuilder`): `ARGUMENT_KINDS`, tensors with `ARGUMENT_TENSOR_FIELDS`;
- replies, worker -> trusted side (written by the worker's `Encoder`, read by `wire.decode`):
  `REPLY_KINDS`, tensors with `REPLY_TENSOR_FIELDS`.

The worker keeps hardened copies of its half (literals bound before student code runs); it checks
them against this module once, before any student code (`grader.sandboxed.worker.check_grammar`),
and `tests/test_wire.py` runs every kind through all four ends from one table.
"""

from __future__ import annotations

from typing import Any

TUPLE = "$tuple"  # [value, ...]
DICT = "$dict"  # [[str key, value], ...]
DTYPE = "$dtype"  # a name of grader.protocol.wire.DTYPES
DEVICE = "$device"  # "cpu", "cuda:0"; in arguments also SESSION_DEVICE_NAME
TENSOR = "$tensor"  # {field: ...}, the values in a blob
FN = "$fn"  # the name of a callable of the course's worker-side tables (arguments only)
GRAPH = "$graph"  # {"name": ..., "args": [...]}: a graph those tables build (arguments only)
OBJECT = "$object"  # a type name: a value that may not cross (replies only)

ARGUMENT_KINDS = frozenset({TUPLE, DICT, DTYPE, DEVICE, TENSOR, FN, GRAPH})
REPLY_KINDS = frozenset({TUPLE, DICT, DTYPE, DEVICE, TENSOR, OBJECT})

SESSION_DEVICE_NAME = "@session"  # the `$device` of an argument that stands for the run's device

TENSOR_REQUIRED = ("blob", "dtype", "shape")  # index of its blob, dtype name, list of sizes
REPLY_TENSOR_REQUIRED = TENSOR_REQUIRED + ("device",)
ARGUMENT_TENSOR_FIELDS = TENSOR_REQUIRED + ("requires_grad", "grad")
REPLY_TENSOR_FIELDS = TENSOR_REQUIRED + (
    "device", "requires_grad", "is_leaf", "grad_fn", "version", "is_inference", "grad",
    "same_as_arg", "shares_storage_with_arg",
)


def shape_of(node: Any) -> tuple[set[str], set[str]]:
    """The kinds a value tree uses, and the fields its tensors carry (of every tensor, together)."""
    kinds: set[str] = set()
    fields: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if type(item) is list:
            stack += item
        elif type(item) is dict and len(item) == 1:
            ((kind, payload),) = item.items()
            kinds.add(kind)
            if kind == TENSOR and type(payload) is dict:
                fields |= set(payload)
                stack += [v for v in payload.values() if type(v) is dict]
            elif kind == DICT and type(payload) is list:
                stack += [pair[1] for pair in payload if type(pair) is list and len(pair) == 2]
            elif kind == GRAPH and type(payload) is dict:
                stack.append(payload.get("args"))
            elif type(payload) is list:
                stack += payload
    return kinds, fields
