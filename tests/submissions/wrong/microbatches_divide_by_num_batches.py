"""Divides each micro-batch mean by the number of micro-batches (the usual loss / accumulation_steps recipe), which is only right when batch_size divides N."""
EXERCISE = "accumulate_microbatches"
MODULE = "accumulation.py"
PUBLIC = "fail"
MISTAKE = "accumulate_microbatches.per_step_scaled"

import math


def accumulate_microbatches(w, X, Y, batch_size):
    w = w.detach().clone().requires_grad_(True)
    steps = math.ceil(X.shape[0] / batch_size)
    for start in range(0, X.shape[0], batch_size):
        Xb, Yb = X[start:start + batch_size], Y[start:start + batch_size]
        (((Xb @ w - Yb) ** 2).mean() / steps).backward()
    return w.grad
