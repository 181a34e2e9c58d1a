"""Hidden tests for grad.py."""

import pytest
import torch

from . import oracle
from grader.cases.kit import (Arg, Fail, Fn, autograd_calls, close, draw, no_shortcuts, randint, raised, result_tensor,
                              returned, unchanged)

DTYPES = pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])


@pytest.mark.parametrize("f", ["product_sum", "exp_sin", "x_y_squared"])
@DTYPES
def test_partial_grads_random(submission, rng, f, dtype):
    """torch.autograd.grad(out, (x, y)) on leaf copies of x and y returns both partial derivatives at once.
    对 x、y 的叶子副本调用 torch.autograd.grad(out, (x, y))，一次得到两个偏导数。"""
    shape = (randint(rng, 1, 3), randint(rng, 1, 4))
    x, y = draw(rng, shape, dtype), draw(rng, shape, dtype)
    call = submission.call("partial_grads", Fn(f), x, y)
    dx, dy = returned(call, tuple, 2)
    want_x, want_y = oracle.partials(f, x, y)
    close(result_tensor(call, dx, "df/dx", like=x), want_x, "df/dx")
    close(result_tensor(call, dy, "df/dy", like=y), want_y, "df/dy")


@pytest.mark.parametrize("f", ["ignores_y", "ignores_x", "ignores_both"])
def test_partial_grads_unused_input(submission, rng, f):
    """An input f does not use has gradient zero: a zero tensor of its shape, never None and never an error
    (allow_unused=True; and f may use neither input).
    f 没用到的输入梯度为 0：返回该形状的全零张量，不能是 None，也不能报错（allow_unused=True；f 也可能两个都不用）。"""
    x, y = draw(rng, (randint(rng, 2, 4),), torch.float64), draw(rng, (randint(rng, 2, 4),), torch.float64)
    call = submission.call("partial_grads", Fn(f), x, y)
    dx, dy = returned(call, tuple, 2, errors={"does not require grad": "constant_f"} if f == "ignores_both" else None)
    want_x, want_y = oracle.partials(f, x, y)
    close(result_tensor(call, dx, "df/dx", like=x), want_x, "df/dx")
    close(result_tensor(call, dy, "df/dy", like=y), want_y, "df/dy")


def test_partial_grads_conventions(submission, rng):
    """x and y are not modified (values, requires_grad, .grad, version); results are detached.
    x 和 y 不被修改（数值、requires_grad、.grad、版本号）；结果已 detach。"""
    x, y = draw(rng, (3,), torch.float32), draw(rng, (3,), torch.float32)
    call = submission.call("partial_grads", Fn("exp_sin"), Arg(x, grad=torch.ones(3)), y)
    for value, want, name in zip(returned(call, tuple, 2), oracle.partials("exp_sin", x, y), ("df/dx", "df/dy")):
        close(result_tensor(call, value, name, like=x), want, name)
    unchanged(call, "f", "x", "y")


@pytest.mark.parametrize("f, n", [("sin", 0), ("sin", 1), ("sin", 3), ("exp_half", 4), ("quartic", 2),
                                  ("quartic", 3)])
@DTYPES
def test_nth_derivative_random(submission, rng, f, n, dtype):
    """Differentiate n times with torch.autograd.grad(..., create_graph=True); for an elementwise f,
    grad_outputs=ones gives each element's own derivative.
    用 torch.autograd.grad(..., create_graph=True) 连续求导 n 次；对逐元素函数，grad_outputs=ones 得到每个元素自己的导数。"""
    x = draw(rng, (randint(rng, 1, 3), randint(rng, 2, 4)), dtype, -1.5, 1.5)
    call = submission.call("nth_derivative", Fn(f), x, n)
    want = oracle.nth_derivative(f, x, n)
    mistakes = {"first_derivative_only": oracle.nth_derivative(f, x, 1),
                "graph_dropped": torch.zeros_like(x, dtype=torch.float64)} if n > 1 else {}
    close(result_tensor(call, returned(call), f"derivative {n}", like=x), want, f"derivative {n}", mistakes=mistakes)


@pytest.mark.parametrize("f, n", [("cube", 3), ("cube", 4), ("linear", 1), ("linear", 2), ("constant", 1),
                                  ("square", 5), ("learnable_linear", 2)])
