"""Evaluates f in x's own dtype, so a float32 x gets differences that are mostly rounding error."""
EXERCISE = "numerical_gradient"
MODULE = "extensions.py"
PUBLIC = "fail"
MISTAKE = "numerical_gradient.float32_evaluation"

import torch


def numerical_gradient(f, x, eps=1e-6):
    grad = torch.zeros_like(x)
    with torch.no_grad():
        for i in range(x.numel()):
            e = torch.zeros_like(x)
            e.view(-1)[i] = eps
            grad.view(-1)[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return grad
