"""Builds each one-hot step with torch.tensor([...]) and no device=, a CPU tensor added to x on the GPU."""
EXERCISE = "numerical_gradient"
MODULE = "extensions.py"
PUBLIC = "fail"
MISTAKE = "numerical_gradient.wrong_device"
DEVICE = "cuda"
ON_DEVICE = ("RuntimeError: Expected all tensors to be on the same device, but found at least two devices, "
             "cuda:0 and cpu!")

import torch


def numerical_gradient(f, x, eps=1e-6):
    x64 = x.detach().to(torch.float64)
    grad = x64.new_zeros(x64.shape)
    n = x64.numel()
    with torch.no_grad():
        for i in range(n):
            e = torch.tensor([eps if j == i else 0.0 for j in range(n)], dtype=torch.float64).reshape(x64.shape)
            grad.view(-1)[i] = (f(x64 + e) - f(x64 - e)) / (2 * eps)
    return grad.to(x.dtype)
