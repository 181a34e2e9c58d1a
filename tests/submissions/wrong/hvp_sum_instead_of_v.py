"""Differentiates g.sum() instead of passing grad_outputs=v, which gives H @ ones whatever v is."""
EXERCISE = "hvp"
MODULE = "grad.py"
PUBLIC = "fail"
MISTAKE = "hvp.hvp_of_sum"

import torch


def hvp(f, x, v):
    x = x.detach().clone().requires_grad_(True)
    y = f(x)
    if not y.requires_grad:
        return torch.zeros_like(x)
    (g,) = torch.autograd.grad(y, x, create_graph=True)
    if not g.requires_grad:
        return torch.zeros_like(x)
    (hv,) = torch.autograd.grad(g.sum(), x)
    return hv
