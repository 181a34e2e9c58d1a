"""Public tests for grad.py."""

import torch

from grader.cases.kit import Fn, close, result_tensor, returned, unchanged


def test_partial_grads_lecture(submission):
    """f(x, y) = (x + y) * (y + 1) at x = 2, y = 1 (the lecture's graph with y as w): df/dx = y + 1 = 2 and
    df/dy = (y + 1) + (x + y) = 5, both from one torch.autograd.grad call.
    f(x, y) = (x + y) * (y + 1)，x = 2, y = 1：df/dx = y + 1 = 2，df/dy = (y + 1) + (x + y) = 5。"""
    x, y = torch.tensor(2.0), torch.tensor(1.0)
    call = submission.call("partial_grads", Fn("lecture_xy"), x, y)
    dx, dy = returned(call, tuple, 2)
    close(result_tensor(call, dx, "df/dx", like=x), torch.tensor(2.0), "df/dx")
    close(result_tensor(call, dy, "df/dy", like=y), torch.tensor(5.0), "df/dy")
    unchanged(call, "f", "x", "y")


def test_nth_derivative_lecture(submission):
    """The lecture: y = x ** 2 at x = 3 gives 6, then 2 (create_graph=True makes the first derivative
    differentiable), then 0 for the third derivative, which must not raise.
    课上的例子：y = x ** 2 在 x = 3 处一阶导为 6，二阶导为 2（create_graph=True），三阶导为 0 且不能报错。"""
    x = torch.tensor([3.0])
    for n, want in ((1, 6.0), (2, 2.0), (3, 0.0)):
        call = submission.call("nth_derivative", Fn("square"), x, n)
        close(result_tensor(call, returned(call), f"derivative {n}", like=x), torch.tensor([want]), f"derivative {n}")
    unchanged(call, "f", "x")


def test_hvp_small(submission):
    """f(x) = sum(x ** 3) has Hessian diag(6x); at x = [1, 2] with v = [1, 1], H @ v = [6, 12].
    f(x) = sum(x ** 3) 的 Hessian 为 diag(6x)；x = [1, 2]，v = [1, 1] 时 H @ v = [6, 12]。"""
    x, v = torch.tensor([1.0, 2.0]), torch.tensor([1.0, 1.0])
    call = submission.call("hvp", Fn("sum_cubes"), x, v)
    close(result_tensor(call, returned(call), "H @ v", like=x), torch.tensor([6.0, 12.0]), "H @ v")
    unchanged(call, "f", "x", "v")


def test_jacobian_rows_small(submission):
    """f(x) = [2 x0, x2 ** 2] at x = [1, 2, 3]: the Jacobian is [[2, 0, 0], [0, 0, 6]], one row per output.
    f(x) = [2 x0, x2 ** 2]，x = [1, 2, 3]：雅可比矩阵为 [[2, 0, 0], [0, 0, 6]]，每个输出一行。"""
    x = torch.tensor([1.0, 2.0, 3.0])
    call = submission.call("jacobian_rows", Fn("ends"), x)
    want = torch.tensor([[2.0, 0.0, 0.0], [0.0, 0.0, 6.0]])
    close(result_tensor(call, returned(call), "the Jacobian", like=x, shape=(2, 3)), want, "the Jacobian")
    unchanged(call, "f", "x")
