import torch


def two_losses_grad(w, x):
    leaf = w.detach().clone()
    leaf.requires_grad = True
    e = (leaf * x).exp()
    first = torch.sum(e)
    second = torch.sum(e * e)
    first.backward(retain_graph=True)
    after_one = leaf.grad.detach().clone()
    second.backward()
    return after_one, leaf.grad.detach()


def weighted_backward(w, x, weights):
    m = w.shape[0]
    p = w.detach().clone()
    p.requires_grad = True
    total = 0
    for i in range(m):
        s = p[i] + x[i]
        t = p[i] + 1
        total = total + weights[i] * (s * t) + weights[m + i] * (s + t)
    total.backward()
    return p.grad.detach()
