"""Decorates backward with @once_differentiable, so double backward through SmoothAbs raises."""
EXERCISE = "SmoothAbs"
MODULE = "extensions.py"
PUBLIC = "fail"
MISTAKE = "SmoothAbs.not_differentiable"

import torch
from torch.autograd.function import once_differentiable


class SmoothAbs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, eps):
        y = torch.sqrt(x * x + eps)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        return grad_out * x / y, None
