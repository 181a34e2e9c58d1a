"""Zeroes w.grad between the two backward calls out of habit, so g12 is only dL2/dw instead of the accumulated sum."""
EXERCISE = "two_losses_grad"
MODULE = "backward.py"
PUBLIC = "fail"
MISTAKE = "two_losses_grad.not_accumulated"

import torch


def two_losses_grad(w, x):
    w = w.detach().clone().requires_grad_(True)
    h = torch.exp(x * w)
    L1 = h.sum()
    L2 = (h ** 2).sum()
    L1.backward(retain_graph=True)
    g1 = w.grad.clone()
    w.grad.zero_()
    L2.backward()
    return g1, w.grad
