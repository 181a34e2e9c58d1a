"""Exercises beyond the lecture: a custom autograd Function, finite differences, no_grad.

Lecture 3 covers autograd's graph; these three exercises go beyond it: writing a node of the
graph yourself (``torch.autograd.Function``), checking gradients numerically, and computing
without recording a graph. Use only torch and the standard library; do not import other
exercise files. General rules: do not modify the arguments; returned tensors are detached, on
the arguments' device and of their dtype.

超出讲义范围的练习：自定义 autograd Function、有限差分、no_grad。

第三讲介绍了自动求导的计算图；这三道题在此基础上更进一步：亲手编写计算图中的一个节点
（``torch.autograd.Function``），用数值方法检验梯度，以及在不记录计算图的情况下计算。只能使用
torch 和标准库，不要导入其他练习文件。通用规则：不得修改参数；返回的张量须已 detach，且与参数
在同一设备、同一 dtype。
"""

from __future__ import annotations

import torch
from torch import Tensor


class SmoothAbs(torch.autograd.Function):
    """Smooth absolute value ``sqrt(x ** 2 + eps)``, elementwise, with a hand-written backward.

    Used as ``SmoothAbs.apply(x, eps)`` (``eps`` a positive float, between 1e-3 and 1 in the
    tests). Write two static methods:

    - ``forward(ctx, x, eps)``: return ``sqrt(x ** 2 + eps)`` and save what backward needs
      (``ctx.save_for_backward(...)`` for tensors; plain attributes of ``ctx`` for floats).
    - ``backward(ctx, grad_out)``: return one gradient per input of forward:
      ``(grad_out * d/dx sqrt(x ** 2 + eps), None)``; ``None`` because ``eps`` is not a tensor
      that needs a gradient. Derivative by hand: ``x / sqrt(x ** 2 + eps)``.

    It must pass ``torch.autograd.gradcheck`` AND ``gradgradcheck`` in float64, so backward
    must itself be differentiable: write it with ordinary torch operations on tensors (no
    ``.item()``, NumPy, ``.detach()`` or ``torch.no_grad()`` inside). Calling autograd on the
    forward expression inside backward is not the exercise. Forward must not modify ``x``.

    Example: x = [0., 1.], eps = 1.: y = [1.0000, 1.4142], dy/dx = [0.0000, 0.7071], and the
    second derivative eps / y ** 3 = [1.0000, 0.3536]:

    >>> x = torch.tensor([0., 1.], dtype=torch.float64, requires_grad=True)
    >>> y = SmoothAbs.apply(x, 1.)
    >>> (g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    >>> (h,) = torch.autograd.grad(g.sum(), x)
    >>> torch.stack([y, g, h]).detach().round(decimals=4)
    tensor([[1.0000, 1.4142],
            [0.0000, 0.7071],
            [1.0000, 0.3536]], dtype=torch.float64)

    平滑绝对值 ``sqrt(x ** 2 + eps)``（逐元素），反向传播需手写。用法 ``SmoothAbs.apply(x, eps)``
    （``eps`` 为正浮点数，测试中介于 1e-3 与 1 之间）。需要编写两个静态方法：``forward(ctx, x, eps)``
    返回 ``sqrt(x ** 2 + eps)`` 并保存反向传播所需的量（张量用 ``ctx.save_for_backward(...)``，浮点数
    可直接存为 ``ctx`` 的属性）；``backward(ctx, grad_out)`` 为 forward 的每个输入返回一个梯度：
    ``(grad_out * d/dx sqrt(x ** 2 + eps), None)``，``eps`` 不需要梯度，故为 ``None``；手算导数为
    ``x / sqrt(x ** 2 + eps)``。它必须在 float64 下通过 ``torch.autograd.gradcheck`` 和
    ``gradgradcheck``，因此 backward 本身必须可微：只用普通的 torch 张量运算（内部不要用
    ``.item()``、NumPy、``.detach()`` 或 ``torch.no_grad()``）。在 backward 内对前向表达式调用自动
    求导不是本题的做法。forward 不得修改 ``x``。示例：x = [0., 1.]、eps = 1. 时 y = [1.0000, 1.4142]，
    dy/dx = [0.0000, 0.7071]，二阶导数 eps / y ** 3 = [1.0000, 0.3536]。
    """

    @staticmethod
    def forward(ctx, x: Tensor, eps: float) -> Tensor:
        raise NotImplementedError("SmoothAbs.forward: not implemented yet / 尚未实现")

    @staticmethod
    def backward(ctx, grad_out: Tensor):
        raise NotImplementedError("SmoothAbs.backward: not implemented yet / 尚未实现")


