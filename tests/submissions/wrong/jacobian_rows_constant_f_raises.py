"""Never checks whether y has a graph, so a constant f makes torch.autograd.grad raise instead of giving zero rows."""
EXERCISE = "jacobian_rows"
MODULE = "grad.py"
PUBLIC = "fail"
MISTAKE = "jacobian_rows.constant_f"

import torch


def jacobian_rows(f, x):
    x = x.detach().clone().requires_grad_(True)
    y = f(x)
    rows = []
    for i in range(y.numel()):
        e = torch.zeros_like(y)
        e[i] = 1
        (row,) = torch.autograd.grad(y, x, grad_outputs=e, retain_graph=True)
        rows.append(row)
    return torch.stack(rows)
