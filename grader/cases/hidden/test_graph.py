"""Hidden tests for graph.py: random shapes and values, edge cases, conventions."""

import pytest
import torch

from . import oracle
from grader.cases.kit import (SESSION_DEVICE, Arg, Fail, Graph, close, draw, randint, reject, result_tensor, returned,
                              tensor, unchanged)
from grader.cases.public import helpers as fns

DTYPES = pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])


def _graph_args(name, rng):
    n, d, k = randint(rng, 2, 5), randint(rng, 2, 6), randint(rng, 2, 4)
    return {
        "mlp": lambda: (draw(rng, (n, d)), draw(rng, (d, k)), draw(rng, (k,)), draw(rng, (k, 1))),
        "diamond": lambda: (draw(rng, (n,)),),
        "chain": lambda: (draw(rng, (n,)), randint(rng, 3, 9)),
        "shared_leaves": lambda: (draw(rng, (n,)), draw(rng, (n,))),
        "no_grad": lambda: (draw(rng, (n,)),),
        "leaf": lambda: (draw(rng, (n,)),),
    }[name]()


def _check_counts(counts, expected):
    if type(counts) is not dict or any(type(k) is not str or type(v) is not int for k, v in counts.items()):
        raise Fail("return a dict mapping node type names (str) to counts (int) / 应返回 {类型名: 整数个数} 的字典",
                   mistake="wrong_type")
    if counts == expected:
        return
    if expected == {}:
        raise Fail("the counts should be {} / 计数应为 {}", mistake="no_grad_fn")
    if "NoneType" in counts:
        raise Fail("the counts include None / 计数中包含 None", mistake="none_not_skipped")
    if set(counts) == set(expected) and all(counts[k] >= expected[k] for k in counts):
        raise Fail("some nodes were counted more than once / 有节点被重复计数", mistake="counted_twice")
    if "AccumulateGrad" in expected and "AccumulateGrad" not in counts:
        raise Fail("the AccumulateGrad nodes are missing / 缺少 AccumulateGrad 节点", mistake="missing_accumulate_grad")
    raise Fail("wrong node counts / 节点计数不对", mistake="wrong_counts")


@pytest.mark.parametrize("name", ["mlp", "diamond", "chain", "shared_leaves"])
def test_graph_node_counts_random(student, rng, name):
    """Count every node reachable from out.grad_fn once, by type(node).__name__, leaves' AccumulateGrad included.
    从 out.grad_fn 出发，把能到达的每个节点按 type(node).__name__ 计数一次，包括叶子的 AccumulateGrad。"""
    args = _graph_args(name, rng)
    expected = oracle.node_counts(fns.GRAPHS[name](*args))
    _check_counts(returned(student.call("graph_node_counts", Graph(name, args))), expected)


@pytest.mark.parametrize("name", ["no_grad", "leaf"])
def test_graph_node_counts_no_grad_fn(student, rng, name):
    """When out.grad_fn is None (nothing requires grad, or out is itself a leaf) the answer is {}.
    out.grad_fn 为 None 时（没有张量需要梯度，或 out 本身是叶子张量），返回 {}。"""
    call = student.call("graph_node_counts", Graph(name, _graph_args(name, rng)))
    _check_counts(returned(call, errors={"'NoneType'": "no_grad_fn"}), {})


def _check_leaf(call, leaf, source, dtype):
    leaf = tensor(leaf, "the leaf", shape=source.shape, dtype=dtype, device=call.device, detached=False)
    if not leaf.is_leaf:
        raise Fail("the result is not a leaf / 结果不是叶子张量", mistake="not_a_leaf")
    if not leaf.requires_grad:
        raise Fail("the result does not require grad / 结果不需要梯度", mistake="no_requires_grad")
    if leaf.same_as_arg is not None or leaf.shares_storage_with_arg is not None:
        raise Fail("the result shares storage with t / 结果与 t 共享存储", mistake="shares_storage")
    close(leaf, source, "the leaf's values")
    return leaf


@pytest.mark.parametrize("conversion", ["float32->float64", "float64->float32"])
def test_make_leaf_dtype_conversion(student, rng, conversion):
    """With a dtype given, the result is converted and still a leaf that requires grad.
    给定 dtype 时，结果要转换类型，并且仍是需要梯度的叶子张量。"""
    src, dst = [getattr(torch, name) for name in conversion.split("->")]
    t = draw(rng, (randint(rng, 1, 4), randint(rng, 1, 4)), src)
    call = student.call("make_leaf", t, dst)
    _check_leaf(call, returned(call), t, dst)
    unchanged(call, "t")


@DTYPES
def test_make_leaf_device_and_defaults(student, rng, dtype):
    """With device given (and dtype left out) the result is on that device with t's dtype, a new leaf.
    给定 device（不给 dtype）时，结果在该设备上、dtype 与 t 相同，是新的叶子张量。"""
    t = draw(rng, (randint(rng, 1, 6),), dtype)
    call = student.call("make_leaf", t, None, SESSION_DEVICE)
    _check_leaf(call, returned(call), t, dtype)
    unchanged(call, "t")


