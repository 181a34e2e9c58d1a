"""Passes allow_unused=True but returns the None it gives for an unused input instead of zeros."""
EXERCISE = "partial_grads"
MODULE = "grad.py"
PUBLIC = "fail"
MISTAKE = "partial_grads.returned_none"

import torch


def partial_grads(f, x, y):
    x = x.detach().clone().requires_grad_(True)
    y = y.detach().clone().requires_grad_(True)
    out = f(x, y)
    return torch.autograd.grad(out, (x, y), allow_unused=True)
