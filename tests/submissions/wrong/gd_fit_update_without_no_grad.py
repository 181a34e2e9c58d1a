"""Does w -= lr * w.grad outside torch.no_grad(): an in-place change of a leaf that requires grad raises."""
EXERCISE = "gd_fit"
MODULE = "accumulation.py"
PUBLIC = "fail"
MISTAKE = "gd_fit.update_outside_no_grad"


def gd_fit(X, Y, w0, lr, steps):
    w = w0.detach().clone().requires_grad_(True)
    for _ in range(steps):
        ((X @ w - Y) ** 2).mean().backward()
        w -= lr * w.grad
        w.grad.zero_()
    return w.detach()
