"""Public tests for grad.py."""

import torch

from grader.cases.kit import (FLOAT_DTYPES, Fail, Fn, autograd_calls, close, docstring_examples, draw, no_shortcuts,
                             pick, randint, raised, result_tensor, returned, unchanged)
from grader.cases.public import finite_differences as fd


def test_partial_grads_lecture(student):
    """f(x, y) = (x + y) * (y + 1) at x = 2, y = 1 (the lecture's graph with y as w): df/dx = y + 1 = 2 and
    df/dy = (y + 1) + (x + y) = 5, both from one torch.autograd.grad call.
    f(x, y) = (x + y) * (y + 1)，x = 2, y = 1：df/dx = y + 1 = 2，df/dy = (y + 1) + (x + y) = 5。"""
    x, y = torch.tensor(2.0), torch.tensor(1.0)
    call = student.call("partial_grads", Fn("lecture_xy"), x, y)
    dx, dy = returned(call, tuple, 2)
    close(result_tensor(call, dx, "df/dx", like=x), torch.tensor(2.0), "df/dx")
    close(result_tensor(call, dy, "df/dy", like=y), torch.tensor(5.0), "df/dy")
    unchanged(call, "f", "x", "y")


def test_nth_derivative_lecture(student):
    """The lecture: y = x ** 2 at x = 3 gives 6, then 2 (create_graph=True makes the first derivative
    differentiable), then 0 for the third derivative, which must not raise.
    课上的例子：y = x ** 2 在 x = 3 处一阶导为 6，二阶导为 2（create_graph=True），三阶导为 0 且不能报错。"""
    x = torch.tensor([3.0])
    for n, want in ((1, 6.0), (2, 2.0), (3, 0.0)):
        call = student.call("nth_derivative", Fn("square"), x, n)
        # f differentiated afresh each time gives 6 for every n; without create_graph=True, 0 from n = 2 on
        close(result_tensor(call, returned(call), f"derivative {n}", like=x), torch.tensor([want]), f"derivative {n}",
              mistakes={"first_derivative_only": torch.tensor([6.0]), "graph_dropped": torch.tensor([0.0])})
    unchanged(call, "f", "x")


def test_hvp_small(student):
    """f(x) = sum(x ** 3) has Hessian diag(6x); at x = [1, 2] with v = [1, -1], H @ v = [6, -12]
    (the Hessian times a vector of ones, [6, 12], would ignore v).
    f(x) = sum(x ** 3) 的 Hessian 为 diag(6x)；x = [1, 2]，v = [1, -1] 时 H @ v = [6, -12]
    （[6, 12] 是 Hessian 乘以全 1 向量，忽略了 v）。"""
    x, v = torch.tensor([1.0, 2.0]), torch.tensor([1.0, -1.0])
    call = student.call("hvp", Fn("sum_cubes"), x, v)
    close(result_tensor(call, returned(call), "H @ v", like=x), torch.tensor([6.0, -12.0]), "H @ v",
          mistakes={"hvp_of_sum": torch.tensor([6.0, 12.0])})
    unchanged(call, "f", "x", "v")
    _by_hand(call, "compute the Hessian-vector product by double backward", 2, "single_pass")


def _by_hand(call, what: str, passes: int, mistake: str) -> None:
    """The route grading enforces, checked here too: no torch.func or torch.autograd.functional, and at
    least `passes` calls of torch.autograd.grad or backward."""
    no_shortcuts(call, what)
    if autograd_calls(call) < passes:
        raise Fail(f"torch.autograd.grad or backward ran fewer than {passes} times: {what} / "
                   f"torch.autograd.grad 或 backward 调用少于 {passes} 次", mistake=mistake)


def test_jacobian_rows_small(student):
    """f(x) = [2 x0, x2 ** 2] at x = [1, 2, 3]: the Jacobian is [[2, 0, 0], [0, 0, 6]], one row per output.
    One backward pass per row, without torch.func.
    f(x) = [2 x0, x2 ** 2]，x = [1, 2, 3]：雅可比矩阵为 [[2, 0, 0], [0, 0, 6]]，每个输出一行，每行一次反向传播，不用 torch.func。"""
    x = torch.tensor([1.0, 2.0, 3.0])
    call = student.call("jacobian_rows", Fn("ends"), x)
    want = torch.tensor([[2.0, 0.0, 0.0], [0.0, 0.0, 6.0]])
    close(result_tensor(call, returned(call), "the Jacobian", like=x, shape=(2, 3)), want, "the Jacobian",
          mistakes={"grad_of_sum": want.sum(0).expand(2, 3)})  # y.sum() differentiated: every row the column sums
    unchanged(call, "f", "x")
    _by_hand(call, "build the Jacobian one row at a time", 2, "one_pass")


def test_partial_grads_docstring(student):
    """The examples in partial_grads's docstring give what they show (python -m doctest, on your code).
    partial_grads 文档字符串中的示例给出其中写明的结果。"""
    docstring_examples(student, "partial_grads")


