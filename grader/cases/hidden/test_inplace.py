"""Hidden tests for inplace.py."""

import pytest
import torch

from grader.cases.kit import Arg, Fail, Leaf, close, draw, randint, result_tensor, returned, tensor, unchanged

DTYPES = pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])


@DTYPES
def test_add_into_inplace_random(student, rng, dtype):
    """inplace=True: a += b changes a itself (values and version counter) and returns that same object.
    inplace=True：a += b 修改 a 本身（数值和版本号），并返回同一个对象。"""
    shape = (randint(rng, 1, 4), randint(rng, 1, 4))
    a, b = draw(rng, shape, dtype), draw(rng, shape, dtype)
    call = student.call("add_into", a, b, True)
    result = result_tensor(call, returned(call), "the result", like=a)
    if result.same_as_arg != 0:
        raise Fail("with inplace=True the result is not a itself / inplace=True 时返回的不是 a 本身", mistake="rebind")
    close(result, a.double() + b.double(), "the result")
    after = call.args_after[0]
    close(tensor(after, "a after the call"), a.double() + b.double(), "a after the call")
    if after.version <= call.versions_before[0]:
        raise Fail("a's version counter did not increase / a 的版本号没有增加", mistake="rebind")
    unchanged(call, "a", "b", skip=["a"])


@DTYPES
def test_add_into_out_of_place_random(student, rng, dtype):
    """inplace=False: a + b is a new tensor; a keeps its values and its version counter.
    inplace=False：a + b 是新张量；a 的数值和版本号都不变。"""
    shape = (randint(rng, 1, 4), randint(rng, 1, 4))
    a, b = draw(rng, shape, dtype), draw(rng, shape, dtype)
    call = student.call("add_into", a, b, False)
    result = result_tensor(call, returned(call), "the result", like=a)
    if result.same_as_arg is not None or result.shares_storage_with_arg is not None:
        raise Fail("with inplace=False the result is a itself / inplace=False 时返回的是 a 本身", mistake="not_new_tensor")
    close(result, a.double() + b.double(), "the result")
    unchanged(call, "a", "b")


def _check_safe_add(call, w, delta, grad):
    result = tensor(returned(call), "the result", shape=w.shape, dtype=w.dtype, device=call.device, detached=False)
    if result.same_as_arg != 0:
        raise Fail("the result is not w itself / 返回的不是 w 本身", mistake="not_same_object")
    if not (result.requires_grad and result.is_leaf):
        raise Fail("w is no longer a leaf that requires grad / w 不再是需要梯度的叶子张量", mistake="not_same_object")
    close(result, w.double() + delta.double(), "w after the addition")
    if result.version <= call.versions_before[0]:
        raise Fail("w's version counter did not increase / w 的版本号没有增加", mistake="data_trick")
    after_grad = result.grad
    if grad is None and after_grad is not None:
        raise Fail("w.grad was set / w.grad 被写入了", mistake="grad_touched")
    if grad is not None and (after_grad is None or not torch.equal(after_grad.data, grad)):
        raise Fail("w.grad was changed or cleared / w.grad 被修改或清除了", mistake="grad_touched")


@DTYPES
def test_safe_add_random(student, rng, dtype):
    """Under torch.no_grad(), w.add_(delta) is allowed: w stays the same leaf, still requires grad, and its
    existing .grad is untouched.
    在 torch.no_grad() 中可以 w.add_(delta)：w 仍是同一个需要梯度的叶子张量，已有的 .grad 不变。"""
    shape = (randint(rng, 1, 5),)
    w, delta, grad = draw(rng, shape, dtype), draw(rng, shape, dtype), draw(rng, shape, dtype)
    call = student.call("safe_add_", Leaf(w, grad=grad), delta)
    _check_safe_add(call, w, delta, grad)
    unchanged(call, "w", "delta", skip=["w"])


def test_safe_add_version_counter(student, rng):
    """The version counter must increase as for any in-place operation: w.data.add_() hides the change from
    autograd and is not the answer.
    版本号必须像任何原地运算一样增加：w.data.add_() 会对 autograd 隐藏修改，不是正确答案。"""
    w, delta = draw(rng, (3, 2), torch.float64), draw(rng, (3, 2), torch.float64)
    call = student.call("safe_add_", Leaf(w), delta)
    _check_safe_add(call, w, delta, None)


@DTYPES
def test_shifted_sigmoid_random(student, rng, dtype):
    """s = torch.sigmoid(x) + shift, out of place (sigmoid saved its output for backward), and
    g = sigmoid(x) (1 - sigmoid(x)).
    s = torch.sigmoid(x) + shift，用非原地运算（sigmoid 为 backward 保存了它的输出），g = sigmoid(x)(1 - sigmoid(x))。"""
    x = draw(rng, (randint(rng, 1, 3), randint(rng, 2, 5)), dtype, -3, 3)  # >= 2 elements: s.mean() != s.sum()
    shift = float(draw(rng, (1,), torch.float64, -2, 2))
    call = student.call("shifted_sigmoid_and_grad", x, shift)
    s, g = returned(call, tuple, 2)
    sig = torch.sigmoid(x.double())
    close(result_tensor(call, s, "s", like=x), sig + shift, "s", mistakes={"no_shift_in_s": sig})
    close(result_tensor(call, g, "g", like=x), sig * (1 - sig), "g",
          mistakes={"mean_not_sum": sig * (1 - sig) / x.numel(),
                    "shifted_saved_output": (sig + shift) * (1 - sig - shift)})


def test_shifted_sigmoid_conventions(student, rng):
    """x is not modified (values, .grad, version); s and g are detached.
    x 不被修改（数值、.grad、版本号）；s 和 g 已 detach。"""
    x = draw(rng, (4,), torch.float32)
    call = student.call("shifted_sigmoid_and_grad", Arg(x, grad=torch.ones(4)), 0.5)
    sig = torch.sigmoid(x.double())
    for value, want, name in zip(returned(call, tuple, 2), (sig + 0.5, sig * (1 - sig)), ("s", "g")):
        close(result_tensor(call, value, name, like=x), want, name)
    unchanged(call, "x")
