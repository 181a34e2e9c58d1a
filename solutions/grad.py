"""Reference solutions: torch.autograd.grad, grad_outputs, create_graph, higher order (lecture §4)."""

from __future__ import annotations

import torch
from torch import Tensor


def _leaf(t: Tensor) -> Tensor:
    return t.detach().clone().requires_grad_(True)


def partial_grads(f, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    x_, y_ = _leaf(x), _leaf(y)
    out = f(x_, y_)
    if not out.requires_grad:  # f used neither input
        return torch.zeros_like(x), torch.zeros_like(y)
    # allow_unused=True: an input f ignores gives None instead of an error
    gx, gy = torch.autograd.grad(out, (x_, y_), allow_unused=True)
    gx = torch.zeros_like(x) if gx is None else gx
    gy = torch.zeros_like(y) if gy is None else gy
    return gx, gy


def nth_derivative(f, x: Tensor, n: int) -> Tensor:
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    x_ = _leaf(x)
    d = f(x_)
    for _ in range(n):
        if not d.requires_grad:  # no graph back to x: this and every higher derivative is 0
            return torch.zeros_like(x)
        # create_graph=True: the derivative gets a graph of its own, to differentiate again;
        # grad_outputs=ones: for an elementwise f this gives each element's own derivative
        (g,) = torch.autograd.grad(d, x_, grad_outputs=torch.ones_like(d),
                                   create_graph=True, allow_unused=True)
        if g is None:
            return torch.zeros_like(x)
        d = g
    return d.detach()


def hvp(f, x: Tensor, v: Tensor) -> Tensor:
    x_ = _leaf(x)
    y = f(x_)
    if not y.requires_grad:
        return torch.zeros_like(x)
    # create_graph=True: the gradient itself is differentiable
    (g,) = torch.autograd.grad(y, x_, create_graph=True, allow_unused=True)
    if g is None or not g.requires_grad:  # f at most linear in x: the Hessian is 0
        return torch.zeros_like(x)
    # grad_outputs=v: d(g . v)/dx = H @ v, without ever forming H
    (hv,) = torch.autograd.grad(g, x_, grad_outputs=v.detach(), allow_unused=True)
    return torch.zeros_like(x) if hv is None else hv


def jacobian_rows(f, x: Tensor) -> Tensor:
    x_ = _leaf(x)
    y = f(x_)
    J = x.new_zeros((y.numel(), x.numel()))
    if not y.requires_grad:  # constant f
        return J
    for i in range(y.numel()):
        e = torch.zeros_like(y)  # e_i: y's shape, dtype and device
        e.view(-1)[i] = 1
        # grad_outputs=e_i picks row i; retain_graph=True: every row goes through the same graph
        (row,) = torch.autograd.grad(y, x_, grad_outputs=e, retain_graph=True,
                                     allow_unused=True)
        if row is not None:
            J[i] = row.reshape(-1)
    return J
