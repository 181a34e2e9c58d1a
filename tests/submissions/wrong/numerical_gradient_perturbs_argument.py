"""Perturbs x64 = x.to(torch.float64) in place and restores it, but for a float64 x that is the caller's tensor itself."""
EXERCISE = "numerical_gradient"
MODULE = "extensions.py"
PUBLIC = "fail"
MISTAKE = "numerical_gradient.argument_changed_in_place"

import torch


def numerical_gradient(f, x, eps=1e-6):
    x64 = x.to(torch.float64)
    grad = torch.zeros_like(x64)
    flat = x64.view(-1)
    with torch.no_grad():
        for i in range(flat.numel()):
            flat[i] += eps
            f_plus = f(x64)
            flat[i] -= 2 * eps
            f_minus = f(x64)
            flat[i] += eps
            grad.view(-1)[i] = (f_plus - f_minus) / (2 * eps)
    return grad.to(x.dtype)
