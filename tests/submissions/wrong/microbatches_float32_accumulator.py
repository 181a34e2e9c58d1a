"""Accumulates the micro-batch gradients by hand into torch.zeros(d), a float32 buffer, so float64 inputs get a float32 result."""
EXERCISE = "accumulate_microbatches"
MODULE = "accumulation.py"
PUBLIC = "fail"
MISTAKE = "accumulate_microbatches.float32_result"

import torch


def accumulate_microbatches(w, X, Y, batch_size):
    N = X.shape[0]
    total = torch.zeros(w.shape[0])
    for start in range(0, N, batch_size):
        wb = w.detach().clone().requires_grad_(True)
        Xb, Yb = X[start:start + batch_size], Y[start:start + batch_size]
        (((Xb @ wb - Yb) ** 2).sum() / N).backward()
        total += wb.grad
    return total
