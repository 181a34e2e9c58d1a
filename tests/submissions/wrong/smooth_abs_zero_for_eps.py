"""Returns a zero tensor instead of None as the gradient for eps, which is not a tensor input, so backward raises."""
EXERCISE = "SmoothAbs"
MODULE = "extensions.py"
PUBLIC = "fail"
MISTAKE = "SmoothAbs.eps_gradient_not_none"

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
        return grad_out * x / y, torch.tensor(0.0)
