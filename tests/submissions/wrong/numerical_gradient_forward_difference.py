"""Uses the one-sided difference (f(x + eps) - f(x)) / eps instead of the central difference."""
EXERCISE = "numerical_gradient"
MODULE = "extensions.py"
PUBLIC = "fail"
MISTAKE = "numerical_gradient.forward_difference"

import torch


def numerical_gradient(f, x, eps=1e-6):
    x64 = x.detach().to(torch.float64)
    grad = torch.zeros_like(x64)
    with torch.no_grad():
        fx = f(x64)
        for i in range(x64.numel()):
            e = torch.zeros_like(x64)
            e.view(-1)[i] = eps
            grad.view(-1)[i] = (f(x64 + e) - fx) / eps
    return grad.to(x.dtype)
