"""Records g1 = w.grad without clone(), so the second backward, which accumulates in place, changes g1 too."""
EXERCISE = "two_losses_grad"
MODULE = "backward.py"
PUBLIC = "fail"
MISTAKE = "two_losses_grad.aliased_grad"

import torch


def two_losses_grad(w, x):
    w = w.detach().clone().requires_grad_(True)
    h = torch.exp(x * w)
    L1 = h.sum()
    L2 = (h ** 2).sum()
    L1.backward(retain_graph=True)
    g1 = w.grad
    L2.backward()
    return g1, w.grad
