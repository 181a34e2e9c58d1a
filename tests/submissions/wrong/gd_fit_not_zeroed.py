"""Never zeroes w.grad after an update, so every step uses the sum of all gradients so far."""
EXERCISE = "gd_fit"
MODULE = "accumulation.py"
PUBLIC = "fail"
MISTAKE = "gd_fit.not_zeroed"

import torch


def gd_fit(X, Y, w0, lr, steps):
    w = w0.detach().clone().requires_grad_(True)
    for _ in range(steps):
        ((X @ w - Y) ** 2).mean().backward()
        with torch.no_grad():
            w -= lr * w.grad
    return w.detach()
