"""Calls L1.backward() without retain_graph=True, so the second backward through the same graph raises."""
EXERCISE = "two_losses_grad"
MODULE = "backward.py"
PUBLIC = "fail"
MISTAKE = "two_losses_grad.no_retain_graph"

import torch


def two_losses_grad(w, x):
    w = w.detach().clone().requires_grad_(True)
    h = torch.exp(x * w)
    L1 = h.sum()
    L2 = (h ** 2).sum()
    L1.backward()
    g1 = w.grad.clone()
    L2.backward()
    return g1, w.grad
