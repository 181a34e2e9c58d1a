"""Updates with w = w - lr * w.grad outside torch.no_grad(), which replaces the leaf by a non-leaf whose .grad stays None."""
EXERCISE = "gd_fit"
MODULE = "accumulation.py"
PUBLIC = "fail"
MISTAKE = "gd_fit.rebind"


def gd_fit(X, Y, w0, lr, steps):
    w = w0.detach().clone().requires_grad_(True)
    for _ in range(steps):
        ((X @ w - Y) ** 2).mean().backward()
        w = w - lr * w.grad
    return w.detach()
