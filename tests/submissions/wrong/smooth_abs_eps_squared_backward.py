"""Writes the backward as x / sqrt(x ** 2 + eps ** 2), the other common smooth-abs convention, which only agrees with the forward when eps = 1."""
EXERCISE = "SmoothAbs"
MODULE = "extensions.py"
PUBLIC = "fail"
MISTAKE = "SmoothAbs.eps_squared"

import torch


class SmoothAbs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, eps):
        ctx.save_for_backward(x)
        ctx.eps = eps
        return torch.sqrt(x * x + eps)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * x / torch.sqrt(x * x + ctx.eps ** 2), None
