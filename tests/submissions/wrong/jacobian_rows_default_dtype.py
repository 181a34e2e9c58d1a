"""Allocates the Jacobian with torch.zeros(m, n), which has the default dtype float32 instead of x's dtype."""
EXERCISE = "jacobian_rows"
MODULE = "grad.py"
PUBLIC = "fail"
MISTAKE = "jacobian_rows.float32_result"

import torch


def jacobian_rows(f, x):
    x = x.detach().clone().requires_grad_(True)
    y = f(x)
    J = torch.zeros(y.numel(), x.numel())
    if not y.requires_grad:
        return J
    for i in range(y.numel()):
        e = torch.zeros_like(y)
        e[i] = 1
        (row,) = torch.autograd.grad(y, x, grad_outputs=e, retain_graph=True)
        J[i] = row
    return J
