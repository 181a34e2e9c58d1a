"""The kit test cases are written with: argument markers, input drawing, and checks.

Every check raises `Fail(reason, detail)`. The reason names what is wrong and, where the
result matches a known learner mistake, which one ("gradients accumulate: ..."); it never
shows input values, so hidden tests may report it. The detail shows numbers and is shown
for public tests only. Messages are in English and 简体中文.
"""

from __future__ import annotations

from typing import Any, Iterable

import torch

from grader.host.student_code import SESSION_DEVICE, Arg, CallResult, Fn, Graph, Leaf  # noqa: F401  (re-exported for tests)
from grader.protocol.wire import DTYPE_NAMES, RemoteObject, RemoteTensor

FLOAT_DTYPES = (torch.float32, torch.float64)


class Fail(AssertionError):
    def __init__(self, reason: str, detail: str = ""):
        super().__init__(reason + (f"\n{detail}" if detail else ""))
        self.reason = reason
        self.detail = detail


# ----------------------------------------------------------------------------- known mistakes

MISTAKES = {
    "not_accumulated": (
        "this is only the last gradient: gradients accumulate across backward calls, do not zero them in between",
        "这只是最后一次的梯度：多次 backward 的梯度会累加，中间不要清零"),
    "aliased_grad": (
        "this already includes the later backward: w.grad is updated in place, so take a copy (w.grad.clone()) when you record it",
        "这里已经包含了后面那次 backward：w.grad 会被原地更新，记录时要复制一份（w.grad.clone()）"),
    "not_zeroed": (
        "these are running sums: zero the gradient (w.grad.zero_()) after recording each step",
        "这是累加后的结果：每一步记录之后要清零梯度（w.grad.zero_()）"),
    "unweighted": (
        "this is the gradient with all weights equal to 1: pass the weights as grad_tensors",
        "这是权重全为 1 时的梯度：要把 weights 作为 grad_tensors 传入"),
    "per_step_scaled": (
        "each micro-batch mean was divided by the number of micro-batches: that equals the full-batch mean only "
        "when batch_size divides N; divide each micro-batch's summed loss by N",
        "每个 micro-batch 的平均损失除以了 micro-batch 的个数：只有 batch_size 整除 N 时才等于全批次平均；"
        "应把每个 micro-batch 的损失之和除以 N"),
    "batch_mean": (
        "each micro-batch loss was averaged over its own rows: scale by the full batch size N instead",
        "每个 micro-batch 的损失按自己的行数取了平均：应当除以全体样本数 N"),
    "no_zero_gd": (
        "the gradient was not zeroed after each update, so the steps used accumulated gradients",
        "每次更新后没有清零梯度，后面的步骤用的是累加的梯度"),
    "forward_difference": (
        "this looks like a one-sided difference (f(x+eps) - f(x)) / eps: use the central difference (f(x+eps) - f(x-eps)) / (2 eps)",
        "这看起来是单侧差分 (f(x+eps) - f(x)) / eps：请使用中心差分 (f(x+eps) - f(x-eps)) / (2 eps)"),
    "detached_in_backward": (
        "the second derivative misses a term: part of backward was detached (.detach() or .data on a saved "
        "tensor), so autograd could not differentiate through it",
        "二阶导数少了一项：backward 中有一部分被 detach 了（对保存的张量用了 .detach() 或 .data），自动求导无法对它求导"),
    "sign_instead": (
        "this is the derivative of |x| (sign(x)), not of sqrt(x**2 + eps)",
        "这是 |x| 的导数 sign(x)，不是 sqrt(x**2 + eps) 的导数"),
    "graph_dropped": (
        "this is zero: without create_graph=True a derivative has no graph of its own, so every higher one "
        "came out as zero",
        "结果为 0：没有 create_graph=True，导数自身没有计算图，因此更高阶的导数都成了 0"),
    "first_derivative_only": (
        "this equals the first derivative: the higher derivatives need create_graph=True at every step",
        "这等于一阶导数：求更高阶导数时每一步都要 create_graph=True"),
    "wrong_loss": (
        "these are gradients of a different loss: loss = (a ** 2).mean() over all elements",
        "这是另一个损失函数的梯度：loss = (a ** 2).mean()，对所有元素取平均"),
    "recorded_alias": (
        "every row is the same tensor: you recorded w.grad itself, which was zeroed afterwards; record w.grad.clone()",
        "每一行都是同一个张量：你记录的是 w.grad 本身，它随后被清零了；请记录 w.grad.clone()"),
    "grad_of_sum": (
        "this is the gradient of the sum of the outputs, not one row per output (use grad_outputs = e_i)",
        "这是所有输出之和的梯度，而不是每个输出一行（使用 grad_outputs = e_i）"),
    "gradient_not_hvp": (
        "this is the gradient, not the Hessian-vector product: differentiate the gradient again with grad_outputs=v",
        "这是梯度而不是 Hessian-向量积：需要以 grad_outputs=v 对梯度再求一次导"),
    "hvp_of_sum": (
        "this is H @ ones, the derivative of g.sum(), whatever v is: differentiate g with grad_outputs=v",
        "这是 H @ ones，即 g.sum() 的导数，与 v 无关：请以 grad_outputs=v 对 g 求导"),
    "mean_not_sum": (
        "this is divided by the number of elements: backpropagate s.sum(), not s.mean()",
        "结果被除以了元素个数：应对 s.sum() 而不是 s.mean() 反向传播"),
    "shifted_saved_output": (
        "g was computed from the shifted output: changing s in place behind autograd's back (s.data) made "
        "sigmoid's backward use s + shift; add the shift out of place",
        "g 是用加了 shift 的输出算的：绕过自动求导原地修改 s（s.data）使 sigmoid 的 backward 用了 s + shift；"
        "请用非原地运算加上 shift"),
    "no_shift_in_s": (
        "s does not include the shift: s = sigmoid(x) + shift",
        "s 没有加上 shift：s = sigmoid(x) + shift"),
    "not_differentiable": (
        "the second derivative could not be computed: backward must itself be differentiable, so build it from "
        "torch operations on the saved tensors, without torch.no_grad(), .detach() or @once_differentiable",
        "无法计算二阶导数：backward 本身必须可导，请用保存的张量上的 torch 运算来写，"
        "不要用 torch.no_grad()、.detach() 或 @once_differentiable"),
    "unscaled_branch": (
        "the 100 * b branch is missing from the gradient: the graph follows the branch that actually ran",
        "梯度缺少 100 * b 这一分支的系数：计算图记录的是实际执行的分支"),
}


