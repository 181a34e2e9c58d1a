"""Silences the version-counter error by shifting s.data in place, so backward uses the shifted output and g is wrong."""
EXERCISE = "shifted_sigmoid_and_grad"
MODULE = "inplace.py"
PUBLIC = "fail"
MISTAKE = "shifted_sigmoid_and_grad.shifted_saved_output"

import torch


def shifted_sigmoid_and_grad(x, shift):
    x = x.detach().clone().requires_grad_(True)
    s = torch.sigmoid(x)
    s.data.add_(shift)
    s.sum().backward()
    return s.detach(), x.grad
