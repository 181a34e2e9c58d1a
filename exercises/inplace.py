"""Exercises: in-place operations, leaves and the version counter.

Lecture 3, section 5 (properties of autograd): ``a += b`` keeps ``id(a)`` while
``a = a + b`` makes a new tensor; a leaf that requires grad must not be modified in place
(``w.add_(1)`` raises) because backward needs the values the graph recorded; every in-place
operation increases a tensor's version counter (``t._version``), which autograd checks.
Fill in the three functions below (``shifted_sigmoid_and_grad`` is a repair exercise). Use
only torch and the standard library; do not import other exercise files. Only functions whose
entry says so (``add_into`` with ``inplace=True``, ``safe_add_``) mutate their arguments.

练习：原地操作、叶子节点与版本计数器。

对应第三讲第 5 节（自动求导的性质）：``a += b`` 保持 ``id(a)`` 不变，而 ``a = a + b`` 生成新张量；
需要梯度的叶子节点不能被原地修改（``w.add_(1)`` 会报错），因为反向传播需要计算图记录下的值；
每次原地操作都会增加张量的版本计数器（``t._version``），自动求导会检查它。请完成下面三个函数
（``shifted_sigmoid_and_grad`` 是一道修复题）。只能使用 torch 和标准库，不要导入其他练习文件。
只有文档中注明的函数（``inplace=True`` 时的 ``add_into``、``safe_add_``）才会修改参数。
"""

from __future__ import annotations

import torch
from torch import Tensor


def add_into(a: Tensor, b: Tensor, inplace: bool) -> Tensor:
    """The lecture's ``id()`` tip: in-place ``a += b`` versus out-of-place ``a + b``.

    ``inplace=True``: do ``a += b`` and return ``a`` ITSELF (the same Python object, the same
    storage; ``a._version`` increases). ``inplace=False``: return ``a + b``, a new tensor,
    leaving ``a`` unchanged (values and ``._version``).

    Args:
        a, b: tensors of the same shape and dtype (not requiring grad).
        inplace: bool, which of the two behaviours to use.
    Returns:
        ``a`` itself (mutated) when ``inplace`` is True, otherwise a new tensor ``a + b``.
    Conventions: this entry mutates ``a`` when ``inplace`` is True (and only then); ``b`` is
    never modified; the result is on ``a``'s device, of its dtype.

    >>> a = torch.tensor([1.]); b = torch.tensor([2.])
    >>> c = add_into(a, b, False); c, a, c is a, a._version
    (tensor([3.]), tensor([1.]), False, 0)
    >>> c = add_into(a, b, True); c, a, c is a, a._version
    (tensor([3.]), tensor([3.]), True, 1)

    讲义中关于 ``id()`` 的提示：原地 ``a += b`` 与非原地 ``a + b`` 的区别。``inplace=True`` 时执行
    ``a += b`` 并返回 ``a`` 本身（同一个 Python 对象、同一块存储，``a._version`` 增加）；
    ``inplace=False`` 时返回新张量 ``a + b``，``a`` 保持不变（数值与 ``._version``）。参数：``a``、
    ``b`` 形状与 dtype 相同，不需要梯度；``inplace`` 为布尔值。返回：``inplace`` 为 True 时返回被修改
    的 ``a`` 本身，否则返回新张量。约定：仅当 ``inplace`` 为 True 时本函数修改 ``a``；``b`` 从不被
    修改；结果与 ``a`` 同设备、同 dtype。
    """
    raise NotImplementedError("add_into: not implemented yet / 尚未实现")


