"""Allocates the Jacobian with torch.zeros(m, n, dtype=x.dtype), on the default device: a CPU result for a GPU x."""
EXERCISE = "jacobian_rows"
MODULE = "grad.py"
PUBLIC = "fail"
MISTAKE = "jacobian_rows.wrong_device"
DEVICE = "cuda"
ON_DEVICE = "returns a tensor on cpu"

import torch


def jacobian_rows(f, x):
    x_ = x.detach().clone().requires_grad_(True)
    y = f(x_)
    J = torch.zeros(y.numel(), x.numel(), dtype=x.dtype)
    if not y.requires_grad:
        return J
    for i in range(y.numel()):
        e = torch.zeros_like(y)
        e.view(-1)[i] = 1
        (row,) = torch.autograd.grad(y, x_, grad_outputs=e, retain_graph=True, allow_unused=True)
        if row is not None:
            J[i] = row.reshape(-1)
    return J
