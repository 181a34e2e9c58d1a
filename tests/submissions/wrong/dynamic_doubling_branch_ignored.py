"""Writes the gradient by hand as 2 ** (steps + 1), forgetting that the 100 * b branch also scales it."""
EXERCISE = "dynamic_doubling"
MODULE = "graph.py"
PUBLIC = "fail"
MISTAKE = "dynamic_doubling.unscaled_branch"

import torch


def dynamic_doubling(a):
    b = a * 2
    steps = 0
    while b.norm() < 1000:
        b = b * 2
        steps += 1
    c = b if b.sum() > 0 else 100 * b
    grad = torch.full_like(a, 2.0 ** (steps + 1))  # c = 2 ** (steps + 1) * a
    return c, grad, steps
