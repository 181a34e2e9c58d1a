"""Differentiates f(x) afresh in every loop step instead of the previous derivative, so any n >= 1 gives the first derivative."""
EXERCISE = "nth_derivative"
MODULE = "grad.py"
PUBLIC = "fail"
MISTAKE = "nth_derivative.first_derivative_only"

import torch


def nth_derivative(f, x, n):
    if n < 0:
        raise ValueError("n must be >= 0")
    x = x.detach().clone().requires_grad_(True)
    d = f(x)
    for _ in range(n):
        y = f(x)
        if not y.requires_grad:
            return torch.zeros_like(x)
        (d,) = torch.autograd.grad(y, x, grad_outputs=torch.ones_like(y), create_graph=True)
    return d.detach()
