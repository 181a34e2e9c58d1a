

# ---- attack: return things that are not data ------------------------------------------------------------
import sys


def hvp(f, x, v):
    return (t for t in [x, v])  # a generator


def jacobian_rows(f, x):
    return lambda *args: torch.eye(x.numel())  # a function


def nth_derivative(f, x, n):
    return sys.modules["torch"]  # a module


def partial_grads(f, x, y):
    return {1, 2}, b"\x80\x04K\x01."  # a set and bytes