def test_nth_derivative_docstring(student):
    """The examples in nth_derivative's docstring give what they show (python -m doctest, on your code).
    nth_derivative 文档字符串中的示例给出其中写明的结果。"""
    docstring_examples(student, "nth_derivative")


def test_hvp_docstring(student):
    """The examples in hvp's docstring give what they show (python -m doctest, on your code).
    hvp 文档字符串中的示例给出其中写明的结果。"""
    # the second example's f is linear: an error there is the linear case, not a missing create_graph=True
    # H @ ones instead of H @ v shows [6, 2] in the first
    docstring_examples(student, "hvp", errors={
        0: {"does not require grad": "no_create_graph"},
        1: {"does not require grad": "linear_f", "not have been used": "linear_f"}},
        wrong={0: {"hvp_of_sum": "tensor([6., 2.])"}})


def test_jacobian_rows_docstring(student):
    """The examples in jacobian_rows's docstring give what they show (python -m doctest, on your code).
    jacobian_rows 文档字符串中的示例给出其中写明的结果。"""
    docstring_examples(student, "jacobian_rows")


def test_partial_grads_zeros_for_unused(student):
    """An input f does not use gets a zero gradient (never None, never an error), also when f uses neither.
    f 没用到的输入梯度为全零（不能是 None，也不能报错），f 两个输入都不用时也是如此。"""
    x, y = torch.tensor([1.0, 2.0]), torch.tensor([0.5, 0.25, 1.0])
    call = student.call("partial_grads", Fn("ignores_y"), x, y)
    dx, dy = returned(call, tuple, 2)
    close(result_tensor(call, dx, "df/dx", like=x), torch.tensor([2.0, 4.0]), "df/dx")
    close(result_tensor(call, dy, "df/dy", like=y), torch.zeros(3), "df/dy")
    call = student.call("partial_grads", Fn("ignores_both"), x, y)
    dx, dy = returned(call, tuple, 2, errors={"does not require grad": "constant_f"})
    close(result_tensor(call, dx, "df/dx", like=x), torch.zeros(2), "df/dx")
    close(result_tensor(call, dy, "df/dy", like=y), torch.zeros(3), "df/dy")
    unchanged(call, "f", "x", "y")


def test_nth_derivative_edge_cases(student):
    """f = s * t + 2 with a learnable s: the first derivative requires grad through s only, so the second is
    zeros (allow_unused=True, None as zeros); n = -1 raises ValueError.
    f = s * t + 2（s 可学习）：一阶导数只通过 s 需要梯度，二阶导数为全零（allow_unused=True，None 视为零）；n = -1 抛出 ValueError。"""
    x = torch.tensor([1.0, 2.0])
    call = student.call("nth_derivative", Fn("learnable_linear"), x, 2)
    close(result_tensor(call, returned(call), "derivative 2", like=x), torch.zeros(2), "derivative 2")
    raised(student.call("nth_derivative", Fn("sin"), x, -1), "ValueError", mistake="negative_n_accepted")


def test_hvp_zeros_for_linear_f(student):
    """For a linear or a constant f, H @ v is zeros: never None, never an error.
    f 为线性函数或常数时 H @ v 为全零：不能是 None，也不能报错。"""
    x, v = torch.tensor([1.0, 2.0]), torch.tensor([1.0, 1.0])
    for f in ("sum_linear", "scalar_constant"):
        call = student.call("hvp", Fn(f), x, v)
        value = returned(call, errors={"does not require grad": "linear_f", "not have been used": "linear_f"})
        close(result_tensor(call, value, "H @ v", like=x), torch.zeros(2), "H @ v")


def test_jacobian_rows_zeros_and_float64(student):
    """A constant f gives a (m, n) matrix of zeros; a float64 x gives a float64 Jacobian.
    常数函数得到 (m, n) 的全零矩阵；float64 的 x 得到 float64 的雅可比矩阵。"""
    x = torch.tensor([1.0, 2.0, 3.0])
    call = student.call("jacobian_rows", Fn("constant_vector"), x)
    close(result_tensor(call, returned(call), "the Jacobian", like=x, shape=(2, 3)), torch.zeros(2, 3), "the Jacobian")
    x = x.double()
    call = student.call("jacobian_rows", Fn("ends"), x)
    want = torch.tensor([[2.0, 0.0, 0.0], [0.0, 0.0, 6.0]])
    close(result_tensor(call, returned(call), "the Jacobian", like=x, shape=(2, 3)), want, "the Jacobian",
          mistakes={"grad_of_sum": want.sum(0).expand(2, 3)})  # y.sum() differentiated: every row the column sums


# ----------------------------------------------------------------------------- properties (`grader check`, no points)
# Each runs on fresh random inputs drawn by Hypothesis; a failure is shrunk to its smallest input
# (grader/host/properties.py). The course file names them (`property:`); the oracles are finite_differences.py.

