"""Exercises: torch.autograd.grad, grad_outputs, create_graph, higher-order derivatives.

Lecture 3, section 4: ``torch.autograd.grad(outputs, inputs, grad_outputs, retain_graph,
create_graph)``. Fill in the four functions below with ``torch.autograd.grad`` (not
``torch.autograd.functional`` or ``torch.func``). Use only torch and the standard library;
do not import other exercise files. General rules: do not modify the arguments; returned
tensors are detached, on the arguments' device and of their dtype; a derivative of something
that does not depend on ``x`` is a ZERO tensor of the right shape, never ``None`` and never an
exception.

练习：torch.autograd.grad、grad_outputs、create_graph 与高阶导数。

对应第三讲第 4 节 ``torch.autograd.grad(outputs, inputs, grad_outputs, retain_graph,
create_graph)``。请用 ``torch.autograd.grad`` 完成下面四个函数（不要用
``torch.autograd.functional`` 或 ``torch.func``）。只能使用 torch 和标准库，不要导入其他练习文件。
通用规则：不得修改参数；返回的张量须已 detach，且与参数在同一设备、同一 dtype；
不依赖 ``x`` 的量对 ``x`` 的导数是形状正确的全零张量，既不是 ``None``，也不能抛出异常。
"""

from __future__ import annotations

import torch
from torch import Tensor


