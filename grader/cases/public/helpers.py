"""Worker-side helpers of the autograd course: the functions, graphs and probes its tests hand to
student code. Not secret: it ships to students, and workers load it.

A callable cannot cross the worker boundary as data, so a test names one (`Fn("sum_cubes")`,
`Graph("mlp", args)`, `probe="smooth_abs"`) and the worker builds it from the three tables here:
`FUNCTIONS`, `GRAPHS`, `PROBES`. The course file names this file (`helpers:`); the workers' zygote
loads it by path before any student code runs (`grader.sandboxed.helpers.load_course`), and the
oracle imports it to compute the right answers, so both sides agree by construction. `warm_up()`
runs once in the zygote, before any fork.

It runs in the worker, next to student code: it imports torch and nothing of the grader, and
everything here must work for any floating dtype and any device. An exercise that needs a new
function, graph or probe adds it here, next to its tests.
"""

from __future__ import annotations

import torch

# ----------------------------------------------------------------------------- callables f

FUNCTIONS = {
    # f(x, y) -> 0-dim, for partial_grads
    "product_sum": lambda x, y: (x * y).sum(),
    "lecture_xy": lambda x, y: ((x + y) * (y + 1)).sum(),
    "exp_sin": lambda x, y: (torch.exp(x) * torch.sin(y)).sum(),
    "x_y_squared": lambda x, y: (x * y * y).sum(),
    "ignores_y": lambda x, y: (x ** 2).sum(),
    "ignores_x": lambda x, y: torch.cos(y).sum(),
    "ignores_both": lambda x, y: torch.tensor(3.0, dtype=x.dtype, device=x.device),
    # elementwise f, for nth_derivative
    "square": lambda t: t ** 2,
    "sin": torch.sin,
    "exp": torch.exp,
    "cube": lambda t: t ** 3,
    "linear": lambda t: 3 * t + 2,
    "quartic": lambda t: t ** 4 - 2 * t ** 2 + t,
    "constant": lambda t: torch.full_like(t, 5.0),
    "exp_half": lambda t: torch.exp(0.5 * t),
    # 3 t + 2 with a learnable scale: the first derivative requires grad (through the scale) but
    # has no graph back to t, so differentiating it again finds t unused (allow_unused=True)
    "learnable_linear": lambda t: t.new_tensor(3.0).requires_grad_(True) * t + 2,
    # scalar f of a 1-dim x, for hvp and numerical_gradient
    "sum_cubes": lambda x: (x ** 3).sum(),
    "logsumexp": lambda x: torch.logsumexp(x.flatten(), 0),
    "neighbours": lambda x: (x.flatten()[:-1] * x.flatten()[1:]).sum() + (x ** 2).sum(),
    "sum_linear": lambda x: (2 * x).sum() + 1,
    "scalar_constant": lambda x: torch.tensor(1.0, dtype=x.dtype, device=x.device),
    "sin_sum": lambda x: torch.sin(x).sum(),
    "exp_quartic": lambda x: (torch.exp(0.5 * x) + 0.1 * x ** 4).sum(),
    # f: R^n -> R^m, for jacobian_rows
    "sin_cumsum": lambda x: torch.cumsum(torch.sin(x), 0),
    "moments": lambda x: torch.stack([x.sum(), (x ** 2).sum(), (x ** 3).mean()]),
    "ends": lambda x: torch.stack([2 * x[0], x[-1] ** 2]),
    "constant_vector": lambda x: torch.ones(2, dtype=x.dtype, device=x.device),
    "mix": lambda x: torch.tanh(x) * x.sum(),
}


# ----------------------------------------------------------------------------- graphs for graph_node_counts

def _leaf(values: torch.Tensor) -> torch.Tensor:
    return values.detach().clone().requires_grad_(True)


