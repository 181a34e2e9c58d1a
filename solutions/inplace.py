"""Reference solutions: in-place operations, leaves, the version counter (lecture §5)."""

from __future__ import annotations

import torch
from torch import Tensor


def add_into(a: Tensor, b: Tensor, inplace: bool) -> Tensor:
    if inplace:
        a += b  # in place: same object, same storage, a._version increases
        return a
    return a + b  # out of place: a new tensor, a unchanged


def safe_add_(w: Tensor, delta: Tensor) -> Tensor:
    # no_grad: the update is not recorded, so the leaf may be changed in place;
    # the version counter still increases (unlike w.data.add_)
    with torch.no_grad():
        w.add_(delta)
    return w


def shifted_sigmoid_and_grad(x: Tensor, shift: float) -> tuple[Tensor, Tensor]:
    x = x.detach().clone().requires_grad_(True)
    # out of place: sigmoid's backward uses its saved output, which must stay unmodified
    s = torch.sigmoid(x) + shift
    s.sum().backward()
    return s.detach(), x.grad