# Substrings of torch's own error messages, and what they mean for these exercises.
ERROR_HINTS = {
    "backward through the graph a second time": (
        "a second backward through the same graph needs retain_graph=True on the first one",
        "第二次对同一个图 backward 时，第一次要设置 retain_graph=True"),
    "leaf Variable that requires grad": (
        "a leaf that requires grad cannot be changed in place while autograd records: do it inside torch.no_grad()",
        "需要梯度的叶子张量不能在记录计算图时原地修改：请放在 torch.no_grad() 中"),
    "modified by an inplace operation": (
        "a tensor that backward needs was changed in place: compute a new tensor instead (out-of-place)",
        "backward 需要的张量被原地修改了：请改用非原地运算生成新张量"),
    "does not require grad": (
        "something you differentiate has no graph: for higher derivatives use create_graph=True; where a "
        "result does not depend on x, return zeros",
        "被求导的量没有计算图：求高阶导数要用 create_graph=True；结果与 x 无关时返回全零张量"),
    "not have been used in the graph": (
        "an input is not used by f: pass allow_unused=True and return zeros instead of None",
        "f 没有用到某个输入：传入 allow_unused=True，并返回全零张量而不是 None"),
    "only for scalar outputs": (
        "backward of a non-scalar needs a gradient argument (grad_tensors / grad_outputs)",
        "对非标量 backward 需要提供 grad_tensors / grad_outputs"),
    "Inference tensors cannot be saved for backward": (
        "torch.inference_mode() results cannot be used in later autograd: use torch.no_grad() or detach()",
        "torch.inference_mode() 的结果不能再用于之后的自动求导：请使用 torch.no_grad() 或 detach()"),
    "Expected all tensors to be on the same device": (
        "a tensor was created on the default device: use torch.zeros_like(x), x.new_zeros(...) or device=x.device",
        "有张量被建在了默认设备上：请用 torch.zeros_like(x)、x.new_zeros(...) 或 device=x.device"),
    "'NoneType'": (
        "something is None: .grad stays None on a tensor that is not a leaf (w = w - lr * w.grad replaces the "
        "leaf by a non-leaf; update in place under torch.no_grad()), grad_fn is None for a tensor without a graph, "
        "and next_functions holds None for inputs that need no gradient (check for None)",
        "有值是 None：非叶子张量的 .grad 一直是 None（w = w - lr * w.grad 会把叶子替换成非叶子；"
        "请在 torch.no_grad() 中原地更新），没有计算图的张量 grad_fn 为 None，next_functions 中不需要梯度的输入为 None"
        "（要先检查 None）"),
    "NotImplementedError": ("this function is not written yet", "这个函数还没有实现"),
}


