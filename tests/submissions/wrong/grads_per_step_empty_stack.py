"""Returns torch.stack(rows) unconditionally, which raises for an empty list xs."""
EXERCISE = "grads_per_step"
MODULE = "accumulation.py"
PUBLIC = "fail"
MISTAKE = "grads_per_step.empty_xs"

import torch


def grads_per_step(w, xs):
    w = w.detach().clone().requires_grad_(True)
    rows = []
    for x in xs:
        ((w + x) * (w + 1)).sum().backward()
        rows.append(w.grad.clone())
        w.grad.zero_()
    return torch.stack(rows)
