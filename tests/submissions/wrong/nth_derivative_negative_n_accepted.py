"""Does not reject n < 0: range(n) is empty, so a negative n silently returns f(x)."""
EXERCISE = "nth_derivative"
MODULE = "grad.py"
PUBLIC = "fail"
MISTAKE = "nth_derivative.negative_n_accepted"

import torch


def nth_derivative(f, x, n):
    x = x.detach().clone().requires_grad_(True)
    d = f(x)
    for _ in range(n):
        if not d.requires_grad:
            return torch.zeros_like(x)
        (d,) = torch.autograd.grad(d, x, grad_outputs=torch.ones_like(d), create_graph=True, allow_unused=True)
        if d is None:
            return torch.zeros_like(x)
    return d.detach()
