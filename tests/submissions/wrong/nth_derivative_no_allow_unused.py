"""Stops when a derivative no longer requires grad, but calls torch.autograd.grad without allow_unused=True, which raises when the derivative requires grad only through something other than x."""
EXERCISE = "nth_derivative"
MODULE = "grad.py"
PUBLIC = "fail"
MISTAKE = "nth_derivative.no_allow_unused"

import torch


def nth_derivative(f, x, n):
    if n < 0:
        raise ValueError("n must be >= 0")
    x = x.detach().clone().requires_grad_(True)
    d = f(x)
    for _ in range(n):
        if not d.requires_grad:
            return torch.zeros_like(x)
        (d,) = torch.autograd.grad(d, x, grad_outputs=torch.ones_like(d), create_graph=True)
    return d.detach()