def mistake_text(key: str) -> str:
    en, zh = MISTAKES[key]
    return f"{en} / {zh}"


# ----------------------------------------------------------------------------- drawing inputs

def draw(rng: torch.Generator, shape: Iterable[int], dtype: torch.dtype = torch.float64,
         low: float = -1.0, high: float = 1.0) -> torch.Tensor:
    """Uniform values in [low, high), drawn in float64 on the CPU, then cast to `dtype`."""
    u = torch.rand(tuple(shape), generator=rng, dtype=torch.float64)
    return (low + (high - low) * u).to(dtype)


def draw_away_from(rng: torch.Generator, shape, dtype, low: float, high: float, avoid: float = 0.0,
                   margin: float = 0.05) -> torch.Tensor:
    """Like draw, but no value within `margin` of `avoid` (keeps relu kinks out of reach)."""
    t = draw(rng, shape, torch.float64, low, high)
    t = torch.where((t - avoid).abs() < margin, t + 2 * margin * torch.sign(t - avoid + 1e-12), t)
    return t.to(dtype)


def randint(rng: torch.Generator, low: int, high: int) -> int:
    """An int in [low, high]."""
    return int(torch.randint(low, high + 1, (1,), generator=rng).item())


# ----------------------------------------------------------------------------- checking what came back

def returned(call: CallResult, kind: type | None = None, length: int | None = None) -> Any:
    """The value the call returned; fails if it raised or returned the wrong kind of value."""
    if call.outcome == "raised":
        exc = call.exception or {}
        text = f"{exc.get('type')}: {exc.get('message', '')}"
        hints = [f"{en} / {zh}" for key, (en, zh) in ERROR_HINTS.items() if key in text]
        raise Fail(f"{call.function} raised {text[:400]}" + (f"\nHint: {hints[0]}" if hints else ""))
    value = call.value
    if kind is not None and type(value) is not kind:
        raise Fail(f"{call.function} returned {describe(value)}; expected a {kind.__name__}"
                   + (f" of {length} values" if length else "") + f" / 应返回 {kind.__name__}")
    if length is not None and len(value) != length:
        raise Fail(f"{call.function} returned {len(value)} values; expected {length} / 应返回 {length} 个值")
    return value


def raised(call: CallResult, exc_type: str, match: str | None = None) -> None:
    """The call raised `exc_type` (by name), whose message contains `match`."""
    if call.outcome != "raised":
        raise Fail(f"{call.function} returned {describe(call.value)} instead of raising {exc_type} / 应抛出 {exc_type}")
    got = (call.exception or {}).get("type")
    if got != exc_type:
        raise Fail(f"{call.function} raised {got}; expected {exc_type} / 应抛出 {exc_type}")
    if match and match not in (call.exception or {}).get("message", ""):
        raise Fail(f"{call.function} raised {exc_type} without {match!r} in its message")


