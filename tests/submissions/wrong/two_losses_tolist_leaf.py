"""Builds the leaf with torch.tensor(w.tolist(), requires_grad=True), which has the default dtype float32 whatever w's dtype."""
EXERCISE = "two_losses_grad"
MODULE = "backward.py"
PUBLIC = "fail"
MISTAKE = "two_losses_grad.float32_result"

import torch


def two_losses_grad(w, x):
    w = torch.tensor(w.tolist(), requires_grad=True)
    h = torch.exp(x * w)
    L1 = h.sum()
    L2 = (h ** 2).sum()
    L1.backward(retain_graph=True)
    g1 = w.grad.clone()
    L2.backward()
    return g1, w.grad
