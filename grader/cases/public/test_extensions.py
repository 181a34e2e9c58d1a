"""Public tests for extensions.py."""

import math

import torch

from grader.cases.kit import Fn, Leaf, close, result_tensor, returned, unchanged


def test_smooth_abs_small(submission):
    """SmoothAbs(x, eps=1) at x = [-1, 0, 2]: forward sqrt(x ** 2 + 1), first derivative x / sqrt(x ** 2 + 1),
    second derivative 1 / (x ** 2 + 1) ** 1.5, both through your backward (which must be differentiable).
    SmoothAbs(x, eps=1)，x = [-1, 0, 2]：前向 sqrt(x ** 2 + 1)，一阶导 x / sqrt(x ** 2 + 1)，
    二阶导 1 / (x ** 2 + 1) ** 1.5，都通过你的 backward 计算（backward 本身必须可导）。"""
    x = torch.tensor([-1.0, 0.0, 2.0], dtype=torch.float64)
    ones = torch.ones(3, dtype=torch.float64)
    call = submission.call("SmoothAbs", x, 1.0, ones, ones, probe="smooth_abs")
    y, dy, d2y = returned(call, tuple, 3)
    r2, r5 = math.sqrt(2), math.sqrt(5)
    close(result_tensor(call, y, "forward", like=x), torch.tensor([r2, 1.0, r5]), "forward")
    close(result_tensor(call, dy, "first derivative", like=x), torch.tensor([-1 / r2, 0.0, 2 / r5]), "first derivative")
    close(result_tensor(call, d2y, "second derivative", like=x), torch.tensor([r2 ** -3, 1.0, r5 ** -3]),
          "second derivative")


def test_numerical_gradient_small(submission):
    """f(x) = sum(sin(x)) at x = [0, 1]: the central difference (f(x + eps e_i) - f(x - eps e_i)) / (2 eps)
    gives cos(x) = [1, 0.5403].
    f(x) = sum(sin(x))，x = [0, 1]：中心差分 (f(x + eps e_i) - f(x - eps e_i)) / (2 eps) 得到 cos(x) = [1, 0.5403]。"""
    x = torch.tensor([0.0, 1.0], dtype=torch.float64)
    call = submission.call("numerical_gradient", Fn("sin_sum"), x)
    close(result_tensor(call, returned(call), "the estimate", like=x), torch.cos(x), "the estimate", rtol=1e-7, atol=1e-8)
    unchanged(call, "f", "x")


def test_frozen_predict_small(submission):
    """w = [[1], [2]] (requires grad), x = [[3, 4]]: x @ w = [[11]], computed without a graph, and w.grad untouched.
    w = [[1], [2]]（需要梯度），x = [[3, 4]]：x @ w = [[11]]，计算时不记录计算图，w.grad 保持不变。"""
    w, x = torch.tensor([[1.0], [2.0]]), torch.tensor([[3.0, 4.0]])
    call = submission.call("frozen_predict", Leaf(w), x)
    close(result_tensor(call, returned(call), "the prediction", like=x, shape=(1, 1)), torch.tensor([[11.0]]),
          "the prediction")
    unchanged(call, "w", "x")
