import torch
from torch.func import vjp


def add_into(a, b, inplace):
    result = a.add_(b) if inplace else a.add(b)
    return result


def safe_add_(w, delta):
    before = torch.is_grad_enabled()
    torch.set_grad_enabled(False)
    try:
        w[...] = w + delta
    finally:
        torch.set_grad_enabled(before)
    return w


def shifted_sigmoid_and_grad(x, shift):
    value, pullback = vjp(lambda t: t.sigmoid() + shift, x.detach())
    (g,) = pullback(torch.ones_like(value))
    return value, g
