"""Uses x.sign(), the derivative of |x|, in backward instead of x / sqrt(x ** 2 + eps)."""
EXERCISE = "SmoothAbs"
MODULE = "extensions.py"
PUBLIC = "fail"
MISTAKE = "SmoothAbs.sign_instead"

import torch


class SmoothAbs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, eps):
        ctx.save_for_backward(x)
        return torch.sqrt(x * x + eps)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * x.sign(), None
