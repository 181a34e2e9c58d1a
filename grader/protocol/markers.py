"""The argument markers test authors write, and their encoding for the wire.

A test calls student code with tensors, numbers, strings and containers of them, and with markers
for what cannot cross the worker boundary as data: `Arg`/`Leaf` (a tensor with its autograd state),
`Fn` and `Graph` (a callable or a graph the course's worker-side tables build inside the worker),
`SESSION_DEVICE` (the run's device). `encode_arguments` turns them into the wire's nodes
(`grader.protocol.grammar`'s argument kinds), exact types only; the worker's `ArgumentBuilder`
reads them back.
Imported by the kit (`grader.cases.kit`) and the host alike: nothing here reaches into either.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from grader.protocol import grammar, wire


@dataclass
class Arg:
    """A tensor argument with its autograd state: requires_grad, and a `.grad` already set (a sentinel
    that must survive the call untouched)."""

    tensor: torch.Tensor
    requires_grad: bool = False
    grad: torch.Tensor | None = None


def Leaf(tensor: torch.Tensor, grad: torch.Tensor | None = None) -> Arg:
    """A tensor that arrives as a leaf with requires_grad=True."""
    return Arg(tensor, True, grad)


@dataclass
class Fn:
    """A callable of the course's worker-side helpers (`FUNCTIONS`), built inside the worker."""

    name: str


@dataclass
class Graph:
    """An autograd graph built inside the worker by the course's helpers (`GRAPHS[name](*args)`)."""

    name: str
    args: tuple = ()


class _SessionDevice:
    """Stands for the device this run grades on (`cpu` or `cuda`)."""

    def __repr__(self) -> str:
        return "SESSION_DEVICE"


SESSION_DEVICE = _SessionDevice()


def encode_arguments(value: Any, blobs: list[bytes]) -> Any:
    """Encode call arguments from the trusted side (exact types only, like the worker's replies)."""
    t = type(value)
    if value is None or t in (bool, int, float, str):
        return value
    if t is torch.Tensor:
        return _encode_tensor(value, blobs)
    if t is Arg:
        node = _encode_tensor(value.tensor, blobs)
        node[grammar.TENSOR]["requires_grad"] = value.requires_grad
        if value.grad is not None:
            node[grammar.TENSOR]["grad"] = _encode_tensor(value.grad, blobs)
        return node
    if t is Fn:
        return {grammar.FN: value.name}
    if t is Graph:
        return {grammar.GRAPH: {"name": value.name, "args": encode_arguments(list(value.args), blobs)}}
    if t is torch.dtype:
        return {grammar.DTYPE: wire.DTYPE_NAMES[value]}
    if value is SESSION_DEVICE:
        return {grammar.DEVICE: grammar.SESSION_DEVICE_NAME}
    if t is list:
        return [encode_arguments(x, blobs) for x in value]
    if t is tuple:
        return {grammar.TUPLE: [encode_arguments(x, blobs) for x in value]}
    if t is dict:
        return {grammar.DICT: [[k, encode_arguments(x, blobs)] for k, x in value.items()]}
    raise TypeError(f"cannot send a {t.__name__} to the worker")


def _encode_tensor(t: torch.Tensor, blobs: list[bytes]) -> dict:
    blobs.append(wire.tensor_bytes(t))
    return {grammar.TENSOR: {"blob": len(blobs) - 1, "dtype": wire.DTYPE_NAMES[t.dtype], "shape": list(t.shape)}}
