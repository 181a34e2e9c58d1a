"""Builds loss with torch.stack([y0, y1], dim=1).flatten(), which interleaves y0 and y1 instead of concatenating them."""
EXERCISE = "weighted_backward"
MODULE = "backward.py"
PUBLIC = "fail"
MISTAKE = "weighted_backward.interleaved"

import torch


def weighted_backward(w, x, weights):
    w = w.detach().clone().requires_grad_(True)
    a = w + x
    b = w + 1
    loss = torch.stack([a * b, a + b], dim=1).flatten()
    loss.backward(weights)
    return w.grad
