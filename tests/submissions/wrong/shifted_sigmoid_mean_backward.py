"""Backpropagates s.mean() instead of s.sum(), so g is divided by the number of elements."""
EXERCISE = "shifted_sigmoid_and_grad"
MODULE = "inplace.py"
PUBLIC = "fail"
MISTAKE = "shifted_sigmoid_and_grad.mean_not_sum"

import torch


def shifted_sigmoid_and_grad(x, shift):
    x = x.detach().clone().requires_grad_(True)
    s = torch.sigmoid(x) + shift
    s.mean().backward()
    return s.detach(), x.grad