def describe(value: Any) -> str:
    if type(value) is RemoteTensor:
        return f"a tensor of shape {list(value.shape)}"
    if type(value) is RemoteObject:
        return f"a {value.type_name} object (not a plain torch.Tensor)"
    if value is None:
        return "None"
    return f"a {type(value).__name__}"


def tensor(value: Any, what: str, *, shape=None, dtype: torch.dtype | None = None, device: str | None = None,
           detached: bool = True) -> RemoteTensor:
    """Check that `value` is a plain tensor with the given shape, dtype, device; detached unless told."""
    if type(value) is not RemoteTensor:
        hint = " (return zeros, never None)" if value is None else ""
        raise Fail(f"{what} is {describe(value)}, not a torch.Tensor{hint} / {what} 应为 torch.Tensor")
    if shape is not None and tuple(value.shape) != tuple(shape):
        raise Fail(f"{what} has the wrong shape / {what} 的形状不对",
                   f"shape {list(value.shape)}, expected {list(shape)}")
    if dtype is not None and value.dtype != dtype:
        raise Fail(f"{what} has dtype {DTYPE_NAMES.get(value.dtype)}, expected {DTYPE_NAMES.get(dtype)}: "
                   f"results keep the arguments' dtype / 结果应与参数的 dtype 相同")
    if device is not None and value.device_type != torch.device(device).type:
        raise Fail(f"{what} is on {value.device}, expected {device}: results stay on the arguments' device "
                   f"/ 结果应与参数在同一设备上")
    if detached and (value.requires_grad or value.grad_fn is not None):
        raise Fail(f"{what} is still attached to a graph (requires_grad={value.requires_grad}, "
                   f"grad_fn={value.grad_fn}): return it detached (.detach()) / {what} 应当 detach 后再返回")
    return value


def tol(dtype: torch.dtype) -> tuple[float, float]:
    """(rtol, atol) for comparing a result computed in `dtype` with a float64 reference."""
    return {torch.float32: (2e-4, 2e-5), torch.float64: (1e-7, 1e-10)}.get(dtype, (1e-2, 1e-3))


def close(actual: RemoteTensor, expected: torch.Tensor, what: str, *, rtol: float | None = None,
          atol: float | None = None, mistakes: dict[str, torch.Tensor] | None = None) -> None:
    """Values of `actual` match `expected`; names a known mistake when they match one instead."""
    default_rtol, default_atol = tol(actual.dtype)
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    got = actual.data.to(torch.float64)
    want = expected.detach().to("cpu", torch.float64)
    if tuple(got.shape) != tuple(want.shape):
        raise Fail(f"{what} has the wrong shape / {what} 的形状不对", f"shape {list(got.shape)}, expected {list(want.shape)}")
    if _allclose(got, want, rtol, atol):
        return
    for key, alternative in (mistakes or {}).items():
        alt = alternative.detach().to("cpu", torch.float64)
        if alt.shape == got.shape and _allclose(got, alt, rtol, atol) and not _allclose(alt, want, rtol, atol):
            raise Fail(f"{what} has wrong values: {mistake_text(key)}", _difference(got, want))
    raise Fail(f"{what} has wrong values / {what} 的数值不对", _difference(got, want))


def _allclose(a: torch.Tensor, b: torch.Tensor, rtol: float, atol: float) -> bool:
    return bool(torch.isfinite(a).all()) and torch.allclose(a, b, rtol=rtol, atol=atol)


def _difference(got: torch.Tensor, want: torch.Tensor) -> str:
    if got.numel() == 0:
        return "empty tensors"
    err = (got - want).abs()
    err = torch.where(torch.isnan(err), torch.full_like(err, float("inf")), err)
    index = int(err.flatten().argmax())
    position = list(torch.unravel_index(torch.tensor(index), got.shape)) if got.dim() else []
    at = f" at index {tuple(int(i) for i in position)}" if position else ""
    if got.numel() <= 8:
        return f"got {_fmt(got)}, expected {_fmt(want)}"
    return (f"largest difference {float(err.flatten()[index]):.3g}{at}: got {float(got.flatten()[index]):.6g}, "
            f"expected {float(want.flatten()[index]):.6g}")


