"""Never zeroes w.grad between steps, so each recorded row is the running sum of all gradients so far."""
EXERCISE = "grads_per_step"
MODULE = "accumulation.py"
PUBLIC = "fail"
MISTAKE = "grads_per_step.not_zeroed"

import torch


def grads_per_step(w, xs):
    w = w.detach().clone().requires_grad_(True)
    rows = []
    for x in xs:
        ((w + x) * (w + 1)).sum().backward()
        rows.append(w.grad.clone())
    if not rows:
        return w.new_zeros((0, *w.shape))
    return torch.stack(rows)
