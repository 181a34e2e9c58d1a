"""The public oracles of the property checks: float64 central finite differences of the course's functions.

`grader check` runs each exercise's property (its `property:` test in the course file) on fresh random
inputs and compares the student's answer with these. They ship to students, so they never spell out an
exercise's route: a derivative here is a difference quotient of f, never autograd through f, except that
hvp's oracle differences the gradient (one plain backward) in the direction v, which is not the double
backward the exercise asks for. Everything runs on the trusted side, in float64, on the CPU.
"""

from __future__ import annotations

import torch

from grader.cases.public.helpers import FUNCTIONS

STEP = 1e-6  # first differences: an error of about STEP ** 2 (truncation) + 1e-16 / STEP (rounding)
SECOND_STEP = 1e-4  # second differences: about SECOND_STEP ** 2 + 1e-16 / SECOND_STEP ** 2


def tolerance(dtype: torch.dtype, order: int = 1) -> dict[str, float]:
    """rtol and atol for comparing a result in `dtype` with a difference quotient of `order`."""
    if dtype == torch.float64:
        return {"rtol": 1e-7, "atol": 1e-8} if order < 2 else {"rtol": 1e-5, "atol": 1e-6}
    return {"rtol": 2e-4, "atol": 2e-5} if order < 2 else {"rtol": 1e-3, "atol": 1e-4}


def _f64(t: torch.Tensor) -> torch.Tensor:
    return t.detach().to("cpu", torch.float64)


def _nudged(t: torch.Tensor, index: int, step: float) -> torch.Tensor:
    moved = t.clone()
    moved.view(-1)[index] += step
    return moved


@torch.no_grad()
def partials(name: str, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(df/dx, df/dy) of a scalar f(x, y), one central difference per element."""
    f, x, y = FUNCTIONS[name], _f64(x), _f64(y)
    dx, dy = torch.zeros_like(x), torch.zeros_like(y)
    for i in range(x.numel()):
        dx.view(-1)[i] = (f(_nudged(x, i, STEP), y) - f(_nudged(x, i, -STEP), y)) / (2 * STEP)
    for i in range(y.numel()):
        dy.view(-1)[i] = (f(x, _nudged(y, i, STEP)) - f(x, _nudged(y, i, -STEP))) / (2 * STEP)
    return dx, dy


@torch.no_grad()
def elementwise_derivative(name: str, x: torch.Tensor, n: int) -> torch.Tensor:
    """The n-th derivative (n = 0, 1 or 2) of an elementwise f at every element of x."""
    f, x = FUNCTIONS[name], _f64(x)
    if n == 0:
        return f(x).detach()
    if n == 1:
        return (f(x + STEP) - f(x - STEP)) / (2 * STEP)
    if n == 2:
        h = SECOND_STEP
        return (f(x + h) - 2 * f(x) + f(x - h)) / (h * h)
    raise ValueError("finite differences of order 0, 1 or 2 only")


def _gradient(f, x: torch.Tensor) -> torch.Tensor:
    x = x.clone().requires_grad_(True)
    out = f(x)
    if not out.requires_grad:
        return torch.zeros_like(x)
    (g,) = torch.autograd.grad(out, x, allow_unused=True)
    return torch.zeros_like(x) if g is None else g


def hvp(name: str, x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """H(x) @ v as the central difference of the gradient of f in the direction v."""
    f, x, v = FUNCTIONS[name], _f64(x), _f64(v)
    scale = float(v.abs().max()) if v.numel() else 0.0
    if scale == 0.0:
        return torch.zeros_like(x)
    h = STEP * 10 / scale
    return (_gradient(f, x + h * v) - _gradient(f, x - h * v)) / (2 * h)


@torch.no_grad()
def jacobian(name: str, x: torch.Tensor) -> torch.Tensor:
    """The (m, n) Jacobian of f: R^n -> R^m, a column per central difference."""
    f, x = FUNCTIONS[name], _f64(x)
    columns = [(f(_nudged(x, j, STEP)) - f(_nudged(x, j, -STEP))) / (2 * STEP) for j in range(x.numel())]
    if not columns:
        return torch.zeros((f(x).numel(), 0), dtype=torch.float64)
    return torch.stack(columns, dim=1)


def smooth_abs_forward(x: torch.Tensor, eps: float) -> torch.Tensor:
    """SmoothAbs's forward as its docstring defines it: sqrt(x ** 2 + eps), elementwise."""
    return torch.sqrt(_f64(x) ** 2 + eps)


def smooth_abs_derivatives(x: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """First and second central differences of that forward, elementwise."""
    x, h, k = _f64(x), STEP, SECOND_STEP
    first = (smooth_abs_forward(x + h, eps) - smooth_abs_forward(x - h, eps)) / (2 * h)
    second = (smooth_abs_forward(x + k, eps) - 2 * smooth_abs_forward(x, eps) + smooth_abs_forward(x - k, eps)) / (k * k)
    return first, second
