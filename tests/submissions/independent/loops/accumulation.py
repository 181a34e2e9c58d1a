import torch


def grads_per_step(w, xs):
    param = w.detach().clone()
    param.requires_grad = True
    out = torch.zeros((len(xs),) + tuple(w.shape), dtype=w.dtype, device=w.device)
    for k in range(len(xs)):
        param.grad = None
        value = torch.sum((param + xs[k].detach()) * (param + 1))
        value.backward()
        out[k] = param.grad
    return out


def accumulate_microbatches(w, X, Y, batch_size):
    param = w.detach().clone()
    param.requires_grad = True
    total = len(X)
    k = 0
    while k < total:
        xb = X[k:k + batch_size].detach()
        yb = Y[k:k + batch_size].detach()
        residual = torch.matmul(xb, param) - yb
        (torch.dot(residual, residual) / total).backward()
        k += batch_size
    if param.grad is None:
        return torch.zeros_like(w)
    return param.grad


def gd_fit(X, Y, w0, lr, steps):
    current = w0.detach().clone()
    for _ in range(steps):
        current.requires_grad = True
        err = torch.matmul(X.detach(), current) - Y.detach()
        (g,) = torch.autograd.grad(torch.mean(err * err), current)
        current = (current - lr * g).detach()
    return current
