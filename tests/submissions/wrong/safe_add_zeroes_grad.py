"""Zeroes w.grad after the update, optimizer-style, although the spec says .grad stays untouched."""
EXERCISE = "safe_add_"
MODULE = "inplace.py"
PUBLIC = "fail"
MISTAKE = "safe_add_.grad_touched"

import torch


def safe_add_(w, delta):
    with torch.no_grad():
        w.add_(delta)
    if w.grad is not None:
        w.grad.zero_()
    return w
