"""Repairs the version-counter error by deleting the in-place shift, so s no longer includes the shift."""
EXERCISE = "shifted_sigmoid_and_grad"
MODULE = "inplace.py"
PUBLIC = "fail"
MISTAKE = "shifted_sigmoid_and_grad.no_shift_in_s"

import torch


def shifted_sigmoid_and_grad(x, shift):
    x = x.detach().clone().requires_grad_(True)
    s = torch.sigmoid(x)
    s.sum().backward()
    return s.detach(), x.grad
