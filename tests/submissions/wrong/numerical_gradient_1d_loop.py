"""Loops over range(len(x)) and perturbs x[i], which only works for 1-dim x (a 0-dim x raises, a matrix perturbs whole rows)."""
EXERCISE = "numerical_gradient"
MODULE = "extensions.py"
PUBLIC = "fail"
MISTAKE = "numerical_gradient.one_dim_loop"

import torch


def numerical_gradient(f, x, eps=1e-6):
    x64 = x.detach().double()
    grad = torch.zeros_like(x64)
    with torch.no_grad():
        for i in range(len(x64)):
            e = torch.zeros_like(x64)
            e[i] = eps
            grad[i] = (f(x64 + e) - f(x64 - e)) / (2 * eps)
    return grad.to(x.dtype)