def _fmt(t: torch.Tensor) -> str:
    return str([round(float(v), 6) for v in t.flatten()]) if t.dim() else f"{float(t):.6g}"


def result_tensor(call: CallResult, value: Any, what: str, like: torch.Tensor, shape=None,
                  detached: bool = True) -> RemoteTensor:
    """A returned tensor with `like`'s dtype, on the call's device, detached (the usual convention)."""
    return tensor(value, what, shape=like.shape if shape is None else shape, dtype=like.dtype,
                  device=call.device, detached=detached)


SHORTCUTS = ("torch.autograd.functional.", "torch.func.")


def no_shortcuts(call: CallResult, what: str) -> None:
    """The call used neither torch.autograd.functional nor torch.func (the exercise is to do it by hand)."""
    used = sorted(name for name in call.api_calls if name.startswith(SHORTCUTS))
    if used:
        raise Fail(f"{call.function} called {', '.join(used)}: {what} / {call.function} 调用了 {', '.join(used)}："
                   f"本题要求用 torch.autograd.grad 自己实现")


def autograd_calls(call: CallResult) -> int:
    """How many times the call ran torch.autograd.grad or backward, as the worker reported."""
    return call.api_calls.get("torch.autograd.grad", 0) + call.api_calls.get("torch.autograd.backward", 0)


# ----------------------------------------------------------------------------- arguments after the call

def unchanged(call: CallResult, *names: str, skip: Iterable[str] = ()) -> None:
    """The named positional arguments are as they were sent: values, requires_grad, .grad, version."""
    skip = set(skip)
    for index, name in enumerate(names):
        if name in skip or index >= len(call.args):
            continue
        sent = call.args[index]
        after = call.args_after[index] if index < len(call.args_after) else None
        before_version = call.versions_before[index] if index < len(call.versions_before) else 0
        if type(sent) is list:
            for j, (s, a) in enumerate(zip(sent, after if type(after) is list else [None] * len(sent))):
                _unchanged_tensor(call.function, f"{name}[{j}]", s, a, 0)
        elif type(sent) in (torch.Tensor, Arg):
            _unchanged_tensor(call.function, name, sent, after, before_version)


def _unchanged_tensor(function: str, name: str, sent, after, before_version) -> None:
    wrapped = type(sent) is Arg
    values = sent.tensor if wrapped else sent
    requires_grad = wrapped and sent.requires_grad
    if type(after) is not RemoteTensor:
        raise Fail(f"{function} replaced argument {name} / {function} 改变了参数 {name}")
    prefix = f"{function} modified its argument {name}"
    zh = f"{function} 修改了参数 {name}"
    if after.data.dtype != values.dtype or not torch.equal(after.data, values):
        raise Fail(f"{prefix}: its values changed; work on a copy (x.detach().clone()) / {zh}：数值变了，请在副本上计算")
    if after.requires_grad != requires_grad:
        raise Fail(f"{prefix}: requires_grad is now {after.requires_grad}; make your own leaf "
                   f"(x.detach().clone().requires_grad_(True)) / {zh}：requires_grad 被改变，请自己创建叶子张量")
    sent_grad = sent.grad if wrapped else None
    if sent_grad is None and after.grad is not None:
        raise Fail(f"{prefix}: its .grad was set; backpropagate into your own leaf copy, not the argument "
                   f"/ {zh}：它的 .grad 被写入了，请对自己的叶子副本求梯度")
    if sent_grad is not None and (after.grad is None or not torch.equal(after.grad.data, sent_grad)):
        raise Fail(f"{prefix}: its existing .grad was changed or cleared / {zh}：原有的 .grad 被修改或清除")
    if type(before_version) is int and after.version != before_version:
        raise Fail(f"{prefix}: it was changed in place (version {before_version} -> {after.version}) "
                   f"/ {zh}：它被原地修改过（版本号 {before_version} -> {after.version}）")
