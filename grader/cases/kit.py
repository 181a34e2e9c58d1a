"""The kit test cases are written with: argument markers, input drawing, and checks.

Every check raises `Fail(reason, detail, mistake)`. The reason names what is wrong; it never
shows input values, so hidden tests may report it. The detail shows numbers and is shown for
public tests only. Where the failure matches a known learner mistake, `mistake` is its key in
the course file (grader/cases/course.yaml): the message gets that mistake's advice ("gradients accumulate: ...")
and the score file its id. Where the student's code raised, `raised` carries the error and the plugin
names the mistake it means in the course being graded (`grader.host.plugin.classify`): the kit reads
no course of its own; what it needs of one comes with the `student` (`StudentCode.course`).
Messages are in English and 简体中文.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from typing import Any, Callable, Iterable

import torch

from grader.safetext import clean_text
from grader.host.counterexample import Draws
from grader.host.student_code import CallResult
from grader.protocol.markers import SESSION_DEVICE, Arg, Fn, Graph, Leaf  # noqa: F401  (re-exported for tests)
from grader.protocol.wire import DTYPE_NAMES, RemoteObject, RemoteTensor, tensor_bytes

FLOAT_DTYPES = (torch.float32, torch.float64)


class Fail(AssertionError):
    """A check that did not hold. `reason` says what is wrong (bilingual, no input values);
    `detail` shows numbers and is reported for public tests only; `mistake` is the key of a known
    learner mistake (the course file's `mistakes:`) that the failure matches, `fill` its placeholders.
    `raised`: (function, "Type: message") where the student's code raised; without a `mistake`, the
    mistake the course file's `error:` texts give that error. The plugin turns the key into the score
    file's `mistake: {id, en, zh}` and appends its advice."""

    def __init__(self, reason: str, detail: str = "", mistake: str | None = None, *,
                 raised: tuple[str, str] | None = None, **fill: str):
        super().__init__(reason + (f"\n{detail}" if detail else ""))
        self.reason = reason
        self.detail = detail
        self.mistake = mistake
        self.raised = raised
        self.fill = fill


# ----------------------------------------------------------------------------- labels in both languages

# What the checks call the values they look at, in Chinese. Symbols (df/dx, H @ v, g1, grads['z'])
# read the same in both languages and need no entry.
LABELS = {
    "the result": "结果",
    "the leaf": "叶子张量",
    "the leaf's values": "叶子张量的值",
    "the leaf's .grad after backward": "backward 之后叶子张量的 .grad",
    "the leaf's .grad": "叶子张量的 .grad",
    "the stack of gradients": "堆叠的梯度",
    "the gradient": "梯度",
    "the fitted w": "拟合得到的 w",
    "the Jacobian": "雅可比矩阵",
    "the estimate": "估计值",
    "the prediction": "预测值",
    "the later gradient": "之后求得的梯度",
    "forward": "前向结果",
    "first derivative": "一阶导数",
    "second derivative": "二阶导数",
    "w after the addition": "加法之后的 w",
    "a after the call": "调用之后的 a",
    "a after a += b": "a += b 之后的 a",
}


def zh_subject(what: str) -> str:
    """`zh(what)` as the subject of a Chinese sentence: a space after a Latin symbol ("H @ v 的"), none
    after Chinese ("梯度的")."""
    name = zh(what)
    return name if name and "\u4e00" <= name[-1] <= "\u9fff" else name + " "


def zh(what: str) -> str:
    """The Chinese name of a label: its LABELS entry, "derivative n" as "n 阶导数", else the symbol itself."""
    if what.startswith("derivative "):
        return f"{what.split()[1]} 阶导数"
    return LABELS.get(what, what)


# ----------------------------------------------------------------------------- right answers, once per class

ANSWERS_KEPT = 4096  # per oracle function: a class at one seed needs a few dozen


def answer(function: Callable) -> Callable:
    """For an oracle function whose result depends on its arguments' values only (a test's inputs, drawn
    from the seed): computed once per grading process and reused for every submission of the class, per
    seed, device and input. Arguments are tensors (told apart by dtype, shape and bytes, whatever their grad
    state), numbers, strings and tuples or lists of them; every caller gets its own copy of the tensors.
    Not for an answer that depends on more than values, such as a graph's structure."""
    kept: OrderedDict = OrderedDict()

    @functools.wraps(function)
    def cached(*args, **kwargs):
        key = (_key(args), _key(sorted(kwargs.items())))
        if key in kept:
            kept.move_to_end(key)
        else:
            kept[key] = function(*args, **kwargs)
            if len(kept) > ANSWERS_KEPT:
                kept.popitem(last=False)
        return _copy(kept[key])

    cached.kept = kept
    return cached


def _key(value: Any) -> Any:
    t = type(value)
    if t is torch.Tensor:
        return ("tensor", str(value.device), DTYPE_NAMES[value.dtype], tuple(value.shape), tensor_bytes(value))
    if t in (tuple, list):
        return (t.__name__, tuple(_key(v) for v in value))
    if value is None or t in (bool, int, float, str, torch.dtype):
        return (t.__name__, value)
    raise TypeError(f"an answer cannot depend on a {t.__name__}")


def _copy(value: Any) -> Any:
    t = type(value)
    if t is torch.Tensor:
        return value.clone()
    if t in (tuple, list):
        return t(_copy(v) for v in value)
    if t is dict:
        return {k: _copy(v) for k, v in value.items()}
    return value


# ----------------------------------------------------------------------------- drawing inputs

def draw(rng: torch.Generator, shape: Iterable[int], dtype: torch.dtype = torch.float64,
         low: float = -1.0, high: float = 1.0) -> torch.Tensor:
    """Uniform values in [low, high), drawn in float64 on the CPU, then cast to `dtype`. (During a
    counterexample search `rng` is a `Draws`: the values come from Hypothesis, shrinkable.)"""
    if type(rng) is Draws:
        return rng.tensor(tuple(shape), dtype, low, high)
    u = torch.rand(tuple(shape), generator=rng, dtype=torch.float64)
    return (low + (high - low) * u).to(dtype)


def draw_away_from(rng: torch.Generator, shape, dtype, low: float, high: float, avoid: float = 0.0,
                   margin: float = 0.05) -> torch.Tensor:
    """Like draw, but no value within `margin` of `avoid` (keeps relu kinks out of reach)."""
    if type(rng) is Draws:
        return rng.tensor(tuple(shape), dtype, low, high, avoid, margin)
    t = draw(rng, shape, torch.float64, low, high)
    t = torch.where((t - avoid).abs() < margin, t + 2 * margin * torch.sign(t - avoid + 1e-12), t)
    return t.to(dtype)


def reject(rng) -> None:
    """The inputs just drawn do not suit the test: the caller draws again. (During a counterexample search,
    Hypothesis draws other inputs instead of a loop that shrinking could not follow.)"""
    if type(rng) is Draws:
        rng.reject()


def randint(rng: torch.Generator, low: int, high: int) -> int:
    """An int in [low, high]."""
    if type(rng) is Draws:
        return rng.integer(low, high)
    return int(torch.randint(low, high + 1, (1,), generator=rng).item())


def pick(rng: torch.Generator, options: tuple | list):
    """One of `options`. (During a search, Hypothesis shrinks towards the first: put the simplest first.)"""
    return options[randint(rng, 0, len(options) - 1)]


# ----------------------------------------------------------------------------- checking what came back

def returned(call: CallResult, kind: type | None = None, length: int | None = None,
             errors: dict[str, str] | None = None) -> Any:
    """The value the call returned; fails if it raised or returned the wrong kind of value.

    A raised exception is named as a known mistake: by `errors` (a piece of "Type: message" -> mistake
    key, for a test that knows what an error means in its context), else by the course file (`raised`)."""
    if call.outcome == "raised":
        exc = call.exception or {}
        text = f"{exc.get('type')}: {exc.get('message', '')}"
        key = next((k for piece, k in (errors or {}).items() if piece in text), None)
        raise Fail(f"{call.function} raised {text[:400]} / {call.function} 抛出了异常", where_raised(exc), mistake=key,
                   raised=(call.function, text))
    value = call.value
    if kind is not None and type(value) is not kind:
        raise Fail(f"{call.function} returned {describe(value)}; expected a {kind.__name__}"
                   + (f" of {length} values" if length else "") + f" / 应返回 {kind.__name__}",
                   mistake="returned_none" if value is None else "wrong_type")
    if length is not None and len(value) != length:
        raise Fail(f"{call.function} returned {len(value)} values; expected {length} / 应返回 {length} 个值",
                   mistake="wrong_type")
    return value


def where_raised(exception: dict) -> str:
    """The submission's own frames of an exception, as Python prints a traceback (public tests only: a
    detail)."""
    frames = exception.get("frames")
    if type(frames) is not list:
        return ""
    lines = []
    for frame in frames:
        if type(frame) is list and len(frame) == 3 and type(frame[0]) is str and type(frame[1]) is int:
            source = clean_text(str(frame[2]), limit=200, one_line=True)
            lines.append(f'  File "exercises/{frame[0]}", line {frame[1]}' + (f"\n    {source}" if source else ""))
    return ("Traceback (your code, innermost last) / 出错位置（你的代码，最内层在最后）:\n" + "\n".join(lines)) if lines else ""


def raised(call: CallResult, exc_type: str, match: str | None = None, mistake: str | None = None) -> None:
    """The call raised `exc_type` (by name), whose message contains `match`."""
    if call.outcome != "raised":
        raise Fail(f"{call.function} returned {describe(call.value)} instead of raising {exc_type} / 应抛出 {exc_type}",
                   mistake=mistake)
    got = (call.exception or {}).get("type")
    if got != exc_type:
        raise Fail(f"{call.function} raised {got}; expected {exc_type} / 应抛出 {exc_type}", mistake=mistake)
    if match and match not in (call.exception or {}).get("message", ""):
        raise Fail(f"{call.function} raised {exc_type} without {match!r} in its message / 异常信息中缺少 {match!r}")


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
        raise Fail(f"{what} is {describe(value)}, not a torch.Tensor / {zh_subject(what)}应为 torch.Tensor",
                   mistake="returned_none" if value is None else "wrong_type")
    if shape is not None and tuple(value.shape) != tuple(shape):
        raise Fail(f"{what} has the wrong shape / {zh_subject(what)}的形状不对",
                   f"shape {list(value.shape)}, expected {list(shape)}", mistake="wrong_shape")
    if dtype is not None and value.dtype != dtype:
        got, want = DTYPE_NAMES.get(value.dtype), DTYPE_NAMES.get(dtype)
        raise Fail(f"{what} has dtype {got}, expected {want} / {zh_subject(what)}的 dtype 是 {got}，应为 {want}",
                   mistake="float32_result" if (got, want) == ("float32", "float64") else "wrong_dtype")
    if device is not None and value.device_type != torch.device(device).type:
        raise Fail(f"{what} is on {value.device}, expected {device} / {zh_subject(what)}应在 {device} 上",
                   mistake="wrong_device")
    if detached and (value.requires_grad or value.grad_fn is not None):
        raise Fail(f"{what} is still attached to a graph (requires_grad={value.requires_grad}, "
                   f"grad_fn={value.grad_fn}) / {zh_subject(what)}仍连接在计算图上", mistake="not_detached")
    return value


def tol(dtype: torch.dtype) -> tuple[float, float]:
    """(rtol, atol) for comparing a result computed in `dtype` with a float64 reference."""
    return {torch.float32: (2e-4, 2e-5), torch.float64: (1e-7, 1e-10)}.get(dtype, (1e-2, 1e-3))


def close(actual: RemoteTensor, expected: torch.Tensor, what: str, *, rtol: float | None = None,
          atol: float | None = None, mistakes: dict[str, torch.Tensor] | None = None) -> None:
    """Values of `actual` match `expected`; names a known mistake (its key in `mistakes`) when they
    match the answer that mistake gives instead."""
    default_rtol, default_atol = tol(actual.dtype)
    rtol = default_rtol if rtol is None else rtol
    atol = default_atol if atol is None else atol
    got = actual.data.to(torch.float64)
    want = expected.detach().to("cpu", torch.float64)
    if tuple(got.shape) != tuple(want.shape):
        raise Fail(f"{what} has the wrong shape / {zh_subject(what)}的形状不对",
                   f"shape {list(got.shape)}, expected {list(want.shape)}", mistake="wrong_shape")
    if _allclose(got, want, rtol, atol):
        return
    for key, alternative in (mistakes or {}).items():
        alt = alternative.detach().to("cpu", torch.float64)
        if alt.shape == got.shape and _allclose(got, alt, rtol, atol) and not _allclose(alt, want, rtol, atol):
            raise Fail(f"{what} has wrong values / {zh_subject(what)}的数值不对", _difference(got, want), mistake=key)
    raise Fail(f"{what} has wrong values / {zh_subject(what)}的数值不对", _difference(got, want))


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
                   f"本题要求用 torch.autograd.grad 自己实现", mistake="shortcut")


