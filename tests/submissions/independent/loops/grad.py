import torch


def partial_grads(f, x, y):
    a = x.detach().clone().requires_grad_()
    b = y.detach().clone().requires_grad_()
    out = f(a, b)
    if out.requires_grad:
        out.backward()
    ga = a.grad if a.grad is not None else torch.zeros_like(x)
    gb = b.grad if b.grad is not None else torch.zeros_like(y)
    return ga.detach(), gb.detach()


def hvp(f, x, v):
    n = x.numel()
    result = torch.zeros_like(x).reshape(-1)
    p = x.detach().clone().requires_grad_()
    y = f(p)
    if not y.requires_grad:
        return result.reshape(x.shape)
    g = torch.autograd.grad(y, p, create_graph=True, allow_unused=True)[0]
    if g is None or not g.requires_grad:
        return result.reshape(x.shape)
    g = g.reshape(-1)
    for i in range(n):
        row = torch.autograd.grad(g[i], p, retain_graph=True, allow_unused=True)[0]
        if row is not None:
            result[i] = (row.reshape(-1) * v.reshape(-1)).sum()
    return result.reshape(x.shape).detach()


def nth_derivative(f, x, n):
    if n < 0:
        raise ValueError("n must not be negative")
    point = x.detach().clone().requires_grad_()
    current = f(point)
    k = 0
    while k < n:
        if not current.requires_grad:
            return torch.zeros_like(x)
        nxt = torch.autograd.grad(current.sum(), point, create_graph=True, allow_unused=True)[0]
        if nxt is None:
            return torch.zeros_like(x)
        current = nxt
        k += 1
    return current.detach()


def jacobian_rows(f, x):
    p = x.detach().clone().requires_grad_()
    out = f(p).reshape(-1)
    rows = []
    for i in range(out.numel()):
        if out.requires_grad:
            g = torch.autograd.grad(out[i], p, retain_graph=True, allow_unused=True)[0]
        else:
            g = None
        rows.append(torch.zeros(x.numel(), dtype=x.dtype, device=x.device) if g is None else g.reshape(-1))
    if not rows:
        return torch.zeros((0, x.numel()), dtype=x.dtype, device=x.device)
    return torch.stack(rows)
