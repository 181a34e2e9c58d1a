"""Uses ((a - 1) ** 2).sum() as the loss instead of the mean over all elements."""
EXERCISE = "intermediate_grads"
MODULE = "graph.py"
PUBLIC = "fail"
MISTAKE = "intermediate_grads.wrong_loss"

import torch


def intermediate_grads(x, w, b):
    w = w.detach().clone().requires_grad_(True)
    b = b.detach().clone().requires_grad_(True)
    z = x @ w + b
    a = torch.relu(z)
    z.retain_grad()
    a.retain_grad()
    ((a - 1) ** 2).sum().backward()
    return {"z": z.grad, "a": a.grad, "w": w.grad, "b": b.grad}
