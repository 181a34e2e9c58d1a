"""Wraps backward's computation in torch.no_grad(), so the first derivative has no graph and the second derivative fails."""
EXERCISE = "SmoothAbs"
MODULE = "extensions.py"
PUBLIC = "fail"
MISTAKE = "SmoothAbs.not_differentiable"

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
        with torch.no_grad():
            return grad_out * x / y, None