def numerical_gradient(f, x: Tensor, eps: float = 1e-6) -> Tensor:
    """Central-difference estimate of the gradient of a scalar function.

    For every element i of ``x`` (any shape, including 0-dim), estimate
    ``df/dx_i ~ (f(x + eps * e_i) - f(x - eps * e_i)) / (2 * eps)``, where ``e_i`` is 1 at
    position i and 0 elsewhere. Evaluate ``f`` on float64 COPIES of ``x`` (on ``x``'s device;
    the ``f``s used accept any dtype): in float32 the two values of ``f`` differ in too few
    digits for ``eps = 1e-6``. Do it without autograd (``torch.no_grad()``), never write into
    ``x``, and return the estimate converted back to ``x``'s dtype.

    Args:
        f: callable, tensor shaped like ``x`` -> 0-dim tensor.
        x: floating tensor of any shape.
        eps: the step, default 1e-6.
    Returns:
        tensor shaped like ``x``.
    Conventions: ``x`` unchanged (values, requires_grad, .grad, ._version); result detached,
    on ``x``'s device, of ``x``'s dtype (not float64 unless ``x`` is).

    Lecture numbers: f(w) = (w + x) * (w + 1) with x = 2 at w = 1 gives 2w + x + 1 = 5:

    >>> numerical_gradient(lambda w: (w + 2.) * (w + 1.), torch.tensor(1.))
    tensor(5.)
    >>> numerical_gradient(lambda t: (t ** 2).sum(), torch.tensor([1., 2.]))
    tensor([2., 4.])

    用中心差分估计标量函数的梯度。对 ``x``（任意形状，包括 0 维）的每个元素 i，估计
    ``df/dx_i ~ (f(x + eps * e_i) - f(x - eps * e_i)) / (2 * eps)``，其中 ``e_i`` 在位置 i 为 1、
    其余为 0。在 ``x`` 的 float64 副本上（位于 ``x`` 的设备）计算 ``f``（所用的 ``f`` 接受任意
    dtype）：在 float32 下，``eps = 1e-6`` 时两次 ``f`` 的值相差的有效数字太少。计算时不使用自动求导
    （``torch.no_grad()``），绝不写入 ``x``，最后把估计值转换回 ``x`` 的 dtype。参数：``f`` 为可调用
    对象，返回 0 维张量；``eps`` 为步长，默认 1e-6。返回形状同 ``x``。约定：``x`` 不得修改（数值、
    requires_grad、.grad、._version）；结果已 detach，与 ``x`` 同设备、同 dtype（除非 ``x`` 是
    float64，否则不是 float64）。示例：讲义数值 x = 2、w = 1 时 2w + x + 1 = 5。
    """
    raise NotImplementedError("numerical_gradient: not implemented yet / 尚未实现")


def frozen_predict(w: Tensor, x: Tensor) -> Tensor:
    """Prediction ``x @ w`` computed without recording a graph.

    ``w`` may arrive requiring grad (a trained parameter). Return ``x @ w`` such that no
    graph is recorded (``requires_grad`` False, ``grad_fn`` None) and ``w.grad`` stays
    untouched, yet the result is an ordinary tensor that LATER autograd computations may use as
    an input (e.g. multiplied by another leaf and backpropagated). So use ``torch.no_grad()``
    or ``detach()``, not ``torch.inference_mode()``: its results are "inference tensors" that
    autograd refuses to save for backward.

    Args:
        w: shape (d, k), possibly requiring grad (not modified: values, requires_grad, .grad,
            ._version).
        x: shape (n, d).
    Returns:
        tensor of shape (n, k), detached, on the arguments' device, of their dtype.

    >>> w = torch.tensor([[1.], [2.]], requires_grad=True)
    >>> y = frozen_predict(w, torch.tensor([[3., 4.]]))
    >>> y, y.requires_grad, w.grad
    (tensor([[11.]]), False, None)

    在不记录计算图的情况下计算预测值 ``x @ w``。``w`` 传入时可能需要梯度（已训练的参数）。返回的
    ``x @ w`` 不记录计算图（``requires_grad`` 为 False，``grad_fn`` 为 None），``w.grad`` 不受影响，
    但结果必须是普通张量，之后的自动求导计算可以把它当作输入（例如乘以另一个叶子再反向传播）。
    因此应使用 ``torch.no_grad()`` 或 ``detach()``，而不是 ``torch.inference_mode()``：后者得到的是
    “推理张量”，自动求导拒绝为反向传播保存它们。参数：``w`` 形状 (d, k)，可能需要梯度（不得修改：
    数值、requires_grad、.grad、._version）；``x`` 形状 (n, d)。返回形状 (n, k)，已 detach，设备与
    dtype 同参数。
    """
    raise NotImplementedError("frozen_predict: not implemented yet / 尚未实现")
