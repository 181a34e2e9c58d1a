"""Compares the norm with a module-level constant torch.tensor([1000.0]), which lives on the CPU."""
EXERCISE = "dynamic_doubling"
MODULE = "graph.py"
PUBLIC = "fail"
MISTAKE = "dynamic_doubling.wrong_device"
DEVICE = "cuda"
ON_DEVICE = ("RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
             "cuda:0 and cpu!")

import torch

LIMIT = torch.tensor([1000.0])


def dynamic_doubling(a):
    a = a.detach().clone().requires_grad_(True)
    b = a * 2
    steps = 0
    while b.norm() < LIMIT:
        b = b * 2
        steps += 1
    c = b if b.sum() > 0 else 100 * b
    c.sum().backward()
    return c.detach(), a.grad, steps