def test_make_leaf_backward_reaches_it(student, rng):
    """A backward through the new leaf fills its own .grad, and t keeps requires_grad=False.
    对新叶子张量 backward 会写入它自己的 .grad，而 t 的 requires_grad 仍为 False。"""
    t = draw(rng, (3,), torch.float32)
    call = student.call("make_leaf", t, probe="leaf_backward")
    leaf, grad = returned(call, tuple, 2)
    _check_leaf(call, leaf, t, torch.float32)
    close(tensor(grad, "the leaf's .grad after backward", shape=(3,)), torch.full((3,), 3.0), "the leaf's .grad")
    unchanged(call, "t")


def _relu_safe_inputs(rng, dtype):
    n, d, k = randint(rng, 2, 6), randint(rng, 2, 5), randint(rng, 2, 5)
    while True:  # keep z away from relu's kink, where float32 and float64 could disagree (z exactly 0 agrees)
        x, w, b = draw(rng, (n, d)), draw(rng, (d, k)), draw(rng, (k,))
        z = x @ w + b
        if bool(((z.abs() > 0.05) | (z == 0)).all()):
            return x.to(dtype), w.to(dtype), b.to(dtype)
        reject(rng)


@DTYPES
def test_intermediate_grads_random(student, rng, dtype):
    """retain_grad() on z and a before one backward; then z.grad, a.grad, w.grad and b.grad hold the answer.
    backward 之前对 z 和 a 调用 retain_grad()；之后 z.grad、a.grad、w.grad、b.grad 就是答案。"""
    x, w, b = _relu_safe_inputs(rng, dtype)
    call = student.call("intermediate_grads", x, w, b)
    got = returned(call, dict)
    want = oracle.intermediate_grads(x, w, b)
    like = {"z": x @ w, "a": x @ w, "w": w, "b": b}
    _check_intermediate_grads(call, got, want, like, (x @ w).numel())


def _check_intermediate_grads(call, got, want, like, numel):
    for key in ("z", "a", "w", "b"):
        if key not in got:
            raise Fail(f"the key {key!r} is missing / 缺少键 {key!r}", mistake="missing_key")
        if got[key] is None:
            raise Fail(f"grads[{key!r}] is None / grads[{key!r}] 是 None", mistake="no_retain_grad")
        mistakes = {"wrong_loss": want[key] * numel}
        if key == "z":
            mistakes["relu_skipped"] = want["a"]
        close(result_tensor(call, got[key], f"grads[{key!r}]", like=like[key]), want[key], f"grads[{key!r}]",
              mistakes=mistakes)


def test_intermediate_grads_conventions(student, rng):
    """Exactly the keys "z", "a", "w", "b"; x, w and b unchanged (values, requires_grad, .grad, version).
    字典的键恰好是 "z"、"a"、"w"、"b"；x、w、b 不被修改（数值、requires_grad、.grad、版本号）。"""
    x, w, b = _relu_safe_inputs(rng, torch.float32)
    sentinel = torch.full_like(w, 7.0)
    call = student.call("intermediate_grads", x, Arg(w, grad=sentinel), b)
    got = returned(call, dict)
    if sorted(got) != ["a", "b", "w", "z"]:
        raise Fail(f"the keys are {sorted(got)} / 键是 {sorted(got)}", mistake="missing_key")
    _check_intermediate_grads(call, got, oracle.intermediate_grads(x, w, b), {"z": x @ w, "a": x @ w, "w": w, "b": b},
                              (x @ w).numel())
    unchanged(call, "x", "w", "b")


@pytest.mark.parametrize("branch", ["positive", "negative"])
@DTYPES
def test_dynamic_doubling_random(student, rng, dtype, branch):
    """The graph follows the Python control flow that actually ran: count the loop's body runs, and the
    100 * b branch multiplies the gradient by 100.
    计算图记录实际执行的 Python 控制流：统计循环体执行次数；走 100 * b 分支时梯度要乘以 100。"""
    a = draw(rng, (randint(rng, 1, 3), randint(rng, 1, 4)), torch.float64, 0.01, 3.0)
    a = (a if branch == "positive" else -a).to(dtype)
    call = student.call("dynamic_doubling", a)
    c, grad, steps = returned(call, tuple, 3)
    want_c, want_grad, want_steps = oracle.dynamic_doubling(a)
    if type(steps) is not int:
        raise Fail(f"steps is a {type(steps).__name__} / steps 是 {type(steps).__name__}", mistake="steps_not_int")
    if steps != want_steps:
        raise Fail("steps is wrong / steps 不对", f"got {steps}, expected {want_steps}",
                   mistake="steps_off_by_one" if abs(steps - want_steps) == 1 else None)
    close(result_tensor(call, c, "c", like=a), want_c, "c")
    close(result_tensor(call, grad, "grad", like=a), want_grad, "grad",
          mistakes={"unscaled_branch": want_grad / 100})
    unchanged(call, "a")


def test_dynamic_doubling_conventions(student, rng):
    """a is not modified: the program runs on a leaf copy of it.
    a 不被修改：程序在它的叶子副本上运行。"""
    a = draw(rng, (4,), torch.float32, 0.1, 1.0)
    call = student.call("dynamic_doubling", Arg(a, grad=torch.ones(4)))
    c, grad, _ = returned(call, tuple, 3)
    want_c, want_grad, _ = oracle.dynamic_doubling(a)
    close(result_tensor(call, c, "c", like=a), want_c, "c")
    close(result_tensor(call, grad, "grad", like=a), want_grad, "grad")
    unchanged(call, "a")
