"""Differentiates y.sum() instead of using grad_outputs=e_i, so every row is the column sums of the Jacobian."""
EXERCISE = "jacobian_rows"
MODULE = "grad.py"
PUBLIC = "fail"
MISTAKE = "jacobian_rows.grad_of_sum"

import torch


def jacobian_rows(f, x):
    x = x.detach().clone().requires_grad_(True)
    y = f(x)
    if not y.requires_grad:
        return x.new_zeros((y.numel(), x.numel()))
    rows = []
    for i in range(y.numel()):
        (row,) = torch.autograd.grad(y.sum(), x, retain_graph=True)
        rows.append(row)
    return torch.stack(rows)
