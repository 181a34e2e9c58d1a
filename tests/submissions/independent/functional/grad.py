import torch
import torch.func as tf


def partial_grads(f, x, y):
    inputs = [t.detach().requires_grad_() for t in (x, y)]
    value = f(*inputs)
    if not value.requires_grad:
        return tuple(torch.zeros_like(t) for t in (x, y))
    grads = torch.autograd.grad(value, inputs, allow_unused=True, materialize_grads=True)
    return grads[0], grads[1]


def hvp(f, x, v):
    try:
        _, out = tf.jvp(tf.grad(f), (x.detach(),), (v.detach(),))
    except RuntimeError:
        return torch.zeros_like(x)
    return out


def nth_derivative(f, x, n):
    if n < 0:
        raise ValueError(f"negative order {n}")
    g = f
    for _ in range(n):
        g = tf.grad(lambda t, h=g: h(t).sum())
    try:
        return g(x.detach()).detach()
    except RuntimeError:
        return torch.zeros_like(x)


def jacobian_rows(f, x):
    y = f(x.detach())
    try:
        jac = tf.jacrev(f)(x.detach())
    except RuntimeError:
        jac = torch.zeros(y.shape + x.shape, dtype=x.dtype, device=x.device)
    return jac.reshape(y.numel(), x.numel())
