"""Exercises: torch.autograd.backward, retain_graph and grad_tensors.

Lecture 3, section 3: ``torch.autograd.backward(tensors, grad_tensors, retain_graph,
create_graph)``. Fill in the two functions below. Use only torch and the standard library;
do not import other exercise files. General rules: do not modify the arguments; returned
tensors are detached, on the arguments' device and of their dtype.

练习：torch.autograd.backward、retain_graph 与 grad_tensors。

对应第三讲第 3 节 ``torch.autograd.backward(tensors, grad_tensors, retain_graph, create_graph)``。
请完成下面两个函数。只能使用 torch 和标准库，不要导入其他练习文件。通用规则：不得修改参数；
返回的张量须已 detach，且与参数在同一设备、同一 dtype。
"""

from __future__ import annotations

import torch
from torch import Tensor


def two_losses_grad(w: Tensor, x: Tensor) -> tuple[Tensor, Tensor]:
    """Two backward passes through ONE graph; gradients accumulate.

    On a leaf copy of ``w``, build ``h = torch.exp(x * w)`` once, then ``L1 = h.sum()`` and
    ``L2 = (h ** 2).sum()``. Call backward on ``L1``, record the gradient of the copy of ``w``,
    then call backward on ``L2`` through the same graph (do not rebuild ``h``). The first
    backward frees the saved tensors unless told to keep them (``retain_graph``). The second
    backward ADDS to the stored gradient, so the final one is ``dL1/dw + dL2/dw``. Careful:
    ``.grad`` is updated in place, so a reference to it taken after the first backward would
    change too.

    Args:
        w, x: tensors of the same shape (not requiring grad).
    Returns:
        ``(g1, g12)``: gradient w.r.t. ``w`` after the first backward, and after both.
        By hand: ``g1 = x * exp(x * w)`` and ``g12 = g1 + 2 * x * exp(2 * x * w)``.
    Conventions: ``w``, ``x`` unchanged (values, requires_grad, .grad, ._version); returned
    tensors detached, on the arguments' device, of their dtype.

    >>> two_losses_grad(torch.tensor([0.]), torch.tensor([1.]))
    (tensor([1.]), tensor([3.]))
    >>> two_losses_grad(torch.tensor([1.]), torch.tensor([2.]))   # 2e^2, 2e^2 + 4e^4
    (tensor([14.7781]), tensor([233.1707]))

    同一张计算图上做两次反向传播，梯度会累加。在 ``w`` 的叶子副本上只构建一次
    ``h = torch.exp(x * w)``，令 ``L1 = h.sum()``、``L2 = (h ** 2).sum()``。先对 ``L1`` 反向传播并
    记下副本的梯度，再对 ``L2`` 沿同一张图反向传播（不要重建 ``h``）。第一次反向传播默认会释放
    保存的中间张量，除非要求保留（``retain_graph``）。第二次反向传播会把梯度加到已有的梯度上，
    所以最终结果是 ``dL1/dw + dL2/dw``。注意 ``.grad`` 是原地更新的，第一次之后拿到的引用也会跟着变。
    参数：``w``、``x`` 形状相同，不需要梯度。返回 ``(g1, g12)``：第一次之后与两次之后对 ``w`` 的梯度
    （手算公式见上）。约定：参数不得修改（数值、requires_grad、.grad、._version）；返回的张量已
    detach，设备与 dtype 同参数。
    """
    raise NotImplementedError("two_losses_grad: not implemented yet / 尚未实现")


def weighted_backward(w: Tensor, x: Tensor, weights: Tensor) -> Tensor:
    """The lecture's ``grad_tensors`` example, for vectors.

    On a leaf copy of ``w`` compute ``a = w + x``, ``b = w + 1``, ``y0 = a * b``,
    ``y1 = a + b`` and ``loss = torch.cat([y0, y1])``. ``loss`` is not a scalar, so backward
    needs a weight for each of its entries: backpropagate it with ``grad_tensors=weights``
    and return the gradient with respect to ``w``, i.e. ``sum_i weights[i] * dloss[i]/dw``.

    Args:
        w, x: 1-dim tensors of equal length m.
        weights: 1-dim tensor of length 2 * m (the first m entries weight ``y0``, the last m
            weight ``y1``).
    Returns:
        tensor of shape (m,). By hand, with ``v0 = weights[:m]``, ``v1 = weights[m:]``:
        ``v0 * (2 * w + x + 1) + 2 * v1``.
    Conventions: arguments unchanged (values, requires_grad, .grad, ._version); result
    detached, on the arguments' device, of their dtype.

    >>> weighted_backward(torch.tensor([1.]), torch.tensor([2.]), torch.tensor([1., 2.]))
    tensor([9.])
    >>> weighted_backward(torch.tensor([1., 0.]), torch.tensor([2., 1.]),
    ...                   torch.tensor([1., 1., 0., 2.]))
    tensor([5., 6.])

    讲义中 ``grad_tensors`` 的例子（向量版）。在 ``w`` 的叶子副本上计算 ``a = w + x``、
    ``b = w + 1``、``y0 = a * b``、``y1 = a + b``、``loss = torch.cat([y0, y1])``。``loss`` 不是标量，
    反向传播时需要为每个分量给出权重：以 ``grad_tensors=weights`` 反向传播，返回对 ``w`` 的梯度，
    即 ``sum_i weights[i] * dloss[i]/dw``。参数：``w``、``x`` 为等长（m）的一维张量；``weights``
    长度为 2m，前 m 个加权 ``y0``，后 m 个加权 ``y1``。返回形状 (m,)，手算为
    ``v0 * (2w + x + 1) + 2 * v1``；讲义数值 w = 1、x = 2、权重 [1, 2] 时为 1*5 + 2*2 = 9。
    约定：参数不得修改；返回的张量已 detach，设备与 dtype 同参数。
    """
    raise NotImplementedError("weighted_backward: not implemented yet / 尚未实现")
