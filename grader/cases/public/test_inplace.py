"""Public tests for inplace.py."""

import torch

from grader.cases.kit import Fail, Leaf, close, docstring_examples, result_tensor, returned, tensor, unchanged


def test_add_into_lecture(student):
    """a += b keeps the same object (same id, same storage) and bumps a._version; a = a + b makes a new one.
    a += b 保持同一个对象（id 和存储都不变）并增加 a._version；a = a + b 会生成新对象。"""
    a, b = torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])
    call = student.call("add_into", a, b, True)
    result = result_tensor(call, returned(call), "the result", like=a)
    if result.same_as_arg != 0:
        raise Fail("with inplace=True the result must be a itself / inplace=True 时应返回 a 本身", mistake="rebind")
    close(result, torch.tensor([4.0, 6.0]), "a after a += b")
    if call.args_after[0].version <= call.versions_before[0]:
        raise Fail("a._version did not increase: use an in-place operation / a._version 没有增加：请使用原地运算")
    call = student.call("add_into", a, b, False)
    result = result_tensor(call, returned(call), "the result", like=a)
    if result.same_as_arg is not None or result.shares_storage_with_arg is not None:
        raise Fail("with inplace=False the result must be a new tensor / inplace=False 时应返回新张量")
    close(result, torch.tensor([4.0, 6.0]), "a + b")
    unchanged(call, "a", "b")


def test_safe_add_lecture(student):
    """w.add_(1) on a leaf that requires grad raises; under torch.no_grad() it is allowed. The result is w
    itself, still a leaf that requires grad, with its version counter increased.
    对需要梯度的叶子张量直接 w.add_(1) 会报错；在 torch.no_grad() 中可以。返回 w 本身，仍是需要梯度的叶子张量，版本号增加。"""
    w, delta = torch.tensor([1.0]), torch.tensor([1.0])
    call = student.call("safe_add_", Leaf(w), delta)
    result = tensor(returned(call), "the result", shape=(1,), dtype=torch.float32, device=call.device, detached=False)
    if result.same_as_arg != 0:
        raise Fail("the result must be w itself / 应返回 w 本身")
    if not (result.requires_grad and result.is_leaf):
        raise Fail("w must stay a leaf that requires grad / w 应保持为需要梯度的叶子张量")
    close(result, torch.tensor([2.0]), "w after the addition")
    if result.version <= call.versions_before[0]:
        raise Fail("w's version counter did not increase: the change was hidden from autograd (w.data?) "
                   "/ w 的版本号没有增加：修改被隐藏了（用了 w.data？）", mistake="data_trick")
    unchanged(call, "w", "delta", skip=["w"])


def test_shifted_sigmoid_lecture(student):
    """x = 0, shift = 1: s = sigmoid(0) + 1 = 1.5 and ds/dx = sigmoid(0)(1 - sigmoid(0)) = 0.25. Shifting
    sigmoid's output in place breaks backward: sigmoid saved that output for its gradient.
    x = 0，shift = 1：s = sigmoid(0) + 1 = 1.5，ds/dx = 0.25。原地修改 sigmoid 的输出会破坏 backward：
    sigmoid 为求梯度保存了这个输出。"""
    x = torch.tensor([0.0])
    call = student.call("shifted_sigmoid_and_grad", x, 1.0)
    s, g = returned(call, tuple, 2)
    close(result_tensor(call, s, "s", like=x), torch.tensor([1.5]), "s", mistakes={"no_shift_in_s": torch.tensor([0.5])})
    # sigmoid's backward s (1 - s) on the shifted output 1.5: 1.5 * (1 - 1.5) = -0.75
    close(result_tensor(call, g, "g", like=x), torch.tensor([0.25]), "g",
          mistakes={"shifted_saved_output": torch.tensor([-0.75])})
    unchanged(call, "x")


def test_add_into_docstring(student):
    """The examples in add_into's docstring give what they show (python -m doctest, on your code).
    add_into 文档字符串中的示例给出其中写明的结果。"""
    docstring_examples(student, "add_into")


def test_safe_add_docstring(student):
    """The examples in safe_add_'s docstring give what they show (python -m doctest, on your code).
    safe_add_ 文档字符串中的示例给出其中写明的结果。"""
    docstring_examples(student, "safe_add_")


def test_shifted_sigmoid_and_grad_docstring(student):
    """The examples in shifted_sigmoid_and_grad's docstring give what they show (python -m doctest, on your code).
    shifted_sigmoid_and_grad 文档字符串中的示例给出其中写明的结果。"""
    # two elements: backward through s.mean() halves the gradient
    docstring_examples(student, "shifted_sigmoid_and_grad",
                       wrong={0: {"mean_not_sum": "(tensor([1.5000, 1.8808]), tensor([0.1250, 0.0525]))"}})


def test_add_into_float64(student):
    """Both cases in float64: the result keeps a's dtype.
    两种情况都用 float64：结果保持 a 的 dtype。"""
    for inplace in (True, False):
        a, b = torch.tensor([1.0, 2.0], dtype=torch.float64), torch.tensor([3.0, 4.0], dtype=torch.float64)
        call = student.call("add_into", a, b, inplace)
        close(result_tensor(call, returned(call), "the result", like=a), torch.tensor([4.0, 6.0]), "the result")


def test_safe_add_keeps_grad(student):
    """w arrives with a .grad: after the addition it is exactly as it was.
    w 传入时已有 .grad：加法之后它必须完全不变。"""
    w, delta, grad = torch.tensor([1.0, 2.0]), torch.tensor([0.5, 0.5]), torch.tensor([3.0, 4.0])
    call = student.call("safe_add_", Leaf(w, grad=grad), delta)
    result = tensor(returned(call), "the result", shape=(2,), dtype=torch.float32, device=call.device, detached=False)
    close(result, torch.tensor([1.5, 2.5]), "w after the addition")
    if result.grad is None or not torch.equal(result.grad.data, grad):
        raise Fail("w.grad was changed or cleared / w.grad 被修改或清除了", mistake="grad_touched")
