"""Public tests for extensions.py."""

import math

import torch

from grader.cases.kit import (FLOAT_DTYPES, Fail, Fn, Leaf, close, docstring_examples, draw, pick, randint, result_tensor,
                              returned, unchanged)
from grader.cases.public import finite_differences as fd


def test_smooth_abs_small(student):
    """SmoothAbs(x, eps=1) at x = [-1, 0, 2]: forward sqrt(x ** 2 + 1), first derivative x / sqrt(x ** 2 + 1),
    second derivative 1 / (x ** 2 + 1) ** 1.5, both through your backward (which must be differentiable).
    SmoothAbs(x, eps=1)，x = [-1, 0, 2]：前向 sqrt(x ** 2 + 1)，一阶导 x / sqrt(x ** 2 + 1)，
    二阶导 1 / (x ** 2 + 1) ** 1.5，都通过你的 backward 计算（backward 本身必须可导）。"""
    x = torch.tensor([-1.0, 0.0, 2.0], dtype=torch.float64)
    ones = torch.ones(3, dtype=torch.float64)
    call = student.call("SmoothAbs", x, 1.0, ones, ones, probe="smooth_abs")
    y, dy, d2y = returned(call, tuple, 3)
    r2, r5 = math.sqrt(2), math.sqrt(5)
    close(result_tensor(call, y, "forward", like=x), torch.tensor([r2, 1.0, r5]), "forward")
    close(result_tensor(call, dy, "first derivative", like=x), torch.tensor([-1 / r2, 0.0, 2 / r5]), "first derivative",
          mistakes={"sign_instead": x.sign()})
    # y detached in backward: the derivative of x / y misses the y term and is 1 / y
    close(result_tensor(call, d2y, "second derivative", like=x), torch.tensor([r2 ** -3, 1.0, r5 ** -3]),
          "second derivative", mistakes={"detached_in_backward": torch.tensor([1 / r2, 1.0, 1 / r5])})


def test_numerical_gradient_small(student):
    """f(x) = sum(sin(x)) at x = [0, 1]: the central difference (f(x + eps e_i) - f(x - eps e_i)) / (2 eps)
    gives cos(x) = [1, 0.5403].
    f(x) = sum(sin(x))，x = [0, 1]：中心差分 (f(x + eps e_i) - f(x - eps e_i)) / (2 eps) 得到 cos(x) = [1, 0.5403]。"""
    x = torch.tensor([0.0, 1.0], dtype=torch.float64)
    call = student.call("numerical_gradient", Fn("sin_sum"), x)
    # the one-sided difference (f(x + eps) - f(x)) / eps, as the code would compute it
    eps = 1e-6
    forward = torch.stack([(torch.sin(x + eps * e).sum() - torch.sin(x).sum()) / eps for e in torch.eye(2, dtype=x.dtype)])
    close(result_tensor(call, returned(call), "the estimate", like=x), torch.cos(x), "the estimate", rtol=1e-7, atol=1e-8,
          mistakes={"forward_difference": forward})
    unchanged(call, "f", "x")


def test_frozen_predict_small(student):
    """w = [[1], [2]] (requires grad), x = [[3, 4]]: x @ w = [[11]], computed without a graph, and w.grad untouched.
    w = [[1], [2]]（需要梯度），x = [[3, 4]]：x @ w = [[11]]，计算时不记录计算图，w.grad 保持不变。"""
    w, x = torch.tensor([[1.0], [2.0]]), torch.tensor([[3.0, 4.0]])
    call = student.call("frozen_predict", Leaf(w), x)
    close(result_tensor(call, returned(call), "the prediction", like=x, shape=(1, 1)), torch.tensor([[11.0]]),
          "the prediction")
    unchanged(call, "w", "x")


def test_smooth_abs_docstring(student):
    """The examples in SmoothAbs's docstring give what they show (python -m doctest, on your code).
    SmoothAbs 文档字符串中的示例给出其中写明的结果。"""
    docstring_examples(student, "SmoothAbs")


def test_numerical_gradient_docstring(student):
    """The examples in numerical_gradient's docstring give what they show (python -m doctest, on your code).
    numerical_gradient 文档字符串中的示例给出其中写明的结果。"""
    # the first example's x is float32: f evaluated in float32 loses the difference in rounding
    docstring_examples(student, "numerical_gradient", wrong={0: {"float32_evaluation": "tensor(4.7684)"}})


