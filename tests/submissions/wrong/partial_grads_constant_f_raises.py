"""Replaces None by zeros but still calls torch.autograd.grad when f uses neither input and its output has no graph."""
EXERCISE = "partial_grads"
MODULE = "grad.py"
PUBLIC = "fail"
MISTAKE = "partial_grads.constant_f"

import torch


def partial_grads(f, x, y):
    x = x.detach().clone().requires_grad_(True)
    y = y.detach().clone().requires_grad_(True)
    gx, gy = torch.autograd.grad(f(x, y), (x, y), allow_unused=True)
    gx = torch.zeros_like(x) if gx is None else gx
    gy = torch.zeros_like(y) if gy is None else gy
    return gx, gy
