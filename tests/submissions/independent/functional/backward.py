import torch
from torch.func import grad as fgrad


def two_losses_grad(w, x):
    def first(v):
        return torch.exp(x * v).sum()

    def second(v):
        return torch.exp(2 * x * v).sum()

    g_first = fgrad(first)(w.detach())
    return g_first, g_first + fgrad(second)(w.detach())


def weighted_backward(w, x, weights):
    v = w.detach().requires_grad_()
    n = len(v)
    stacked = torch.stack(((v + x) * (v + 1), (v + x) + (v + 1)))
    (g,) = torch.autograd.grad(stacked.reshape(-1), v, grad_outputs=weights.reshape(2, n).reshape(-1))
    return g