def autograd_calls(call: CallResult) -> int:
    """How many times the call ran torch.autograd.grad or backward, as the worker reported."""
    return call.api_calls.get("torch.autograd.grad", 0) + call.api_calls.get("torch.autograd.backward", 0)


# ----------------------------------------------------------------------------- docstring examples

def docstring_examples(student, name: str, errors: dict[int, dict[str, str]] | None = None,
                       wrong: dict[int, dict[str, str]] | None = None) -> None:
    """The examples of `name`'s docstring (as the course wrote them) give, with the student's code,
    what the docstring shows. Compared here, as `python -m doctest` compares them, except that lines
    the student's code printed do not count: the example's value is compared (`grader check` shows the
    prints under the check). `errors`: for the example at that index (from 0), which error text means
    which mistake; where it is not given, an error names a mistake only when one mistake alone of
    the exercise fits it. `wrong`: for the example at that index, what a mistake makes it show
    (mistake -> the text, as the docstring would write it)."""
    import doctest

    from grader.cases import examples

    course = student.course
    wanted = examples.load(course).get(name, [])
    if not wanted:
        return
    call = student.call(name, name, [e["source"] for e in wanted], probe="docstring_examples")
    printed = returned(call, list)
    checker = doctest.OutputChecker()
    where = f"exercises/{course.exercise(name).module}"
    for index, (example, got) in enumerate(zip(wanted, printed)):
        shown = ">>> " + example["source"].rstrip().replace("\n", "\n... ")
        line = f"{where}, line {example['line']}"
        if type(got) is dict and "raised" in got:
            text = str(got.get("raised"))
            raise Fail(f"the docstring example ({line}) raised / 文档字符串示例（{line}）抛出了异常:\n{shown}\n"
                       f"{text[:400]}", mistake=_example_mistake(course, name, text, (errors or {}).get(index)))
        value, output = (got.get("shown"), got.get("output")) if type(got) is dict else (None, None)
        if type(value) is not str or type(output) is not str:
            raise Fail(f"the docstring example ({line}) could not be read / 文档字符串示例（{line}）的结果无法读取")
        if checker.check_output(example["want"], value, 0) or checker.check_output(example["want"], output, 0):
            continue
        extra = output != value
        mistake = next((key for key, text in (wrong or {}).get(index, {}).items()
                        if checker.check_output(text.rstrip("\n") + "\n", value, 0)), None)
        raise Fail(f"the docstring example ({line}) gives something else / 文档字符串示例（{line}）的结果不同:"
                   f"\n{shown}" + ("\nits value is compared; what your code printed is shown below, not compared / "
                                   "比较的是示例的值；你的代码打印的内容显示在下方，不参与比较" if extra else ""),
                   f"expected:\n{example['want']}got:\n{value or '(nothing: the example returned None) / （无：示例返回 None）'}",
                   mistake=mistake)
    if len(printed) < len(wanted):
        raise Fail("the docstring examples did not all run / 文档字符串示例没有全部运行")


