"""Detaches the saved output y in backward, so the second derivative misses the d(1/y)/dx term."""
EXERCISE = "SmoothAbs"
MODULE = "extensions.py"
PUBLIC = "fail"
MISTAKE = "SmoothAbs.detached_in_backward"

import torch


class SmoothAbs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, eps):
        y = torch.sqrt(x * x + eps)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        return grad_out * x / y.detach(), None
