"""Keeps calling torch.autograd.grad after the derivative stopped depending on x, which raises instead of giving zeros."""
EXERCISE = "nth_derivative"
MODULE = "grad.py"
PUBLIC = "fail"
MISTAKE = "nth_derivative.graph_runs_out"

import torch


def nth_derivative(f, x, n):
    if n < 0:
        raise ValueError("n must be >= 0")
    x = x.detach().clone().requires_grad_(True)
    d = f(x)
    for _ in range(n):
        (d,) = torch.autograd.grad(d, x, grad_outputs=torch.ones_like(d), create_graph=True)
    return d.detach()