def _example_mistake(course, name: str, text: str, errors: dict[str, str] | None) -> str | None:
    """The mistake an error of a docstring example names: the test's own map for that example first;
    else the one mistake of the exercise whose error text fits, else the one common mistake that fits
    (none when several do: a wrong hint is worse than none)."""
    for fragment, mistake in (errors or {}).items():
        if fragment in text:
            return mistake
    for section in (course.exercise(name).mistakes, course.common_mistakes):
        fitting = [key for key, m in section.items() if m.error and m.error in text]
        if fitting:
            return fitting[0] if len(fitting) == 1 else None
    return None


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
    arg = name.split("[")[0]
    prefix = f"{function} modified its argument {name}"
    zh_prefix = f"{function} 修改了参数 {name}"
    if type(after) is not RemoteTensor:
        raise Fail(f"{function} replaced argument {name} / {function} 替换了参数 {name}", mistake="argument_replaced",
                   arg=arg)
    if after.data.dtype != values.dtype or not torch.equal(after.data, values):
        raise Fail(f"{prefix}: its values changed / {zh_prefix}：数值变了", mistake="argument_values_changed", arg=arg)
    if after.requires_grad != requires_grad:
        raise Fail(f"{prefix}: requires_grad is now {after.requires_grad} / {zh_prefix}：requires_grad 变成了 "
                   f"{after.requires_grad}",
                   mistake="argument_requires_grad_set" if after.requires_grad else "argument_requires_grad_cleared",
                   arg=arg)
    sent_grad = sent.grad if wrapped else None
    if sent_grad is None and after.grad is not None:
        raise Fail(f"{prefix}: its .grad was set / {zh_prefix}：它的 .grad 被写入了", mistake="argument_grad_set", arg=arg)
    if sent_grad is not None and (after.grad is None or not torch.equal(after.grad.data, sent_grad)):
        raise Fail(f"{prefix}: its existing .grad was changed or cleared / {zh_prefix}：原有的 .grad 被修改或清除",
                   mistake="argument_grad_changed", arg=arg)
    if type(before_version) is int and after.version != before_version:
        raise Fail(f"{prefix}: it was changed in place (version {before_version} -> {after.version}) "
                   f"/ {zh_prefix}：它被原地修改过（版本号 {before_version} -> {after.version}）",
                   mistake="argument_changed_in_place", arg=arg)
