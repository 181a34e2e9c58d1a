"""What the right answers are, computed on the trusted side in float64.

Closed forms where the mathematics is short (they check the reference solutions too), and
torch's own autograd on the trusted side where a closed form would only restate it (the
Hessian or Jacobian of a test function). Never shipped to students, never visible to workers.

An answer depends only on the test's inputs, which depend only on the seed and the test: every
function whose answer is a function of its arguments' values is an `@answer`, computed once per
class and reused for every submission (grader.cases.kit.answer).
"""

from __future__ import annotations

import math

import torch

from grader.cases.kit import answer
from grader.cases.public import helpers as fns


def f64(t: torch.Tensor) -> torch.Tensor:
    return t.detach().to(torch.float64)


# ----------------------------------------------------------------------------- graph.py

def node_counts(out: torch.Tensor) -> dict[str, int]:
    counts: dict[str, int] = {}
    seen, stack = set(), [out.grad_fn] if out.grad_fn is not None else []
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        counts[type(node).__name__] = counts.get(type(node).__name__, 0) + 1
        stack.extend(n for n, _ in node.next_functions if n is not None)
    return counts


@answer
def intermediate_grads(x, w, b) -> dict[str, torch.Tensor]:
    x, w, b = f64(x), f64(w), f64(b)
    z = x @ w + b
    a = torch.relu(z)
    da = 2 * (a - 1) / a.numel()
    dz = da * (z > 0)
    return {"z": dz, "a": da, "w": x.T @ dz, "b": dz.sum(0)}


@answer
def dynamic_doubling(a) -> tuple[torch.Tensor, torch.Tensor, int]:
    a = f64(a)
    factor, steps = 2.0, 0
    while float((a * factor).norm()) < 1000:
        factor *= 2
        steps += 1
    scale = 1.0 if float((a * factor).sum()) > 0 else 100.0
    return a * factor * scale, torch.full_like(a, factor * scale), steps


# ----------------------------------------------------------------------------- backward.py

@answer
def two_losses(w, x) -> tuple[torch.Tensor, torch.Tensor]:
    w, x = f64(w), f64(x)
    d1 = x * torch.exp(x * w)
    d2 = 2 * x * torch.exp(2 * x * w)
    return d1, d2


@answer
def weighted(w, x, weights) -> torch.Tensor:
    w, x, weights = f64(w), f64(x), f64(weights)
    n = w.numel()
    return weights[:n] * (2 * w + x + 1) + 2 * weights[n:]


# ----------------------------------------------------------------------------- grad.py

@answer
def partials(f_name: str, x, y) -> tuple[torch.Tensor, torch.Tensor]:
    x, y = f64(x).requires_grad_(True), f64(y).requires_grad_(True)
    out = fns.FUNCTIONS[f_name](x, y)
    if not out.requires_grad:
        return torch.zeros_like(x), torch.zeros_like(y)
    gx, gy = torch.autograd.grad(out, (x, y), allow_unused=True)
    return (torch.zeros_like(x) if gx is None else gx, torch.zeros_like(y) if gy is None else gy)


# n-th derivatives of the elementwise functions, in closed form
DERIVATIVES = {
    "square": lambda t, n: [t ** 2, 2 * t, torch.full_like(t, 2.0)][n] if n <= 2 else torch.zeros_like(t),
    "sin": lambda t, n: torch.sin(t + n * math.pi / 2),
    "exp": lambda t, n: torch.exp(t),
    "exp_half": lambda t, n: 0.5 ** n * torch.exp(0.5 * t),
    "cube": lambda t, n: ([t ** 3, 3 * t ** 2, 6 * t, torch.full_like(t, 6.0)][n] if n <= 3 else torch.zeros_like(t)),
    "linear": lambda t, n: [3 * t + 2, torch.full_like(t, 3.0)][n] if n <= 1 else torch.zeros_like(t),
    "learnable_linear": lambda t, n: [3 * t + 2, torch.full_like(t, 3.0)][n] if n <= 1 else torch.zeros_like(t),
    "quartic": lambda t, n: ([t ** 4 - 2 * t ** 2 + t, 4 * t ** 3 - 4 * t + 1, 12 * t ** 2 - 4, 24 * t,
                              torch.full_like(t, 24.0)][n] if n <= 4 else torch.zeros_like(t)),
    "constant": lambda t, n: torch.full_like(t, 5.0) if n == 0 else torch.zeros_like(t),
}


@answer
def nth_derivative(f_name: str, x, n: int) -> torch.Tensor:
    return DERIVATIVES[f_name](f64(x), n)


@answer
def gradient(f_name: str, x) -> torch.Tensor:
    x = f64(x).requires_grad_(True)
    out = fns.FUNCTIONS[f_name](x)
    if not out.requires_grad:
        return torch.zeros_like(x)
    (g,) = torch.autograd.grad(out, x, allow_unused=True)
    return torch.zeros_like(x) if g is None else g


@answer
def hvp(f_name: str, x, v) -> torch.Tensor:
    hessian = torch.autograd.functional.hessian(fns.FUNCTIONS[f_name], f64(x))
    return hessian @ f64(v)


@answer
def jacobian(f_name: str, x) -> torch.Tensor:
    return torch.autograd.functional.jacobian(fns.FUNCTIONS[f_name], f64(x))


# ----------------------------------------------------------------------------- accumulation.py

@answer
def step_grads(w, xs) -> torch.Tensor:
    w = f64(w)
    return torch.stack([2 * w + f64(x) + 1 for x in xs]) if xs else w.new_zeros((0, *w.shape))


@answer
def full_batch_grad(w, X, Y) -> torch.Tensor:
    w, X, Y = f64(w), f64(X), f64(Y)
    return 2 / X.shape[0] * X.T @ (X @ w - Y)


@answer
def per_batch_mean_grad(w, X, Y, batch_size: int) -> torch.Tensor:
    """The classic mistake: each micro-batch loss averaged over its own rows."""
    return sum(full_batch_grad(w, X[i: i + batch_size], Y[i: i + batch_size])
               for i in range(0, X.shape[0], batch_size))


@answer
def per_step_scaled_grad(w, X, Y, batch_size: int) -> torch.Tensor:
    """The gradient-accumulation recipe: each micro-batch mean divided by the number of micro-batches."""
    steps = -(-X.shape[0] // batch_size)
    return per_batch_mean_grad(w, X, Y, batch_size) / steps


@answer
def gd(X, Y, w0, lr: float, steps: int, zero_grad: bool = True) -> torch.Tensor:
    w, X, Y = f64(w0).clone(), f64(X), f64(Y)
    accumulated = torch.zeros_like(w)
    for _ in range(steps):
        g = full_batch_grad(w, X, Y)
        accumulated = g if zero_grad else accumulated + g
        w = w - lr * accumulated
    return w


# ----------------------------------------------------------------------------- extensions.py

@answer
def smooth_abs(x, eps: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    x = f64(x)
    r = torch.sqrt(x ** 2 + eps)
    return r, x / r, eps / r ** 3


@answer
def forward_difference(f_name: str, x, eps: float) -> torch.Tensor:
    f = fns.FUNCTIONS[f_name]
    x = f64(x)
    flat = x.flatten()
    out = torch.empty_like(flat)
    base = f(x)
    for i in range(flat.numel()):
        shifted = flat.clone()
        shifted[i] += eps
        out[i] = (f(shifted.reshape(x.shape)) - base) / eps
    return out.reshape(x.shape)