def test_nth_derivative_graph_runs_out(submission, rng, f, n):
    """Once a derivative has no graph back to x (t ** 3 after four steps, 3 t + 2 after one, a constant f at
    once), every higher derivative is a zero tensor: return zeros, never raise. A derivative may also require
    grad through something else than x (f = s * t + 2 with a learnable s): then torch.autograd.grad finds x
    unused, which allow_unused=True turns into None, hence zeros.
    一旦某阶导数与 x 之间没有计算图（t ** 3 四次之后、3t + 2 一次之后、常数函数立即），更高阶导数都是全零张量：返回 0，不要报错。
    导数也可能只通过 x 以外的张量需要梯度（f = s * t + 2，s 可学习）：这时 torch.autograd.grad 发现 x 未被使用，
    allow_unused=True 会返回 None，也就是全零。"""
    x = draw(rng, (randint(rng, 2, 5),), torch.float64, -2, 2)
    call = submission.call("nth_derivative", Fn(f), x, n)
    close(result_tensor(call, returned(call), f"derivative {n}", like=x), oracle.nth_derivative(f, x, n),
          f"derivative {n}", mistakes={"first_derivative_only": oracle.nth_derivative(f, x, 1)} if n > 1 else None)


def test_nth_derivative_negative_n(submission, rng):
    """n < 0 raises ValueError.
    n < 0 时抛出 ValueError。"""
    call = submission.call("nth_derivative", Fn("sin"), draw(rng, (3,)), -randint(rng, 1, 3))
    raised(call, "ValueError", mistake="negative_n_accepted")


def test_nth_derivative_conventions(submission, rng):
    """x is not modified (values, .grad, version); the result is detached.
    x 不被修改（数值、.grad、版本号）；结果已 detach。"""
    x = draw(rng, (4,), torch.float32)
    call = submission.call("nth_derivative", Fn("quartic"), Arg(x, grad=torch.ones(4)), 2)
    close(result_tensor(call, returned(call), "derivative 2", like=x), oracle.nth_derivative("quartic", x, 2),
          "derivative 2")
    unchanged(call, "f", "x")


@pytest.mark.parametrize("f", ["sum_cubes", "logsumexp", "neighbours"])
@DTYPES
def test_hvp_random(submission, rng, f, dtype):
    """Double backward: g = grad(f(x), x, create_graph=True), then grad(g, x, grad_outputs=v) = H(x) @ v.
    两次反向：g = grad(f(x), x, create_graph=True)，再 grad(g, x, grad_outputs=v) 得到 H(x) @ v。"""
    n = randint(rng, 2, 7)
    x, v = draw(rng, (n,), dtype), draw(rng, (n,), dtype)
    call = submission.call("hvp", Fn(f), x, v)
    close(result_tensor(call, returned(call), "H @ v", like=x), oracle.hvp(f, x, v), "H @ v",
          mistakes={"gradient_not_hvp": oracle.gradient(f, x),
                    "hvp_of_sum": oracle.hvp(f, x, torch.ones_like(v))})


@pytest.mark.parametrize("f", ["sum_linear", "scalar_constant"])
def test_hvp_linear_and_constant(submission, rng, f):
    """For a linear or constant f the Hessian is zero: return zeros (the gradient has no graph, or f none).
    f 是线性函数或常数时 Hessian 为 0：返回全零张量（梯度没有计算图，或者 f 本身就没有）。"""
    n = randint(rng, 2, 6)
    x, v = draw(rng, (n,), torch.float64), draw(rng, (n,), torch.float64)
    call = submission.call("hvp", Fn(f), x, v)
    value = returned(call, errors={"does not require grad": "linear_f", "not have been used": "linear_f"})
    close(result_tensor(call, value, "H @ v", like=x), torch.zeros(n), "H @ v")


