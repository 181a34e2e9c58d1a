"""Short-cuts steps == 0 with return w0, handing back the caller's own tensor instead of a copy."""
EXERCISE = "gd_fit"
MODULE = "accumulation.py"
PUBLIC = "fail"
MISTAKE = "gd_fit.returned_argument"

import torch


def gd_fit(X, Y, w0, lr, steps):
    if steps == 0:
        return w0
    w = w0.detach().clone().requires_grad_(True)
    for _ in range(steps):
        ((X @ w - Y) ** 2).mean().backward()
        with torch.no_grad():
            w -= lr * w.grad
        w.grad.zero_()
    return w.detach()
