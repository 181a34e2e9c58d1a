"""Clears the caller's w.grad "so that old gradients do not leak into step 0", changing the argument."""
EXERCISE = "grads_per_step"
MODULE = "accumulation.py"
PUBLIC = "fail"
MISTAKE = "grads_per_step.argument_grad_changed"

import torch


def grads_per_step(w, xs):
    w.grad = None
    w = w.detach().clone().requires_grad_(True)
    rows = []
    for x in xs:
        ((w + x) * (w + 1)).sum().backward()
        rows.append(w.grad.clone())
        w.grad.zero_()
    if not rows:
        return w.new_zeros((0, *w.shape))
    return torch.stack(rows)