def partial_grads(f, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
    """Both partial derivatives of a scalar function of two tensors.

    ``f(x, y)`` returns a 0-dim tensor. Return ``(df/dx, df/dy)`` computed with
    ``torch.autograd.grad`` (one call can return both) on leaf copies of ``x`` and ``y``. If ``f`` does not use one of
    its inputs, that gradient is a zero tensor of that input's shape (``torch.autograd.grad``
    raises for an unused input unless ``allow_unused=True``, and then gives ``None``). If ``f``
    uses neither, both are zeros.

    Args:
        f: callable ``f(x, y) -> 0-dim tensor``.
        x, y: floating tensors of any shapes (not requiring grad).
    Returns:
        ``(gx, gy)`` shaped like ``x`` and ``y``.
    Conventions: ``x``, ``y`` unchanged (values, requires_grad, .grad, ._version); results
    detached, on the arguments' device, of their dtype; zeros, never None.

    Lecture numbers: f(w, x) = (w + x) * (w + 1) at w = 1, x = 2 gives (2w + x + 1, w + 1):

    >>> partial_grads(lambda w, x: (w + x) * (w + 1), torch.tensor(1.), torch.tensor(2.))
    (tensor(5.), tensor(2.))
    >>> partial_grads(lambda x, y: (x ** 2).sum(), torch.tensor([1., 2.]), torch.zeros(3))
    (tensor([2., 4.]), tensor([0., 0., 0.]))

    标量函数对两个张量的偏导数。``f(x, y)`` 返回 0 维张量。在 ``x``、``y`` 的叶子副本上用
    ``torch.autograd.grad``（一次调用即可同时得到两者）求出并返回 ``(df/dx, df/dy)``。若 ``f`` 没有用到某个输入，该梯度为与该输入
    同形状的全零张量（对未使用的输入，``torch.autograd.grad`` 会报错，除非 ``allow_unused=True``，
    此时它返回 ``None``）；两者都未用到时都返回零。参数：``f`` 为可调用对象；``x``、``y`` 为任意形状
    的浮点张量，不需要梯度。返回 ``(gx, gy)``，形状分别同 ``x``、``y``。约定：参数不得修改
    （数值、requires_grad、.grad、._version）；结果已 detach，设备与 dtype 同参数；用零而非 None。
    示例：讲义数值 w = 1、x = 2 时 (2w + x + 1, w + 1) = (5, 2)。
    """
    raise NotImplementedError("partial_grads: not implemented yet / 尚未实现")


def nth_derivative(f, x: Tensor, n: int) -> Tensor:
    """The n-th derivative of an elementwise function, at every element of ``x``.

    ``f`` maps a tensor to a tensor of the same shape, value by value (``torch.sin``,
    ``lambda t: t ** 3``). Differentiate ``n`` times with ``torch.autograd.grad``:
    ``grad_outputs=torch.ones_like(...)`` gives each element its own derivative, and
    ``create_graph=True`` makes the result differentiable again. ``n = 0`` returns ``f(x)``;
    ``n < 0`` raises ``ValueError``. Autograd cannot tell when a derivative stops depending on
    ``x``: for ``t ** 3`` the 3rd derivative still has a graph, for ``3 * t + 2`` already the
    1st has none. Whenever a derivative has no graph back to ``x`` (it does not require grad,
    or ``torch.autograd.grad`` finds ``x`` unused), every higher derivative is a zero tensor of
    ``x``'s shape. Never raise in that case.

    Args:
        f: elementwise callable.  x: floating tensor of any shape.  n: int >= 0.
    Returns:
        tensor shaped like ``x``.
    Conventions: ``x`` unchanged (values, requires_grad, .grad, ._version); result detached,
    on ``x``'s device, of its dtype.

    Lecture: y = x ** 2 at x = 3 gives 6, then 2 (and then 0):

    >>> [nth_derivative(lambda t: t ** 2, torch.tensor([3.]), n) for n in range(4)]
    [tensor([9.]), tensor([6.]), tensor([2.]), tensor([0.])]
    >>> nth_derivative(lambda t: 3 * t + 2, torch.tensor([1., 2.]), 2)
    tensor([0., 0.])

    逐元素函数在 ``x`` 每个元素处的 n 阶导数。``f`` 把张量逐元素映射为同形状的张量（如
    ``torch.sin``、``lambda t: t ** 3``）。用 ``torch.autograd.grad`` 求导 ``n`` 次：
    ``grad_outputs=torch.ones_like(...)`` 使每个元素得到自己的导数，``create_graph=True`` 使结果
    还能再求导。``n = 0`` 返回 ``f(x)``；``n < 0`` 抛出 ``ValueError``。自动求导不知道导数何时不再
    依赖 ``x``：``t ** 3`` 的三阶导数仍带计算图，而 ``3 * t + 2`` 的一阶导数就已没有。一旦某阶导数
    没有通向 ``x`` 的计算图（它不需要梯度，或 ``torch.autograd.grad`` 发现未用到 ``x``），更高阶的
    导数都是与 ``x`` 同形状的全零张量，此时不得抛出异常。返回形状同 ``x``。约定：``x`` 不得修改；
    结果已 detach，设备与 dtype 同 ``x``。示例：讲义中 y = x ** 2 在 3 处依次为 6、2（再往后为 0）。
    """
    raise NotImplementedError("nth_derivative: not implemented yet / 尚未实现")


def hvp(f, x: Tensor, v: Tensor) -> Tensor:
    """Hessian-vector product ``H(x) @ v`` by double backward, without forming ``H``.

    ``f`` maps a 1-dim ``x`` to a 0-dim tensor. First ``g = df/dx`` with
    ``torch.autograd.grad(..., create_graph=True)`` (so ``g`` has a graph of its own), then
    differentiate ``g`` again with ``grad_outputs=v``: that gives ``d(g . v)/dx = H @ v``.
    If ``f`` is at most linear in ``x`` (``g`` has no graph back to ``x``) or constant, the
    result is zeros.

    Args:
        f: callable, 1-dim tensor -> 0-dim tensor.
        x: 1-dim tensor of length n.  v: 1-dim tensor of length n.
    Returns:
        tensor of shape (n,).
    Conventions: ``x``, ``v`` unchanged (values, requires_grad, .grad, ._version); result
    detached, on ``x``'s device, of its dtype; zeros, never None, never an exception.

    f = x0^2 * x1 has H = [[2 x1, 2 x0], [2 x0, 0]]; at x = (1, 2) and v = (1, 0), H @ v = (4, 2):

    >>> hvp(lambda x: x[0] ** 2 * x[1], torch.tensor([1., 2.]), torch.tensor([1., 0.]))
    tensor([4., 2.])
    >>> hvp(lambda x: (3 * x).sum(), torch.tensor([1., 2.]), torch.tensor([1., 1.]))
    tensor([0., 0.])

    用二次反向传播求 Hessian 与向量的乘积 ``H(x) @ v``，无需构造 ``H``。``f`` 把一维 ``x`` 映射为
    0 维张量。先用 ``torch.autograd.grad(..., create_graph=True)`` 求 ``g = df/dx``（这样 ``g`` 自带
    计算图），再以 ``grad_outputs=v`` 对 ``g`` 求导，得到 ``d(g . v)/dx = H @ v``。若 ``f`` 对 ``x``
    至多是线性的（``g`` 没有通向 ``x`` 的计算图）或为常数，结果为零。参数：``x``、``v`` 为长度 n 的
    一维张量。返回形状 (n,)。约定：参数不得修改（数值、requires_grad、.grad、._version）；结果已
    detach，设备与 dtype 同 ``x``；用零，不返回 None，也不抛异常。示例见上：x = (1, 2)、v = (1, 0)
    时 H @ v = (4, 2)。
    """
    raise NotImplementedError("hvp: not implemented yet / 尚未实现")


def jacobian_rows(f, x: Tensor) -> Tensor:
    """The (m, n) Jacobian of ``f`` at ``x``, one row per ``torch.autograd.grad`` call.

    ``f`` maps a 1-dim ``x`` of length n to a 1-dim output ``y`` of length m. Row i is
    ``dy[i]/dx``: compute it with ``torch.autograd.grad(y, x_leaf, grad_outputs=e_i,
    retain_graph=True)``, where ``e_i`` is the i-th unit vector shaped like ``y`` (build it
    with ``torch.zeros_like(y)``, which also gets the device right). All rows go through the
    same graph, hence ``retain_graph=True``. Rows of outputs that do not depend on ``x`` are
    zeros; a constant ``f`` gives an all-zero (m, n) matrix. Do not call
    ``torch.autograd.functional`` or ``torch.func`` (that is not the exercise).

    Args:
        f: callable, 1-dim tensor of length n -> 1-dim tensor of length m.
        x: 1-dim tensor of length n.
    Returns:
        tensor of shape (m, n).
    Conventions: ``x`` unchanged (values, requires_grad, .grad, ._version); result detached,
    on ``x``'s device, of its dtype; zeros, never None, never an exception.

    >>> f = lambda x: torch.stack([x[0] * x[1], x[0] + x[1], x[1] ** 2])
    >>> jacobian_rows(f, torch.tensor([1., 2.]))
    tensor([[2., 1.],
            [1., 1.],
            [0., 4.]])

    逐行求 ``f`` 在 ``x`` 处的 (m, n) 雅可比矩阵，每行调用一次 ``torch.autograd.grad``。``f`` 把长度
    为 n 的一维 ``x`` 映射为长度为 m 的一维输出 ``y``。第 i 行为 ``dy[i]/dx``：用
    ``torch.autograd.grad(y, x_leaf, grad_outputs=e_i, retain_graph=True)`` 计算，其中 ``e_i`` 是与
    ``y`` 同形状的第 i 个单位向量（用 ``torch.zeros_like(y)`` 构造，设备也随之正确）。所有行都经过
    同一张计算图，因此需要 ``retain_graph=True``。不依赖 ``x`` 的输出对应的行为零；常数 ``f`` 得到
    全零的 (m, n) 矩阵。不要调用 ``torch.autograd.functional`` 或 ``torch.func``。返回形状 (m, n)。
    约定：``x`` 不得修改；结果已 detach，设备与 dtype 同 ``x``；用零，不返回 None，也不抛异常。
    """
    raise NotImplementedError("jacobian_rows: not implemented yet / 尚未实现")
