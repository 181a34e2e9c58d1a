"""Computes the out-of-place sum into torch.empty(a.shape), a float32 buffer whatever a's dtype."""
EXERCISE = "add_into"
MODULE = "inplace.py"
PUBLIC = "fail"
MISTAKE = "add_into.float32_result"

import torch


def add_into(a, b, inplace):
    if inplace:
        a += b
        return a
    return torch.add(a, b, out=torch.empty(a.shape))
