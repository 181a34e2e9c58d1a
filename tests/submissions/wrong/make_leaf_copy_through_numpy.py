"""Copies t through NumPy (t.detach().numpy()), which only works for tensors in CPU memory."""
EXERCISE = "make_leaf"
MODULE = "graph.py"
PUBLIC = "fail"
MISTAKE = "make_leaf.numpy_on_gpu"
DEVICE = "cuda"
ON_DEVICE = ("TypeError: can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor "
             "to host memory first.")

import torch


def make_leaf(t, dtype=None, device=None):
    copy = torch.from_numpy(t.detach().numpy().copy())  # a copy, so it never shares t's storage
    return copy.to(device=device or t.device, dtype=dtype or t.dtype).requires_grad_(True)
