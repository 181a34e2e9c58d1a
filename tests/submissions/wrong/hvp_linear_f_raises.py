"""Does double backward correctly but never handles a linear or constant f, whose gradient has no graph (it raises)."""
EXERCISE = "hvp"
MODULE = "grad.py"
PUBLIC = "fail"
MISTAKE = "hvp.linear_f"

import torch


def hvp(f, x, v):
    x = x.detach().clone().requires_grad_(True)
    (g,) = torch.autograd.grad(f(x), x, create_graph=True)
    (hv,) = torch.autograd.grad(g, x, grad_outputs=v)
    return hv
