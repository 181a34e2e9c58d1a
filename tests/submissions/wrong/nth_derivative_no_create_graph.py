"""Differentiates repeatedly without create_graph=True, so the first derivative has no graph to differentiate again."""
EXERCISE = "nth_derivative"
MODULE = "grad.py"
PUBLIC = "fail"
MISTAKE = "nth_derivative.graph_dropped"

import torch


def nth_derivative(f, x, n):
    if n < 0:
        raise ValueError("n must be >= 0")
    x = x.detach().clone().requires_grad_(True)
    d = f(x)
    for _ in range(n):
        if not d.requires_grad:
            return torch.zeros_like(x)
        (d,) = torch.autograd.grad(d, x, grad_outputs=torch.ones_like(d))
    return d.detach()
