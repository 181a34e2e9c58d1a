"""Calls x.requires_grad_() on the caller's tensors instead of on copies, changing the arguments."""
EXERCISE = "partial_grads"
MODULE = "grad.py"
PUBLIC = "fail"
MISTAKE = "partial_grads.argument_requires_grad_set"

import torch


def partial_grads(f, x, y):
    x.requires_grad_(True)
    y.requires_grad_(True)
    out = f(x, y)
    if not out.requires_grad:
        return torch.zeros_like(x), torch.zeros_like(y)
    gx, gy = torch.autograd.grad(out, (x, y), allow_unused=True)
    gx = torch.zeros_like(x) if gx is None else gx
    gy = torch.zeros_like(y) if gy is None else gy
    return gx, gy
