"""Exercises: gradients accumulate; zeroing them with ``w.grad.zero_()``.

Lecture 3, section 5 (properties of autograd): gradients are not zeroed automatically; every
backward ADDS into ``.grad``; the trailing underscore of ``zero_()`` marks an in-place
operation. Fill in the three functions below. Use only torch and the standard library; do
not import other exercise files. General rules: do not modify the arguments; returned tensors
are detached, on the arguments' device and of their dtype.

练习：梯度会累加；用 ``w.grad.zero_()`` 清零。

对应第三讲第 5 节（自动求导的性质）：梯度不会自动清零，每次 backward 都会把梯度加到 ``.grad``
上；``zero_()`` 末尾的下划线表示原地操作。请完成下面三个函数。只能使用 torch 和标准库，
不要导入其他练习文件。通用规则：不得修改参数；返回的张量须已 detach，且与参数在同一设备、
同一 dtype。
"""

from __future__ import annotations

import torch
from torch import Tensor


def grads_per_step(w: Tensor, xs: list[Tensor]) -> Tensor:
    """The training-loop tip: record the gradient of each step, zeroing it in between.

    Make ONE leaf copy of ``w``. For each ``x`` in ``xs``, in order: compute
    ``y = ((w + x) * (w + 1)).sum()`` on that same leaf, call ``y.backward()``, record the
    gradient with respect to ``w``, then zero it with ``w.grad.zero_()`` before the next
    step. Careful: ``zero_()`` works in place, so a recorded reference to ``w.grad`` would be
    wiped as well; record a copy. Return the recorded gradients stacked.

    Args:
        w: tensor of any shape (not requiring grad).
        xs: list of tensors, each shaped like ``w``; may be empty.
    Returns:
        tensor of shape ``(len(xs), *w.shape)``; row k is ``2 * w + xs[k] + 1``. An empty
        ``xs`` gives shape ``(0, *w.shape)`` (still with ``w``'s dtype and device).
    Conventions: ``w`` and the ``xs`` unchanged (values, requires_grad, .grad, ._version);
    result detached, on ``w``'s device, of its dtype.

    Lecture numbers w = 1, x = 2 give 2w + x + 1 = 5; without zeroing, row 1 would be 5 + 3 = 8:

    >>> grads_per_step(torch.tensor([1.]), [torch.tensor([2.]), torch.tensor([0.])])
    tensor([[5.],
            [3.]])
    >>> grads_per_step(torch.tensor([1., 2.]), []).shape
    torch.Size([0, 2])

    训练循环中的技巧：记录每一步的梯度，并在两步之间清零。只为 ``w`` 建一个叶子副本。按顺序对
    ``xs`` 中的每个 ``x``：在同一个叶子上计算 ``y = ((w + x) * (w + 1)).sum()``，调用
    ``y.backward()``，记录对 ``w`` 的梯度，然后在下一步之前用 ``w.grad.zero_()`` 清零。注意
    ``zero_()`` 是原地操作，直接保存 ``w.grad`` 的引用也会被清零，应保存副本。返回把记录的梯度
    堆叠起来的张量，形状 ``(len(xs), *w.shape)``，第 k 行为 ``2 * w + xs[k] + 1``；``xs`` 为空时
    形状为 ``(0, *w.shape)``（dtype 与设备仍同 ``w``）。约定：``w`` 与 ``xs`` 不得修改（数值、
    requires_grad、.grad、._version）；结果已 detach，设备与 dtype 同 ``w``。示例：讲义数值
    w = 1、x = 2 得 5；若不清零，第二行会是 5 + 3 = 8。
    """
    raise NotImplementedError("grads_per_step: not implemented yet / 尚未实现")


