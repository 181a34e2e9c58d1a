"""Skips relu's backward and returns a.grad as dloss/dz, which only holds where z > 0."""
EXERCISE = "intermediate_grads"
MODULE = "graph.py"
PUBLIC = "fail"
MISTAKE = "intermediate_grads.relu_skipped"

import torch


def intermediate_grads(x, w, b):
    w = w.detach().clone().requires_grad_(True)
    b = b.detach().clone().requires_grad_(True)
    z = x @ w + b
    a = torch.relu(z)
    a.retain_grad()
    ((a - 1) ** 2).mean().backward()
    return {"z": a.grad, "a": a.grad, "w": w.grad, "b": b.grad}