def test_frozen_predict_docstring(student):
    """The examples in frozen_predict's docstring give what they show (python -m doctest, on your code).
    frozen_predict 文档字符串中的示例给出其中写明的结果。"""
    docstring_examples(student, "frozen_predict")


def test_smooth_abs_other_eps(student):
    """SmoothAbs(x, eps=0.25) at x = [0, 1]: forward [0.5, sqrt(1.25)] and first derivative x / sqrt(x ** 2 + eps)
    = [0, 1 / sqrt(1.25)] (with eps = 1 a backward that used eps ** 2 would go unnoticed).
    SmoothAbs(x, eps=0.25)，x = [0, 1]：前向 [0.5, sqrt(1.25)]，一阶导 x / sqrt(x ** 2 + eps) = [0, 1 / sqrt(1.25)]
    （eps = 1 时，误用 eps ** 2 的 backward 看不出来）。"""
    x = torch.tensor([0.0, 1.0], dtype=torch.float64)
    ones = torch.ones(2, dtype=torch.float64)
    call = student.call("SmoothAbs", x, 0.25, ones, ones, probe="smooth_abs_orders")
    y, dy, _ = returned(call, tuple, 3)
    r = math.sqrt(1.25)
    close(result_tensor(call, y, "forward", like=x), torch.tensor([0.5, r]), "forward")
    if type(dy) is str:
        raise Fail(f"the first derivative could not be computed: {dy} / 无法计算一阶导数")
    close(result_tensor(call, dy, "first derivative", like=x), torch.tensor([0.0, 1 / r]), "first derivative",
          mistakes={"eps_squared": torch.tensor([0.0, 1 / math.sqrt(1.0625)]), "sign_instead": x.sign()})


def test_frozen_predict_feeds_a_later_backward(student):
    """The prediction can feed a later backward (torch.no_grad() or detach(), not torch.inference_mode()), and
    gradient recording is on again after the call.
    预测值可以用于之后的 backward（用 torch.no_grad() 或 detach()，不要用 torch.inference_mode()），且调用结束后梯度记录已恢复。"""
    w, x, q = torch.tensor([[1.0], [2.0]]), torch.tensor([[3.0, 4.0]]), torch.tensor([[2.0]])
    call = student.call("frozen_predict", Leaf(w), x, q, probe="then_backward")
    r, q_grad = returned(call, tuple, 2)
    if result_tensor(call, r, "the prediction", like=x, shape=(1, 1)).is_inference:
        raise Fail("the result is an inference tensor / 结果是 inference 张量", mistake="inference_mode")
    close(result_tensor(call, q_grad, "the later gradient", like=q), torch.tensor([[11.0]]), "the later gradient")


# ----------------------------------------------------------------------------- properties (`grader check`, no points)

def test_smooth_abs_property(student, rng):
    """On fresh random inputs (length 1 to 5, float32 or float64, eps 1, 0.5 or 0.25), SmoothAbs's forward is
    sqrt(x ** 2 + eps), and what your backward gives (weighted by grad_out) agrees with central differences of
    that forward, first and second derivative (your backward differentiated again).
    在新的随机输入上（长度 1 到 5，float32 或 float64，eps 为 1、0.5 或 0.25），SmoothAbs 的前向为
    sqrt(x ** 2 + eps)，你的 backward（按 grad_out 加权）给出的一阶、二阶导数与该前向的中心差分一致。"""
    dtype = pick(rng, FLOAT_DTYPES)
    eps = pick(rng, (1.0, 0.5, 0.25))
    n = randint(rng, 1, 5)
    x, v = draw(rng, (n,), dtype, -2, 2), draw(rng, (n,), dtype, -2, 2)
    ones = torch.ones(n, dtype=dtype)
    call = student.call("SmoothAbs", x, eps, v, ones, probe="smooth_abs_orders")
    y, dy, d2y = returned(call, tuple, 3)
    close(result_tensor(call, y, "forward", like=x), fd.smooth_abs_forward(x, eps), "forward", **fd.tolerance(dtype))
    first, second = fd.smooth_abs_derivatives(x, eps)
    for value, want, what, order in ((dy, first, "first derivative", 1), (d2y, second, "second derivative", 2)):
        if type(value) is str:
            raise Fail(f"the {what} could not be computed: {value} / 无法计算{'一' if order == 1 else '二'}阶导数",
                       raised=("SmoothAbs", value))
        close(result_tensor(call, value, what, like=x), v.double() * want, what, **fd.tolerance(dtype, order))