def test_hvp_by_double_backward(submission, rng):
    """H @ v comes from two torch.autograd.grad calls (create_graph=True, then grad_outputs=v), not from
    torch.autograd.functional.hvp or torch.func, and never builds the whole Hessian.
    H @ v 由两次 torch.autograd.grad 得到（create_graph=True，再 grad_outputs=v），不能用 torch.autograd.functional.hvp 或 torch.func。"""
    x, v = draw(rng, (5,), torch.float64), draw(rng, (5,), torch.float64)
    call = submission.call("hvp", Fn("logsumexp"), x, v)
    close(result_tensor(call, returned(call), "H @ v", like=x), oracle.hvp("logsumexp", x, v), "H @ v")
    no_shortcuts(call, "compute the Hessian-vector product by double backward")
    if autograd_calls(call) < 2:
        raise Fail("torch.autograd.grad ran fewer than two times / torch.autograd.grad 调用少于两次", mistake="single_pass")


def test_hvp_conventions(submission, rng):
    """x and v are not modified (values, .grad, version); the result is detached.
    x 和 v 不被修改（数值、.grad、版本号）；结果已 detach。"""
    x, v = draw(rng, (4,), torch.float32), draw(rng, (4,), torch.float32)
    call = submission.call("hvp", Fn("sum_cubes"), Arg(x, grad=torch.ones(4)), v)
    close(result_tensor(call, returned(call), "H @ v", like=x), oracle.hvp("sum_cubes", x, v), "H @ v")
    unchanged(call, "f", "x", "v")


@pytest.mark.parametrize("f", ["sin_cumsum", "moments", "mix"])
@DTYPES
def test_jacobian_rows_random(submission, rng, f, dtype):
    """Row i of the Jacobian is grad(y, x, grad_outputs=e_i, retain_graph=True): one backward per output.
    雅可比矩阵的第 i 行是 grad(y, x, grad_outputs=e_i, retain_graph=True)：每个输出一次反向传播。"""
    x = draw(rng, (randint(rng, 2, 6),), dtype)
    call = submission.call("jacobian_rows", Fn(f), x)
    want = oracle.jacobian(f, x)
    got = result_tensor(call, returned(call), "the Jacobian", like=x, shape=want.shape)
    close(got, want, "the Jacobian", mistakes={"grad_of_sum": want.sum(0).expand_as(want)})


def test_jacobian_rows_constant(submission, rng):
    """A constant f has a zero Jacobian of shape (m, n): zeros, never None and never an error.
    常数函数的雅可比矩阵为 (m, n) 的全零矩阵：不能是 None，也不能报错。"""
    n = randint(rng, 2, 5)
    x = draw(rng, (n,), torch.float64)
    call = submission.call("jacobian_rows", Fn("constant_vector"), x)
    close(result_tensor(call, returned(call), "the Jacobian", like=x, shape=(2, n)), torch.zeros(2, n), "the Jacobian")


def test_jacobian_rows_one_grad_per_row(submission, rng):
    """One backward pass per row (torch.autograd.grad with grad_outputs=e_i); torch.autograd.functional.jacobian
    and torch.func.jacrev are not the exercise.
    每一行一次反向传播（torch.autograd.grad，grad_outputs=e_i）；不能用 torch.autograd.functional.jacobian 或 torch.func.jacrev。"""
    x = draw(rng, (randint(rng, 3, 6),), torch.float64)
    call = submission.call("jacobian_rows", Fn("moments"), x)
    close(result_tensor(call, returned(call), "the Jacobian", like=x, shape=(3, x.numel())), oracle.jacobian("moments", x),
          "the Jacobian")
    no_shortcuts(call, "build the Jacobian one row at a time")
    if autograd_calls(call) < 3:
        raise Fail("the Jacobian of 3 outputs took fewer than 3 backward passes / 3 个输出的雅可比矩阵反向传播少于 3 次",
                   mistake="one_pass")


def test_jacobian_rows_conventions(submission, rng):
    """x is not modified (values, .grad, version); the Jacobian is detached, with x's dtype.
    x 不被修改（数值、.grad、版本号）；雅可比矩阵已 detach，dtype 与 x 相同。"""
    x = draw(rng, (4,), torch.float32)
    call = submission.call("jacobian_rows", Fn("moments"), Arg(x, grad=torch.ones(4)))
    close(result_tensor(call, returned(call), "the Jacobian", like=x, shape=(3, 4)), oracle.jacobian("moments", x),
          "the Jacobian")
    unchanged(call, "f", "x")
