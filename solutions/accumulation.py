"""Reference solutions: gradients accumulate; zeroing with w.grad.zero_() (lecture §5)."""

from __future__ import annotations

import torch
from torch import Tensor


def grads_per_step(w: Tensor, xs: list[Tensor]) -> Tensor:
    w = w.detach().clone().requires_grad_(True)
    rows = []
    for x in xs:
        y = ((w + x.detach()) * (w + 1)).sum()
        y.backward()
        rows.append(w.grad.clone())  # clone: zero_() below would wipe the recorded row
        w.grad.zero_()  # gradients accumulate; without this, step k would add steps 0..k-1
    if not rows:
        return w.new_zeros((0, *w.shape))  # new_zeros: w's dtype and device, no grad
    return torch.stack(rows)


def accumulate_microbatches(w: Tensor, X: Tensor, Y: Tensor, batch_size: int) -> Tensor:
    w = w.detach().clone().requires_grad_(True)
    X, Y = X.detach(), Y.detach()
    N = X.shape[0]
    for start in range(0, N, batch_size):
        Xb, Yb = X[start:start + batch_size], Y[start:start + batch_size]
        # divide by N, not by len(Xb): the accumulated sum must equal the full-batch mean
        loss = ((Xb @ w - Yb) ** 2).sum() / N
        loss.backward()  # no zeroing: the micro-batch gradients add up in w.grad
    return torch.zeros_like(w) if w.grad is None else w.grad  # N = 0: no batch ran


def gd_fit(X: Tensor, Y: Tensor, w0: Tensor, lr: float, steps: int) -> Tensor:
    w = w0.detach().clone().requires_grad_(True)
    X, Y = X.detach(), Y.detach()
    for _ in range(steps):
        loss = ((X @ w - Y) ** 2).mean()
        loss.backward()
        # the update must not be recorded, and an in-place op on a leaf needs no_grad;
        # `w = w - lr * w.grad` would replace the leaf instead
        with torch.no_grad():
            w -= lr * w.grad
        w.grad.zero_()  # otherwise the next step adds its gradient to this one
    return w.detach()
