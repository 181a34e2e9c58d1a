"""Keeps the in-place shift in another form, s += shift on sigmoid's saved output, so backward still raises."""
EXERCISE = "shifted_sigmoid_and_grad"
MODULE = "inplace.py"
PUBLIC = "fail"
MISTAKE = "shifted_sigmoid_and_grad.inplace_shift"

import torch


def shifted_sigmoid_and_grad(x, shift):
    x = x.detach().clone().requires_grad_(True)
    s = torch.sigmoid(x)
    s += shift
    s.sum().backward()
    return s.detach(), x.grad
