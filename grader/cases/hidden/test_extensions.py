"""Hidden tests for extensions.py."""

import pytest
import torch

from . import oracle
from grader.cases.kit import (Arg, Fail, Fn, Leaf, autograd_calls, close, draw, no_shortcuts, randint,
                              result_tensor, returned, unchanged)

EPS = pytest.mark.parametrize("eps", [1e-3, 0.1, 1.0])


def _smooth_abs_call(student, rng, eps):
    n = randint(rng, 4, 9)
    x = draw(rng, (n,), torch.float64, -2, 2)
    x[0] = 0.0  # the smooth point where |x| has its kink
    v, u = draw(rng, (n,), torch.float64, 0.5, 2), draw(rng, (n,), torch.float64, 0.5, 2)
    # each order apart: a backward that is not differentiable loses the second derivative's points only
    call = student.call("SmoothAbs", x, eps, v, u, probe="smooth_abs_orders")
    return call, x, v, u, returned(call, tuple, 3)


@EPS
def test_smooth_abs_forward(student, rng, eps):
    """forward(ctx, x, eps) returns sqrt(x ** 2 + eps) elementwise.
    forward(ctx, x, eps) 逐元素返回 sqrt(x ** 2 + eps)。"""
    call, x, v, u, (y, _, _) = _smooth_abs_call(student, rng, eps)
    close(result_tensor(call, y, "forward", like=x), oracle.smooth_abs(x, eps)[0], "forward")


@EPS
def test_smooth_abs_backward(student, rng, eps):
    """backward(ctx, grad_out) returns grad_out * x / sqrt(x ** 2 + eps), and None for eps.
    backward(ctx, grad_out) 返回 grad_out * x / sqrt(x ** 2 + eps)，对 eps 返回 None。"""
    call, x, v, u, (_, dy, _) = _smooth_abs_call(student, rng, eps)
    if type(dy) is str:
        raise Fail(f"the first derivative could not be computed: {dy} / 无法计算一阶导数", raised=("SmoothAbs", dy))
    close(result_tensor(call, dy, "first derivative", like=x), v * oracle.smooth_abs(x, eps)[1], "first derivative",
          mistakes={"sign_instead": v * torch.sign(x), "eps_squared": v * oracle.smooth_abs(x, eps ** 2)[1]})


@EPS
def test_smooth_abs_double_backward(student, rng, eps):
    """backward must itself be differentiable (built from torch operations on saved tensors), so that the
    second derivative eps / (x ** 2 + eps) ** 1.5 comes out right: gradgradcheck passes.
    backward 本身必须可导（由保存的张量上的 torch 运算构成），这样二阶导数 eps / (x ** 2 + eps) ** 1.5 才正确，gradgradcheck 才能通过。"""
    call, x, v, u, (_, dy, d2y) = _smooth_abs_call(student, rng, eps)
    if type(dy) is str:
        raise Fail(f"the first derivative could not be computed, so neither could the second: {dy} "
                   f"/ 无法计算一阶导数，因此也无法计算二阶导数", raised=("SmoothAbs", dy))
    if type(d2y) is str:
        raise Fail(f"the second derivative could not be computed ({d2y}) / 无法计算二阶导数", mistake="not_differentiable")
    r = oracle.smooth_abs(x, eps)[0]
    close(result_tensor(call, d2y, "second derivative", like=x), u * v * oracle.smooth_abs(x, eps)[2],
          "second derivative", mistakes={"detached_in_backward": u * v / r})


def test_smooth_abs_backward_is_written_by_hand(student, rng):
    """backward computes grad_out * x / sqrt(x ** 2 + eps) from saved tensors itself: running autograd on the
    forward expression inside backward is not the exercise.
    backward 要用保存的张量自己算出 grad_out * x / sqrt(x ** 2 + eps)：不能在 backward 里对前向表达式再调用自动求导。"""
    call, x, v, u, (_, dy, _) = _smooth_abs_call(student, rng, 0.1)
    if type(dy) is str:
        raise Fail(f"the first derivative could not be computed: {dy} / 无法计算一阶导数", raised=("SmoothAbs", dy))
    close(result_tensor(call, dy, "first derivative", like=x), v * oracle.smooth_abs(x, 0.1)[1], "first derivative")
    no_shortcuts(call, "write backward by hand")
    if autograd_calls(call) > 2:  # the probe itself calls torch.autograd.grad twice
        raise Fail("backward calls torch.autograd itself / backward 内部又调用了自动求导", mistake="autograd_in_backward")


