"""Calls .float() on the copies "to be safe", so float64 inputs get float32 gradients back."""
EXERCISE = "intermediate_grads"
MODULE = "graph.py"
PUBLIC = "fail"
MISTAKE = "intermediate_grads.float32_result"

import torch


def intermediate_grads(x, w, b):
    x = x.float()
    w = w.detach().clone().float().requires_grad_(True)
    b = b.detach().clone().float().requires_grad_(True)
    z = x @ w + b
    a = torch.relu(z)
    z.retain_grad()
    a.retain_grad()
    ((a - 1) ** 2).mean().backward()
    return {"z": z.grad, "a": a.grad, "w": w.grad, "b": b.grad}
