"""Overrides apply with plain torch operations, hiding a backward that uses x.sign() (the derivative of |x|)."""
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

    @classmethod
    def apply(cls, x, eps):  # torch differentiates this, not backward: the probes use Function's own apply
        return torch.sqrt(x * x + eps)