NUMERIC_RTOL, NUMERIC_ATOL = 1e-6, 1e-7  # central differences in float64 meet this; forward ones do not


@pytest.mark.parametrize("f, shape", [("sin_sum", (5,)), ("exp_quartic", (2, 3)), ("neighbours", (4,)),
                                      ("exp_quartic", ())])
def test_numerical_gradient_random(student, rng, f, shape):
    """Central differences (f(x + eps e_i) - f(x - eps e_i)) / (2 eps), one coordinate at a time, for any shape
    of x (0-dim included).
    中心差分 (f(x + eps e_i) - f(x - eps e_i)) / (2 eps)，逐个坐标计算，x 可以是任意形状（包括 0 维）。"""
    x = draw(rng, shape, torch.float64, -1.5, 1.5)
    call = student.call("numerical_gradient", Fn(f), x)
    got = result_tensor(call, returned(call), "the estimate", like=x)
    close(got, oracle.gradient(f, x), "the estimate", rtol=NUMERIC_RTOL, atol=NUMERIC_ATOL,
          mistakes={"forward_difference": oracle.forward_difference(f, x, 1e-6)})


def test_numerical_gradient_float32_input(student, rng):
    """f is evaluated on float64 copies of x, without autograd, and the estimate comes back in x's dtype
    (float32 evaluation with eps = 1e-6 would be mostly rounding error).
    f 在 x 的 float64 副本上求值、不使用自动求导，结果再转回 x 的 dtype（用 float32 和 eps = 1e-6 计算几乎全是舍入误差）。"""
    x = draw(rng, (4,), torch.float32, -1, 1)
    call = student.call("numerical_gradient", "sin_sum", x, probe="recording_f")
    estimate, seen = returned(call, tuple, 2)
    if type(seen) is not dict or seen.get("dtypes") != ["float64"]:
        raise Fail("f was not evaluated on float64 copies of x / f 没有在 x 的 float64 副本上求值", mistake="float32_evaluation")
    if seen.get("requires_grad") != [False]:
        raise Fail("f was evaluated on tensors that require grad / f 在需要梯度的张量上求值", mistake="autograd_used")
    close(result_tensor(call, estimate, "the estimate", like=x), torch.cos(x.double()), "the estimate")


def test_numerical_gradient_conventions(student, rng):
    """x is not modified (values, .grad, version), even though every coordinate is perturbed in turn.
    x 不被修改（数值、.grad、版本号），尽管要依次扰动每个坐标。"""
    x = draw(rng, (2, 2), torch.float64)
    call = student.call("numerical_gradient", Fn("neighbours"), Arg(x, grad=torch.ones(2, 2, dtype=torch.float64)))
    close(result_tensor(call, returned(call), "the estimate", like=x), oracle.gradient("neighbours", x), "the estimate",
          rtol=NUMERIC_RTOL, atol=NUMERIC_ATOL)
    unchanged(call, "f", "x")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
def test_frozen_predict_random(student, rng, dtype):
    """x @ w without recording a graph; w arrives requiring grad and its .grad stays untouched.
    计算 x @ w 但不记录计算图；w 传入时需要梯度，其 .grad 保持不变。"""
    n, d, k = randint(rng, 1, 5), randint(rng, 1, 5), randint(rng, 1, 3)
    w, x = draw(rng, (d, k), dtype), draw(rng, (n, d), dtype)
    call = student.call("frozen_predict", Leaf(w, grad=torch.ones(d, k, dtype=dtype)), x)
    close(result_tensor(call, returned(call), "the prediction", like=x, shape=(n, k)), x.double() @ w.double(),
          "the prediction")
    unchanged(call, "w", "x")


def test_frozen_predict_reusable(student, rng):
    """The result can feed a later autograd computation: torch.no_grad() or detach(), not
    torch.inference_mode(), whose tensors cannot be saved for backward.
    结果可以用于之后的自动求导：用 torch.no_grad() 或 detach()，不要用 torch.inference_mode()（其结果不能被保存用于 backward）。"""
    w, x, q = draw(rng, (3, 2)), draw(rng, (4, 3)), draw(rng, (4, 2))
    call = student.call("frozen_predict", Leaf(w), x, q, probe="then_backward")
    r, q_grad = returned(call, tuple, 2)
    got = result_tensor(call, r, "the prediction", like=x, shape=(4, 2))
    if got.is_inference:
        raise Fail("the result is an inference tensor / 结果是 inference 张量", mistake="inference_mode")
    close(result_tensor(call, q_grad, "the later gradient", like=q), x @ w, "the later gradient")
