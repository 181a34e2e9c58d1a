"""Reads z.grad and a.grad after backward without calling retain_grad(), so they are None."""
EXERCISE = "intermediate_grads"
MODULE = "graph.py"
PUBLIC = "fail"
MISTAKE = "intermediate_grads.no_retain_grad"

import torch


def intermediate_grads(x, w, b):
    w = w.detach().clone().requires_grad_(True)
    b = b.detach().clone().requires_grad_(True)
    z = x @ w + b
    a = torch.relu(z)
    loss = ((a - 1) ** 2).mean()
    loss.backward()
    return {"z": z.grad, "a": a.grad, "w": w.grad, "b": b.grad}
