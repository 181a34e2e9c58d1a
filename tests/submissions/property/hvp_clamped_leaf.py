"""Makes the leaf copy with clamp(min=1e-12) (a guard copied from a log-barrier exercise): right wherever x > 0."""
EXERCISE = "hvp"
MODULE = "grad.py"

import torch


def hvp(f, x, v):
    x = x.detach().clamp(min=1e-12).requires_grad_(True)
    y = f(x)
    if not y.requires_grad:
        return torch.zeros_like(x)
    (g,) = torch.autograd.grad(y, x, create_graph=True)
    if not g.requires_grad:
        return torch.zeros_like(x)
    (hv,) = torch.autograd.grad(g, x, grad_outputs=v)
    return hv.detach()
