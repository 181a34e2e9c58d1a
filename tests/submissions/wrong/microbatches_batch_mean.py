"""Averages each micro-batch's loss over its own rows (.mean()) instead of dividing the sum by the full N."""
EXERCISE = "accumulate_microbatches"
MODULE = "accumulation.py"
PUBLIC = "fail"
MISTAKE = "accumulate_microbatches.batch_mean"


def accumulate_microbatches(w, X, Y, batch_size):
    w = w.detach().clone().requires_grad_(True)
    for start in range(0, X.shape[0], batch_size):
        Xb, Yb = X[start:start + batch_size], Y[start:start + batch_size]
        ((Xb @ w - Yb) ** 2).mean().backward()
    return w.grad