def lecture_graph(w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The lecture's y = (w + x) * (w + 1) with w a leaf that requires grad and x that does not."""
    w = _leaf(w)
    a = w + x
    b = w + 1
    return a * b


def mlp_graph(x: torch.Tensor, w1: torch.Tensor, b1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    w1, b1, w2 = _leaf(w1), _leaf(b1), _leaf(w2)
    h = torch.relu(x @ w1 + b1)
    return (h @ w2).pow(2).mean()


def diamond_graph(x: torch.Tensor) -> torch.Tensor:
    """One node feeds several paths: it must be counted once. (Two Muls: no answer of all ones fits.)"""
    a = _leaf(x).exp()
    return (a * a.sin() + a * 2).sum()


def chain_graph(x: torch.Tensor, length: int) -> torch.Tensor:
    h = _leaf(x)
    for i in range(length):
        h = h * 2 if i % 2 == 0 else torch.tanh(h)
    return h.sum()


def shared_leaves_graph(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    x, y = _leaf(x), _leaf(y)
    return (x * y + x.exp() * y + (x - y) ** 2).sum()


def no_grad_graph(x: torch.Tensor) -> torch.Tensor:
    """Nothing requires grad: out.grad_fn is None."""
    return (x * 2).sum()


def leaf_graph(x: torch.Tensor) -> torch.Tensor:
    """The output is itself a leaf that requires grad: out.grad_fn is None."""
    return _leaf(x)


GRAPHS = {
    "lecture": lecture_graph,
    "mlp": mlp_graph,
    "diamond": diamond_graph,
    "chain": chain_graph,
    "shared_leaves": shared_leaves_graph,
    "no_grad": no_grad_graph,
    "leaf": leaf_graph,
}


# ----------------------------------------------------------------------------- probes

def probe_smooth_abs(function_class, x: torch.Tensor, eps: float, v: torch.Tensor, u: torch.Tensor):
    """Forward values, a weighted first derivative and a weighted second derivative through
    the student's Function. Returns the numbers only; the trusted side judges them."""
    x = _leaf(x)
    y = function_class.apply(x, eps)
    (g,) = torch.autograd.grad(y, x, grad_outputs=v, create_graph=True)  # v * y'(x)
    (h,) = torch.autograd.grad(g, x, grad_outputs=u)  # u * v * y''(x)
    return y.detach(), g.detach(), h.detach()


def probe_smooth_abs_orders(function_class, x: torch.Tensor, eps: float, v: torch.Tensor, u: torch.Tensor):
    """Like probe_smooth_abs, but a derivative that cannot be computed does not take the lower orders
    with it: in its place comes a line saying why (a backward that is not itself differentiable
    still gets its forward and first derivative judged)."""
    x = _leaf(x)
    y = function_class.apply(x, eps)
    try:
        (g,) = torch.autograd.grad(y, x, grad_outputs=v, create_graph=True)
    except Exception as exc:  # noqa: BLE001  (student code: any error means "no first derivative")
        return y.detach(), _why(exc), _why(exc)
    try:
        (h,) = torch.autograd.grad(g, x, grad_outputs=u)
    except Exception as exc:  # noqa: BLE001
        return y.detach(), g.detach(), _why(exc)
    return y.detach(), g.detach(), h.detach()


def _why(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"


def probe_then_backward(function, w: torch.Tensor, x: torch.Tensor, q: torch.Tensor):
    """Call frozen_predict, then use its result in a later autograd computation."""
    r = function(w, x)
    if not torch.is_grad_enabled():
        raise RuntimeError("gradient recording was still switched off after frozen_predict returned: "
                           "torch.set_grad_enabled(False) was never undone; use `with torch.no_grad():`, "
                           "which switches it back on when the block ends")
    q = _leaf(q)
    (r * q).sum().backward()
    return r, q.grad


def probe_leaf_backward(function, t: torch.Tensor, *args):
    """Call make_leaf, then backpropagate into the new leaf: a real leaf receives .grad."""
    leaf = function(t, *args)
    (leaf * 3).sum().backward()
    return leaf, leaf.grad


# What recording_f looks at, read through torch's C layer: the worker runs student code, which may
# replace torch.is_grad_enabled or torch.Tensor's properties to change what is recorded.
_TensorBase = getattr(torch._C, "TensorBase", None) or getattr(torch._C, "_TensorBase")
_dtype_of, _device_of, _requires_grad_of = (_TensorBase.__dict__[name].__get__
                                            for name in ("dtype", "device", "requires_grad"))
_grad_enabled = torch._C.is_grad_enabled


def probe_recording_f(function, f_name: str, x: torch.Tensor, *args):
    """Call numerical_gradient with an f that records how it was evaluated."""
    f = FUNCTIONS[f_name]
    seen = {"dtypes": [], "devices": [], "grad_enabled": [], "requires_grad": []}

    def recording_f(t):
        seen["dtypes"].append(str(_dtype_of(t)).replace("torch.", ""))
        seen["devices"].append(_device_of(t).type)
        seen["grad_enabled"].append(_grad_enabled())
        seen["requires_grad"].append(_requires_grad_of(t))
        return f(t)

    result = function(recording_f, x, *args)
    return result, {k: sorted(set(v)) for k, v in seen.items()}


PROBES = {
    "smooth_abs": probe_smooth_abs,
    "smooth_abs_orders": probe_smooth_abs_orders,
    "then_backward": probe_then_backward,
    "leaf_backward": probe_leaf_backward,
    "recording_f": probe_recording_f,
}


def warm_up() -> None:
    """Build every function's derivatives and every graph once, in the zygote, before any fork."""
    for dtype in (torch.float32, torch.float64):
        for f in FUNCTIONS.values():
            _differentiate_twice(f, dtype)
        for name, build in GRAPHS.items():
            t = torch.linspace(-1, 1, 4, dtype=dtype)
            args = {"lecture": (t, t), "mlp": (t.reshape(2, 2), t.reshape(2, 2), t[:2], t.reshape(2, 2)[:, :1]),
                    "chain": (t, 3), "shared_leaves": (t, t)}.get(name, (t,))
            build(*args)


def _differentiate_twice(f, dtype) -> None:
    """First and second derivatives of f, whatever its arity (1 or 2 tensors), errors ignored."""
    x = torch.linspace(-1, 1, 4, dtype=dtype).requires_grad_(True)
    y = torch.linspace(1, 2, 4, dtype=dtype).requires_grad_(True)
    for args in ((x,), (x, y)):
        try:
            out = f(*args)
        except TypeError:
            continue
        if out.requires_grad:
            (g,) = torch.autograd.grad(out, x, grad_outputs=torch.ones_like(out), create_graph=True, allow_unused=True)
            if g is not None and g.requires_grad:
                torch.autograd.grad(g, x, grad_outputs=torch.ones_like(g), allow_unused=True)