def safe_add_(w: Tensor, delta: Tensor) -> Tensor:
    """Add ``delta`` to a leaf that requires grad, in place, without breaking autograd's rules.

    ``w`` arrives as a leaf with ``requires_grad=True``; plain ``w.add_(delta)`` raises
    "a leaf Variable that requires grad is being used in an in-place operation". Make the
    in-place update allowed (the way manual SGD updates are written) and return ``w`` itself.
    Afterwards ``w`` is the same object with the same storage, still a leaf, still requiring
    grad, its ``.grad`` untouched, and its version counter increased as for any in-place
    operation. ``w.data`` tricks hide the change from autograd and are not the answer.

    Args:
        w: leaf tensor with ``requires_grad=True`` (it may already have a ``.grad``).
        delta: tensor of ``w``'s shape, dtype and device.
    Returns:
        ``w`` itself, now holding ``w + delta``.
    Conventions: the trailing underscore means this function mutates ``w`` (values and
    ``._version`` only); ``delta`` is not modified.

    >>> w = torch.tensor([1.], requires_grad=True)
    >>> out = safe_add_(w, torch.tensor([2.]))
    >>> out is w, w, w.is_leaf, w.grad, w._version
    (True, tensor([3.], requires_grad=True), True, None, 1)

    在不违反自动求导规则的前提下，把 ``delta`` 原地加到一个需要梯度的叶子上。``w`` 传入时就是
    ``requires_grad=True`` 的叶子；直接 ``w.add_(delta)`` 会报错 “a leaf Variable that requires grad
    is being used in an in-place operation”。请让这次原地更新合法（就像手写 SGD 更新那样），并返回
    ``w`` 本身。之后 ``w`` 仍是同一个对象、同一块存储，仍是叶子、仍需要梯度，``.grad`` 不变，
    版本计数器像任何原地操作一样增加。借助 ``w.data`` 会对自动求导隐藏这次修改，不是本题答案。
    参数：``w`` 为需要梯度的叶子（可能已有 ``.grad``）；``delta`` 与 ``w`` 形状、dtype、设备相同。
    返回：``w`` 本身，其值为 ``w + delta``。约定：名字末尾的下划线表示本函数会修改 ``w``（仅数值与
    ``._version``）；``delta`` 不得修改。
    """
    raise NotImplementedError("safe_add_: not implemented yet / 尚未实现")


def shifted_sigmoid_and_grad(x: Tensor, shift: float) -> tuple[Tensor, Tensor]:
    """REPAIR EXERCISE: this code looks right but raises; find the cause and fix it.

    Task: return ``(s, g)`` with ``s = torch.sigmoid(x) + shift`` and ``g = d(s.sum())/dx``
    (by hand, ``g = sigmoid(x) * (1 - sigmoid(x))``, independent of ``shift``).
    Running the code below raises ``RuntimeError: one of the variables needed for gradient
    computation has been modified by an inplace operation: ... is at version 1; expected
    version 0 instead``. Meaning: a tensor that the graph SAVED for backward was changed in
    place after it was saved; every in-place op bumps the tensor's ``._version``, and backward
    refuses to use a saved tensor whose version no longer matches. Find which tensor sigmoid's
    backward needs, and compute ``s`` so that this tensor is left as it was recorded.
    Do not hide the change with ``.data`` or ``detach()`` (the gradient would be wrong or the
    error would remain).

    Args:
        x: floating tensor of any shape (not requiring grad).  shift: a float.
    Returns:
        ``(s, g)``, both shaped like ``x``.
    Conventions: ``x`` unchanged (values, requires_grad, .grad, ._version); results detached,
    on ``x``'s device, of its dtype.

    Expected after the repair: x = [0., 2.], shift = 1. gives
    s = [1.5000, 1.8808] and g = [0.2500, 0.1050]:

    >>> shifted_sigmoid_and_grad(torch.tensor([0., 2.]), 1.)
    (tensor([1.5000, 1.8808]), tensor([0.2500, 0.1050]))

    修复题：下面的代码看似正确，运行却会报错；请找出原因并修复。任务：返回 ``(s, g)``，其中
    ``s = torch.sigmoid(x) + shift``，``g = d(s.sum())/dx``（手算为 ``sigmoid(x) * (1 - sigmoid(x))``，
    与 ``shift`` 无关）。运行下面的代码会抛出 ``RuntimeError: one of the variables needed for
    gradient computation has been modified by an inplace operation ...``。含义：计算图为反向传播
    保存的某个张量在保存之后被原地修改了；每次原地操作都会增加该张量的 ``._version``，反向传播
    发现保存的张量版本不一致，就拒绝使用它。请找出 sigmoid 的反向传播需要哪个张量，并改写 ``s``
    的计算，使这个张量保持被记录时的样子。不要用 ``.data`` 或 ``detach()`` 掩盖修改（梯度会出错，
    或错误依旧）。参数：``x`` 为任意形状的浮点张量，不需要梯度；``shift`` 为浮点数。返回
    ``(s, g)``，形状同 ``x``。约定：``x`` 不得修改；结果已 detach，设备与 dtype 同 ``x``。
    修复后的预期：x = [0., 2.]、shift = 1. 时 s = [1.5000, 1.8808]，g = [0.2500, 0.1050]。
    """
    x = x.detach().clone().requires_grad_(True)
    s = torch.sigmoid(x)
    s += shift
    s.sum().backward()
    return s.detach(), x.grad
