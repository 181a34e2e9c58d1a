"""Omits retain_graph=True, so the second row's backward goes through a graph the first one freed."""
EXERCISE = "jacobian_rows"
MODULE = "grad.py"
PUBLIC = "fail"
MISTAKE = "jacobian_rows.no_retain_graph"

import torch


def jacobian_rows(f, x):
    x = x.detach().clone().requires_grad_(True)
    y = f(x)
    J = x.new_zeros((y.numel(), x.numel()))
    if not y.requires_grad:
        return J
    for i in range(y.numel()):
        e = torch.zeros_like(y)
        e[i] = 1
        (J[i],) = torch.autograd.grad(y, x, grad_outputs=e)
    return J
