"""Reference solutions: torch.autograd.backward, retain_graph, grad_tensors (lecture §3)."""

from __future__ import annotations

import torch
from torch import Tensor


def two_losses_grad(w: Tensor, x: Tensor) -> tuple[Tensor, Tensor]:
    w = w.detach().clone().requires_grad_(True)
    h = torch.exp(x.detach() * w)
    L1 = h.sum()
    L2 = (h ** 2).sum()
    # retain_graph=True: the second backward goes through the same graph (exp saved its output)
    L1.backward(retain_graph=True)
    g1 = w.grad.clone()  # clone: the next backward accumulates into w.grad in place
    L2.backward()
    return g1, w.grad


def weighted_backward(w: Tensor, x: Tensor, weights: Tensor) -> Tensor:
    w = w.detach().clone().requires_grad_(True)
    a = w + x.detach()
    b = w + 1
    y0 = a * b
    y1 = a + b
    loss = torch.cat([y0, y1])
    # a non-scalar output needs grad_tensors: the gradient is sum_i weights[i] * dloss[i]/dw
    torch.autograd.backward(loss, grad_tensors=weights.detach())
    return w.grad