def _shape(rng, most: int = 2) -> tuple[int, ...]:
    return tuple(randint(rng, 1, 3) for _ in range(randint(rng, 0, most)))


def test_partial_grads_property(student, rng):
    """On fresh random inputs (any shape, float32 or float64), df/dx and df/dy agree with float64 central
    differences of f, with the shapes and dtypes of x and y; x and y are left unchanged.
    在新的随机输入上（任意形状，float32 或 float64），df/dx 与 df/dy 与 f 的 float64 中心差分一致，形状与 dtype
    同 x、y；x、y 保持不变。"""
    f = pick(rng, ("product_sum", "ignores_y", "ignores_x", "ignores_both", "lecture_xy", "x_y_squared", "exp_sin"))
    dtype = pick(rng, FLOAT_DTYPES)
    shape = _shape(rng)
    x, y = draw(rng, shape, dtype, -2, 2), draw(rng, shape, dtype, -2, 2)
    call = student.call("partial_grads", Fn(f), x, y)
    dx, dy = returned(call, tuple, 2)
    want_x, want_y = fd.partials(f, x, y)
    close(result_tensor(call, dx, "df/dx", like=x), want_x, "df/dx", **fd.tolerance(dtype))
    close(result_tensor(call, dy, "df/dy", like=y), want_y, "df/dy", **fd.tolerance(dtype))
    unchanged(call, "f", "x", "y")


def test_nth_derivative_property(student, rng):
    """On fresh random inputs (any shape, float32 or float64) and n = 0, 1 or 2, the n-th derivative agrees
    with float64 central differences of f, shaped and typed like x; x is left unchanged.
    在新的随机输入上（任意形状，float32 或 float64），n = 0、1、2 时 n 阶导数与 f 的 float64 中心差分一致，
    形状与 dtype 同 x；x 保持不变。"""
    f = pick(rng, ("square", "cube", "linear", "constant", "learnable_linear", "sin", "exp", "quartic", "exp_half"))
    n = randint(rng, 0, 2)
    dtype = pick(rng, FLOAT_DTYPES)
    x = draw(rng, _shape(rng), dtype, -1.5, 1.5)
    call = student.call("nth_derivative", Fn(f), x, n)
    close(result_tensor(call, returned(call), f"derivative {n}", like=x), fd.elementwise_derivative(f, x, n),
          f"derivative {n}", **fd.tolerance(dtype, order=n))
    unchanged(call, "f", "x")


def test_hvp_property(student, rng):
    """On fresh random inputs (length 1 to 5, float32 or float64, curved, linear and constant f), H @ v
    agrees with the float64 central difference of the gradient in the direction v, shaped and typed like x;
    x and v are left unchanged.
    在新的随机输入上（长度 1 到 5，float32 或 float64，弯曲、线性和常数的 f），H @ v 与梯度沿 v 方向的 float64
    中心差分一致，形状与 dtype 同 x；x、v 保持不变。"""
    f = pick(rng, ("sum_cubes", "neighbours", "sum_linear", "scalar_constant", "logsumexp"))
    dtype = pick(rng, FLOAT_DTYPES)
    n = randint(rng, 1, 5)
    x, v = draw(rng, (n,), dtype, -2, 2), draw(rng, (n,), dtype, -2, 2)
    call = student.call("hvp", Fn(f), x, v)
    value = returned(call, errors={"does not require grad": "linear_f", "not have been used": "linear_f"}
                     if f in ("sum_linear", "scalar_constant") else None)
    close(result_tensor(call, value, "H @ v", like=x), fd.hvp(f, x, v), "H @ v", **fd.tolerance(dtype))
    unchanged(call, "f", "x", "v")


def test_jacobian_rows_property(student, rng):
    """On fresh random inputs (length 1 to 5, float32 or float64), the Jacobian agrees with float64 central
    differences of f, one column per element of x, of shape (m, n) and x's dtype; x is left unchanged.
    在新的随机输入上（长度 1 到 5，float32 或 float64），雅可比矩阵与 f 的 float64 中心差分一致（x 的每个元素
    一列），形状为 (m, n)，dtype 同 x；x 保持不变。"""
    f = pick(rng, ("ends", "constant_vector", "sin_cumsum", "moments", "mix"))
    dtype = pick(rng, FLOAT_DTYPES)
    x = draw(rng, (randint(rng, 1, 5),), dtype, -2, 2)
    call = student.call("jacobian_rows", Fn(f), x)
    want = fd.jacobian(f, x)
    value = returned(call, errors={"does not require grad": "constant_f"} if f == "constant_vector" else None)
    close(result_tensor(call, value, "the Jacobian", like=x, shape=want.shape), want, "the Jacobian",
          **fd.tolerance(dtype))
    unchanged(call, "f", "x")
