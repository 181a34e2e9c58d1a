"""Appends w.grad itself instead of a copy, so the zero_() that follows wipes every recorded row."""
EXERCISE = "grads_per_step"
MODULE = "accumulation.py"
PUBLIC = "fail"
MISTAKE = "grads_per_step.recorded_alias"

import torch


def grads_per_step(w, xs):
    w = w.detach().clone().requires_grad_(True)
    rows = []
    for x in xs:
        ((w + x) * (w + 1)).sum().backward()
        rows.append(w.grad)
        w.grad.zero_()
    if not rows:
        return w.new_zeros((0, *w.shape))
    return torch.stack(rows)
