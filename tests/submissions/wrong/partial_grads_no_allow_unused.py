"""Calls torch.autograd.grad without allow_unused=True, which raises when f ignores one of its inputs."""
EXERCISE = "partial_grads"
MODULE = "grad.py"
PUBLIC = "fail"
MISTAKE = "partial_grads.no_allow_unused"

import torch


def partial_grads(f, x, y):
    x = x.detach().clone().requires_grad_(True)
    y = y.detach().clone().requires_grad_(True)
    gx, gy = torch.autograd.grad(f(x, y), (x, y))
    return gx, gy
