"""Reduces the vector loss with .sum() before backward, which is grad_tensors of all ones, ignoring the weights."""
EXERCISE = "weighted_backward"
MODULE = "backward.py"
PUBLIC = "fail"
MISTAKE = "weighted_backward.unweighted"

import torch


def weighted_backward(w, x, weights):
    w = w.detach().clone().requires_grad_(True)
    a = w + x
    b = w + 1
    loss = torch.cat([a * b, a + b])
    loss.sum().backward()
    return w.grad
