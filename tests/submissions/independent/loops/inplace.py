import torch


def add_into(a, b, inplace):
    if not inplace:
        return torch.add(a, b)
    a.add_(b)
    return a


def safe_add_(w, delta):
    with torch.no_grad():
        w.copy_(w + delta)
    return w


def shifted_sigmoid_and_grad(x, shift):
    leaf = x.detach().clone().requires_grad_()
    out = 1 / (1 + torch.exp(-leaf)) + shift
    out.backward(torch.ones_like(out))
    return out.detach(), leaf.grad
