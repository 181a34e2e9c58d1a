"""Takes the first gradient without create_graph=True, so it cannot be differentiated again."""
EXERCISE = "hvp"
MODULE = "grad.py"
PUBLIC = "fail"
MISTAKE = "hvp.no_create_graph"

import torch


def hvp(f, x, v):
    x = x.detach().clone().requires_grad_(True)
    (g,) = torch.autograd.grad(f(x), x)
    (hv,) = torch.autograd.grad(g, x, grad_outputs=v)
    return hv