def accumulate_microbatches(w: Tensor, X: Tensor, Y: Tensor, batch_size: int) -> Tensor:
    """Full-batch gradient from accumulated micro-batch gradients.

    Model ``pred = X @ w``, full-batch loss ``((pred - Y) ** 2).mean()`` over all N rows.
    Return the gradient of that loss with respect to ``w``, computed like this: split the
    rows, in order, into micro-batches of ``batch_size`` rows (the last one may be smaller;
    ``batch_size >= N`` means one batch), run one backward per micro-batch on a correctly
    scaled loss, and let the gradients accumulate in ``.grad`` (no zeroing in between).
    "Correctly scaled": the accumulated sum must equal the full-batch MEAN, so divide each
    micro-batch's sum of squared errors by N, not by the micro-batch size.

    Args:
        w: shape (d,).  X: shape (N, d).  Y: shape (N,).  batch_size: int >= 1.
    Returns:
        tensor of shape (d,), equal to ``2 / N * X.T @ (X @ w - Y)``.
    Conventions: arguments unchanged (values, requires_grad, .grad, ._version); result
    detached, on the arguments' device, of their dtype.

    Rows 1, 2, 3 with Y = 0 and w = 1: (2/3)(1*1 + 2*2) + (2/3)(3*3) = 28/3 for batch_size 2
    (averaging inside each micro-batch instead would give 5 + 18 = 23):

    >>> accumulate_microbatches(torch.tensor([1.]), torch.tensor([[1.], [2.], [3.]]),
    ...                         torch.tensor([0., 0., 0.]), 2)
    tensor([9.3333])

    用微批次梯度累加得到整批梯度。模型 ``pred = X @ w``，整批损失为对全部 N 行求
    ``((pred - Y) ** 2).mean()``。返回该损失对 ``w`` 的梯度，做法是：按顺序把行切成每批
    ``batch_size`` 行的微批次（最后一批可以更小；``batch_size >= N`` 即只有一批），对每个微批次
    在正确缩放的损失上调用一次 backward，让梯度在 ``.grad`` 中累加（中间不清零）。“正确缩放”指
    累加的总和必须等于整批的平均值：每个微批次的平方误差之和除以 N，而不是除以该批的大小。
    参数形状：w (d,)、X (N, d)、Y (N,)，batch_size 为不小于 1 的整数。返回形状 (d,)，等于
    ``2 / N * X.T @ (X @ w - Y)``。约定：参数不得修改（数值、requires_grad、.grad、._version）；
    结果已 detach，设备与 dtype 同参数。示例：得 28/3；若在每个微批次内取平均则会错误地得到 23。
    """
    raise NotImplementedError("accumulate_microbatches: not implemented yet / 尚未实现")


def gd_fit(X: Tensor, Y: Tensor, w0: Tensor, lr: float, steps: int) -> Tensor:
    """Plain gradient descent on the mean squared error, written by hand.

    Start from a leaf copy of ``w0`` and do ``steps`` updates on
    ``loss = ((X @ w - Y) ** 2).mean()``: backward, then ``w <- w - lr * w.grad`` done IN PLACE
    on the leaf inside ``torch.no_grad()`` (outside it, an in-place op on a leaf that requires
    grad raises; ``w = w - lr * w.grad`` would replace the leaf by a new tensor), then zero the
    gradient before the next step (otherwise the gradients of all steps add up).
    ``steps = 0`` returns a copy of ``w0``.

    Args:
        X: shape (N, d).  Y: shape (N,).  w0: shape (d,), the start (not modified).
        lr: learning rate (float).  steps: number of updates (int >= 0).
    Returns:
        the final ``w``, shape (d,).
    Conventions: arguments unchanged (values, requires_grad, .grad, ._version; ``w0`` in
    particular); result detached, on the arguments' device, of their dtype.

    loss = (w - 2)^2 from w = 0 with lr = 0.25: grad -4 gives w = 1, grad -2 gives w = 1.5
    (without zeroing, the second gradient would be -6 and w = 2.5):

    >>> gd_fit(torch.tensor([[1.]]), torch.tensor([2.]), torch.tensor([0.]), 0.25, 2)
    tensor([1.5000])

    手写的普通梯度下降，最小化均方误差。从 ``w0`` 的叶子副本出发，对
    ``loss = ((X @ w - Y) ** 2).mean()`` 做 ``steps`` 次更新：反向传播，然后在 ``torch.no_grad()``
    中对叶子原地执行 ``w <- w - lr * w.grad``（在其外对需要梯度的叶子做原地操作会报错；
    ``w = w - lr * w.grad`` 则会用新张量替换掉叶子），再在下一步之前把梯度清零（否则各步的梯度会
    累加）。``steps = 0`` 时返回 ``w0`` 的副本。参数：X (N, d)、Y (N,)、w0 (d,) 为起点（不得修改），
    lr 为学习率，steps 为更新次数。返回最终的 ``w``，形状 (d,)。约定：参数不得修改（数值、
    requires_grad、.grad、._version，尤其是 ``w0``）；结果已 detach，设备与 dtype 同参数。
    示例：从 0 出发得 1、1.5；若不清零，第二步梯度为 -6，w 会变成 2.5。
    """
    raise NotImplementedError("gd_fit: not implemented yet / 尚未实现")
