"""Public tests for backward.py: the lecture's numbers w = 1, x = 2."""

import math

import torch

from grader.cases.kit import close, docstring_examples, result_tensor, returned, unchanged


def test_two_losses_grad_lecture(student):
    """w = 1, x = 2: dL1/dw = x e^(xw) = 2e^2 ≈ 14.778 after the first backward; after the second,
    gradients have accumulated: 2e^2 + 4e^4 ≈ 233.17. The second backward needs retain_graph=True on the first.
    w = 1, x = 2：第一次 backward 后 dL1/dw = 2e^2 ≈ 14.778；第二次之后梯度累加为 2e^2 + 4e^4 ≈ 233.17。
    第一次 backward 需要 retain_graph=True。"""
    w, x = torch.tensor([1.0]), torch.tensor([2.0])
    call = student.call("two_losses_grad", w, x)
    g1, g12 = returned(call, tuple, 2)
    d1, d2 = torch.tensor([2 * math.e ** 2]), torch.tensor([4 * math.e ** 4])
    close(result_tensor(call, g1, "g1", like=w), d1, "g1", mistakes={"aliased_grad": d1 + d2})
    close(result_tensor(call, g12, "g12", like=w), d1 + d2, "g12", mistakes={"not_accumulated": d2})
    unchanged(call, "w", "x")


def test_weighted_backward_lecture(student):
    """w = 1, x = 2, weights = [1, 2]: dy0/dw = 2w + x + 1 = 5 and dy1/dw = 2, so the weighted gradient
    is 1 * 5 + 2 * 2 = 9.
    w = 1, x = 2, weights = [1, 2]：dy0/dw = 2w + x + 1 = 5，dy1/dw = 2，加权梯度为 1 * 5 + 2 * 2 = 9。"""
    w, x, weights = torch.tensor([1.0]), torch.tensor([2.0]), torch.tensor([1.0, 2.0])
    call = student.call("weighted_backward", w, x, weights)
    # .sum() before backward weighs both by 1: 5 + 2 = 7
    close(result_tensor(call, returned(call), "the gradient", like=w), torch.tensor([9.0]), "the gradient",
          mistakes={"unweighted": torch.tensor([7.0])})
    unchanged(call, "w", "x", "weights")


def test_two_losses_grad_docstring(student):
    """The examples in two_losses_grad's docstring give what they show (python -m doctest, on your code).
    two_losses_grad 文档字符串中的示例给出其中写明的结果。"""
    docstring_examples(student, "two_losses_grad")


def test_weighted_backward_docstring(student):
    """The examples in weighted_backward's docstring give what they show (python -m doctest, on your code).
    weighted_backward 文档字符串中的示例给出其中写明的结果。"""
    # y0 and y1 interleaved (torch.stack(..., dim=1).flatten()) meet the weights in another order
    docstring_examples(student, "weighted_backward", wrong={1: {"interleaved": "tensor([7., 4.])"}})


def test_two_losses_grad_float64(student):
    """The lecture's numbers in float64: g1 and g12 come back in float64, w's dtype (a leaf made with
    torch.tensor(w.tolist()) would be float32).
    float64 下的讲义数值：g1 和 g12 也是 float64，与 w 的 dtype 相同（用 torch.tensor(w.tolist()) 建的叶子是 float32）。"""
    w, x = torch.tensor([1.0], dtype=torch.float64), torch.tensor([2.0], dtype=torch.float64)
    call = student.call("two_losses_grad", w, x)
    g1, g12 = returned(call, tuple, 2)
    close(result_tensor(call, g1, "g1", like=w), torch.tensor([2 * math.e ** 2]), "g1")
    close(result_tensor(call, g12, "g12", like=w), torch.tensor([2 * math.e ** 2 + 4 * math.e ** 4]), "g12")
