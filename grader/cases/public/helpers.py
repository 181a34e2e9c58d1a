"""The autograd course's own functions, graphs and probes, built inside the worker for its tests to
hand to student code. Not secret: it ships to students, and workers load it.

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

import io

import torch

try:  # a tensor's bytes through NumPy where it is installed; students need not install it
    import numpy
    _ndarray_tobytes = numpy.ndarray.tobytes
except ImportError:
    _ndarray_tobytes = None

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
#
# A probe is called as probe(step, relied, target, args, frozen) and returns (value, failure); student
# code runs only inside step(...), and between steps a probe uses only its default arguments: the C
# functions of torch bound below, when the worker loads this file, before any student code (the
# contract: grader.sandboxed.helpers). The values it supplies itself (v, u, q) it builds from the
# frozen arguments when it needs them.

_TensorBase = getattr(torch._C, "TensorBase", None) or getattr(torch._C, "_TensorBase")
_Tensor = torch.Tensor
_apply = torch._C._FunctionBase.__dict__["apply"]  # Function's C apply, given the student's class
_run_backward = torch.autograd.variable.Variable._execution_engine.run_backward  # the engine's C entry point
_detach, _clone, _requires_grad_ = _TensorBase.detach, _TensorBase.clone, _TensorBase.requires_grad_
_mul, _sum, _reshape, _to = _TensorBase.mul, _TensorBase.sum, _TensorBase.reshape, _TensorBase.to
_shape_of, _grad_of, _is_leaf = (_TensorBase.__dict__[name].__get__ for name in ("shape", "grad", "is_leaf"))
_dtype_of, _device_of, _requires_grad_of = (_TensorBase.__dict__[name].__get__
                                            for name in ("dtype", "device", "requires_grad"))
_grad_enabled = torch._C.is_grad_enabled
_qualname = type.__dict__["__qualname__"].__get__  # a class's own name, whatever its metaclass says


def thaw(frozen: tuple, _bytearray=bytearray, _frombuffer=torch.frombuffer, _empty=torch.empty,
         _reshape=_reshape, _to=_to, _requires_grad_=_requires_grad_) -> torch.Tensor:
    """A new tensor from a frozen argument (bytes, dtype, shape, device, requires_grad)."""
    blob, dtype, shape, device, requires_grad = frozen
    t = _reshape(_frombuffer(_bytearray(blob), dtype=dtype), shape) if blob else _empty(shape, dtype=dtype)
    t = _to(t, device)
    return _requires_grad_(t, True) if requires_grad else t


def _raw_bytes(raw: torch.Tensor, _tobytes=_ndarray_tobytes, _numpy=_TensorBase.numpy, _clone=_TensorBase.clone,
               _storage=_TensorBase.untyped_storage, _write_file=torch._C.StorageBase._write_file,
               _BytesIO=io.BytesIO) -> bytes:
    """The bytes of a flat uint8 view, without ctypes (which the worker's audit hook refuses)."""
    if _tobytes is not None:
        return _tobytes(_numpy(raw))
    out = _BytesIO()
    _write_file(_storage(_clone(raw)), out, False, False, 1)  # a clone's storage holds just its bytes
    return out.getvalue()


def freeze(t: torch.Tensor, _detach=_detach, _to=_to, _contiguous=_TensorBase.contiguous,
           _resolve=_TensorBase.resolve_conj, _view=_TensorBase.view, _raw_bytes=_raw_bytes,
           _uint8=torch.uint8, _dtype_of=_dtype_of, _shape_of=_shape_of,
           _device_of=_device_of, _numel=_TensorBase.numel, _reshape=_reshape, _tuple=tuple) -> tuple:
    """A probe's own result as data nothing can change in place, (bytes, dtype, shape, device, False),
    taken at the end of the step that computed it: a later step of student code can reach the
    probe's tensors (through the frames above it), never bytes. `thaw` makes the tensor again."""
    flat = _contiguous(_resolve(_to(_detach(t), "cpu")))
    blob = _raw_bytes(_view(_reshape(flat, (-1,)), _uint8)) if _numel(flat) else b""
    return blob, _dtype_of(t), _tuple(_shape_of(t)), _device_of(t), False


def _leaf_of(frozen: tuple, thaw=thaw, _requires_grad_=_requires_grad_) -> torch.Tensor:
    return _requires_grad_(thaw(frozen), True)


def raised(kind: str, message: str) -> tuple:
    """A failure of the probe's own making, like one a step reports."""
    return "raised", {"type": kind, "message": message}


def not_a_tensor(what: str, value, _type=type, _str=str, _qualname=_qualname, raised=raised) -> tuple:
    name = _qualname(_type(value))
    return raised("TypeError", f"{what} is a {name if _type(name) is _str else 'object'}, not a torch.Tensor")


def _why(failure: tuple) -> str:
    """A failed derivative as one line, "Type: message" (the plugin names the mistake it means: `Fail(raised=...)`)."""
    record = failure[1] if failure[0] == "raised" else {"type": "tampered", "message": failure[1]}
    message = record["message"]
    return f"{record['type']}: {message.splitlines()[0][:200] if message else ''}"


def _derivatives(step, relied, function_class, frozen, _apply=_apply, _run_backward=_run_backward,
                 _Tensor=_Tensor, _type=type, _tuple=tuple, _len=len, _TypeError=TypeError, _detach=_detach,
                 _shape_of=_shape_of, _str=str, thaw=thaw, freeze=freeze, _leaf_of=_leaf_of, raised=raised,
                 not_a_tensor=not_a_tensor) -> tuple:
    """(y, (first derivative, its failure), (second derivative, its failure)) through the student's
    Function, or (None, failure, None) when forward itself failed: y = Function.apply(x, eps),
    v * y'(x) and u * v * y''(x), each autograd pass a step of its own. Each result is frozen into
    bytes as soon as the step that computed it ends (`freeze`), and made a tensor again at the end."""
    frozen_x, eps, frozen_v, frozen_u = frozen
    x = _leaf_of(frozen_x)
    try:
        apply = _apply.__get__(None, function_class)
    except _TypeError as exc:
        return None, raised("TypeError", f"not a torch.autograd.Function: {exc}"), None
    y, failure = step(apply, (x, eps), None, relied)
    if failure is not None:
        return None, failure, None
    if _type(y) is not _Tensor:
        return None, not_a_tensor("what apply returned", y), None
    y_values = freeze(y)
    v = thaw(frozen_v)
    if _shape_of(y) != _shape_of(v):
        mismatch = raised("RuntimeError", f"Mismatch in shape: grad_output[0] has a shape of {_shape_of(v)} and "
                                          f"output[0] has a shape of {_shape_of(y)}.")
        return thaw(y_values), (None, mismatch), (None, mismatch)
    grads, failure = step(_run_backward, ((y,), (v,), True, True, (x,), False, False), None, relied)
    if failure is not None:
        return thaw(y_values), (None, failure), (None, failure)
    g = grads[0] if _type(grads) is _tuple and _len(grads) == 1 else grads
    if _type(g) is not _Tensor:
        failure = not_a_tensor("the first derivative", g)
        return thaw(y_values), (None, failure), (None, failure)
    g_values = freeze(g)
    grads, failure = step(_run_backward, ((g,), (thaw(frozen_u),), False, False, (x,), False, False), None, relied)
    if failure is not None:
        return thaw(y_values), (thaw(g_values), None), (None, failure)
    h = grads[0] if _type(grads) is _tuple and _len(grads) == 1 else grads
    if _type(h) is not _Tensor:
        return thaw(y_values), (thaw(g_values), None), (None, not_a_tensor("the second derivative", h))
    return thaw(y_values), (thaw(g_values), None), (thaw(freeze(h)), None)


def probe_smooth_abs(step, relied, function_class, args, frozen, _derivatives=_derivatives) -> tuple:
    """Forward values, a weighted first derivative and a weighted second derivative through the
    student's Function. Returns the numbers only; the trusted side judges them. The first failure
    is the probe's."""
    y, first, second = _derivatives(step, relied, function_class, frozen)
    if y is None:
        return None, first
    for _, failure in (first, second):
        if failure is not None:
            return None, failure
    return (y, first[0], second[0]), None


def probe_smooth_abs_orders(step, relied, function_class, args, frozen, _derivatives=_derivatives,
                            _why=_why) -> tuple:
    """Like probe_smooth_abs, but a derivative that cannot be computed does not take the lower orders
    with it: in its place comes a line saying why (a backward that is not itself differentiable
    still gets its forward and first derivative judged). A step that tampered fails the probe."""
    y, first, second = _derivatives(step, relied, function_class, frozen)
    if y is None:
        return None, first
    for _, failure in (first, second):
        if failure is not None and failure[0] == "tampered":
            return None, failure
    return (y, *(_why(failure) if failure is not None else value for value, failure in (first, second))), None


def probe_then_backward(step, relied, function, args, frozen, _leaf_of=_leaf_of, _Tensor=_Tensor,
                        _type=type, _mul=_mul, _sum=_sum, _ones_like=torch.ones_like, _run_backward=_run_backward,
                        _grad_of=_grad_of, _grad_enabled=_grad_enabled, _RuntimeError=RuntimeError, _str=str,
                        raised=raised, not_a_tensor=not_a_tensor) -> tuple:
    """Call frozen_predict, then use its result in a later autograd computation."""
    w, x, _ = args
    r, failure = step(function, (w, x), None, relied)
    if failure is not None:
        return None, failure
    if not _grad_enabled():
        return None, raised("RuntimeError", "gradient recording was still switched off after frozen_predict returned: "
                                            "torch.set_grad_enabled(False) was never undone; use `with torch.no_grad():`, "
                                            "which switches it back on when the block ends")
    if _type(r) is not _Tensor:
        return None, not_a_tensor("what frozen_predict returned", r)
    q = _leaf_of(frozen[2])
    try:
        total = _sum(_mul(r, q))
    except _RuntimeError as exc:  # an inference tensor cannot be saved for backward
        return None, raised("RuntimeError", _str(exc))
    _, failure = step(_run_backward, ((total,), (_ones_like(total),), False, False, (), True, True), None, relied)
    if failure is not None:
        return None, failure
    return (r, _grad_of(q)), None


def probe_leaf_backward(step, relied, function, args, frozen, _Tensor=_Tensor, _type=type, _tuple=tuple,
                        _mul=_mul, _sum=_sum, _ones_like=torch.ones_like, _run_backward=_run_backward,
                        _grad_of=_grad_of, _is_leaf=_is_leaf, not_a_tensor=not_a_tensor) -> tuple:
    """Call make_leaf, then backpropagate into the new leaf: a real leaf receives .grad."""
    leaf, failure = step(function, args, None, relied)
    if failure is not None:
        return None, failure
    if _type(leaf) is not _Tensor:
        return None, not_a_tensor("what make_leaf returned", leaf)
    total = _sum(_mul(leaf, 3))
    _, failure = step(_run_backward, ((total,), (_ones_like(total),), False, False, (), True, True), None, relied)
    if failure is not None:
        return None, failure
    return (leaf, _grad_of(leaf) if _is_leaf(leaf) else None), None


def probe_recording_f(step, relied, function, args, frozen, _type=type, _str=str, _bool=bool, _list=list,
                      _tuple=tuple,
                      _sorted=sorted, _set=set, _functions=FUNCTIONS, _dtype_of=_dtype_of, _device_of=_device_of,
                      _grad_enabled=_grad_enabled, _requires_grad_of=_requires_grad_of) -> tuple:
    """Call numerical_gradient with an f that records how it was evaluated. The record is the
    student's to write (their code holds recording_f): it names mistakes, it is no evidence."""
    f_name, x, *rest = args
    f = _functions[f_name]
    seen = {"dtypes": [], "devices": [], "grad_enabled": [], "requires_grad": []}

    def recording_f(t):
        seen["dtypes"].append(_str(_dtype_of(t)).replace("torch.", ""))
        seen["devices"].append(_device_of(t).type)
        seen["grad_enabled"].append(_grad_enabled())
        seen["requires_grad"].append(_requires_grad_of(t))
        return f(t)

    result, failure = step(function, (recording_f, x, *rest), None, relied)
    if failure is not None:
        return None, failure
    kinds = {"dtypes": _str, "devices": _str, "grad_enabled": _bool, "requires_grad": _bool}
    record = {key: [] for key in kinds}
    for key, values in _tuple(seen.items()):  # (no lookups in a dict the student's code could reach)
        for name, kind in kinds.items():
            if _type(key) is _str and key == name and _type(values) is _list:
                record[name] = _sorted(_set(v for v in values if _type(v) is kind))
    return (result, record), None


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
