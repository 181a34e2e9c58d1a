"""Exercises: the computation graph, leaves, retain_grad, dynamic graphs.

Lecture 3, sections 1-2: "Computation graph" and "Dynamic graph". Fill in the four
functions below. Use only torch and the standard library; do not import other exercise files.
General rules: do not modify the arguments; returned tensors are detached, on the
arguments' device and of their dtype, unless a docstring says otherwise.

练习：计算图、叶子节点、retain_grad、动态图。

对应第三讲第 1-2 节「计算图」与「动态图」。请完成下面四个函数。只能使用 torch 和标准库，
不要导入其他练习文件。通用规则：不得修改参数；除非文档另有说明，返回的张量须已 detach，
且与参数在同一设备、同一 dtype。
"""

from __future__ import annotations

import torch
from torch import Tensor


def graph_node_counts(out: Tensor) -> dict[str, int]:
    """Count the nodes of the autograd graph behind ``out``, by node type.

    Start at ``out.grad_fn`` (it counts too) and follow ``node.next_functions`` (a tuple of
    ``(next_node, input_nr)`` pairs), skipping entries whose node is ``None`` (inputs that do
    not require grad). The key of a node is ``type(node).__name__``, e.g. ``"MulBackward0"``
    or ``"AccumulateGrad"`` (the node that stores a leaf's gradient). A node reachable along
    several paths is counted ONCE. If ``out.grad_fn is None`` (a leaf, or a tensor that does
    not require grad), return ``{}``.

    Args:
        out: any tensor; it may require grad. Do not modify it and do not call backward.
    Returns:
        dict mapping node type name -> number of distinct nodes of that type.

    Example (the lecture's graph; w reaches y along two paths, its AccumulateGrad counts once):

    >>> w = torch.tensor(1., requires_grad=True); x = torch.tensor(2.)
    >>> a = w + x; b = w + 1; y = a * b
    >>> graph_node_counts(y) == {"MulBackward0": 1, "AddBackward0": 2, "AccumulateGrad": 1}
    True
    >>> graph_node_counts(w)
    {}

    统计 ``out`` 背后自动求导计算图中各类型节点的个数。从 ``out.grad_fn``（它本身也计数）
    出发，沿 ``node.next_functions``（由 ``(下一个节点, 输入编号)`` 组成的元组）遍历，跳过节点为
    ``None`` 的项（即不需要梯度的输入）。键为 ``type(node).__name__``，如 ``"MulBackward0"``、
    ``"AccumulateGrad"``（保存叶子梯度的节点）。沿多条路径可达的同一节点只计一次。
    若 ``out.grad_fn is None``（叶子或不需要梯度的张量），返回 ``{}``。参数 ``out`` 可以需要梯度；
    不得修改它，也不要调用 backward。返回：节点类型名 -> 不同节点个数 的字典。
    示例同上：讲义中的图里 w 经两条路径到达 y，它的 AccumulateGrad 只计一次。
    """
    raise NotImplementedError("graph_node_counts: not implemented yet / 尚未实现")


def make_leaf(t: Tensor, dtype: torch.dtype | None = None,
              device: torch.device | str | None = None) -> Tensor:
    """Return a new LEAF tensor that requires grad, holding ``t``'s values.

    The values are converted to ``dtype`` and moved to ``device``; each defaults to ``t``'s
    own (``None`` means "keep t's"). The result must satisfy ``requires_grad is True`` and
    ``is_leaf is True``, and must share no storage with ``t``, even when no conversion is
    needed. Careful: ``t.requires_grad_().to(torch.float64)`` or ``.cuda()`` afterwards gives a
    NON-leaf whose ``.grad`` stays ``None``; convert first, then ask for gradients.

    Args:
        t: a floating tensor (not modified: values, requires_grad, ._version stay the same).
        dtype: target floating dtype, or None for ``t.dtype``.
        device: target device, or None for ``t.device``.
    Returns:
        the new leaf (this entry returns a tensor that requires grad).

    >>> t = torch.tensor([1., 2.])
    >>> l = make_leaf(t, dtype=torch.float64)
    >>> l
    tensor([1., 2.], dtype=torch.float64, requires_grad=True)
    >>> l.is_leaf, t.requires_grad, make_leaf(t).data_ptr() != t.data_ptr()
    (True, False, True)

    返回一个新的、需要梯度的叶子张量，其值与 ``t`` 相同，转换为 ``dtype`` 并移动到
    ``device``（二者为 ``None`` 时沿用 ``t`` 自己的 dtype / 设备）。结果须满足
    ``requires_grad`` 为 True、``is_leaf`` 为 True，且即使不需要任何转换也不能与 ``t`` 共享存储。
    注意：先 ``requires_grad_()`` 再 ``.to(torch.float64)`` 或 ``.cuda()`` 得到的是非叶子节点，
    其 ``.grad`` 永远是 ``None``；应先转换，再要求梯度。``t`` 不得被修改（数值、requires_grad、
    ._version 不变）。本函数返回的张量需要梯度（这是对通用约定的例外）。示例见上。
    """
    raise NotImplementedError("make_leaf: not implemented yet / 尚未实现")


def intermediate_grads(x: Tensor, w: Tensor, b: Tensor) -> dict[str, Tensor]:
    """Gradients of a small network's loss with respect to intermediates and parameters.

    Compute ``z = x @ w + b``, ``a = torch.relu(z)``, ``loss = ((a - 1) ** 2).mean()`` and return
    ``{"z": dloss/dz, "a": dloss/da, "w": dloss/dw, "b": dloss/db}``. Intended route: make leaf
    copies of w and b, call ``retain_grad()`` on the intermediates z and a, and run ONE
    ``loss.backward()``. (Without ``retain_grad()`` the ``.grad`` of a non-leaf is ``None``.)

    Args:
        x: shape (n, d); w: shape (d, k); b: shape (k,). None of them requires grad.
    Returns:
        dict with keys "z", "a" (shape (n, k)), "w" (shape (d, k)), "b" (shape (k,)).
    Conventions: arguments unchanged (values, requires_grad, .grad, ._version); returned
    tensors detached, on the arguments' device, of their dtype.

    Check by hand: da = 2 (a - 1) / a.numel(), dz = da * (z > 0), dw = x.T @ dz, db = dz.sum(0).
    dz and da differ wherever z <= 0: relu's backward passes no gradient there.

    >>> g = intermediate_grads(torch.tensor([[2.], [-1.]]), torch.tensor([[1.]]),
    ...                        torch.tensor([0.]))
    >>> g["z"].tolist(), g["a"].tolist(), g["w"].tolist(), g["b"].tolist()
    ([[1.0], [0.0]], [[1.0], [-1.0]], [[2.0]], [1.0])

    计算 ``z = x @ w + b``、``a = torch.relu(z)``、``loss = ((a - 1) ** 2).mean()``，返回
    ``{"z": dloss/dz, "a": dloss/da, "w": dloss/dw, "b": dloss/db}``。推荐做法：为 w、b 建叶子副本，
    对中间结果 z、a 调用 ``retain_grad()``，只调用一次 ``loss.backward()``（不调用
    ``retain_grad()`` 时非叶子节点的 ``.grad`` 为 ``None``）。形状：x 为 (n, d)，w 为 (d, k)，
    b 为 (k,)，均不需要梯度。约定：参数不得修改（数值、requires_grad、.grad、._version）；
    返回的张量已 detach，设备与 dtype 同参数。手算：da = 2 (a - 1) / a.numel()，dz = da * (z > 0)，
    dw = x.T @ dz，db = dz.sum(0)；在 z <= 0 处 dz 与 da 不同：relu 的反向传播在那里不传递梯度。
    示例中 z = [[2], [-1]]，a - 1 = [[1], [-1]]。
    """
    raise NotImplementedError("intermediate_grads: not implemented yet / 尚未实现")


def dynamic_doubling(a: Tensor) -> tuple[Tensor, Tensor, int]:
    """Run a define-by-run program and differentiate through whatever it executed.

    On a leaf copy of ``a`` (never on ``a`` itself) run exactly::

        b = a * 2
        while b.norm() < 1000:
            b = b * 2
        c = b if b.sum() > 0 else 100 * b

    then compute the gradient of ``c.sum()`` with respect to the copy of ``a``.

    Args:
        a: a tensor of any shape with at least one non-zero value (does not require grad).
    Returns:
        ``(c, grad, steps)``: ``c`` detached; ``grad`` = d(c.sum())/da, shaped like ``a``;
        ``steps`` = how many times the loop body ran, a Python ``int``.
    Conventions: ``a`` unchanged (values, requires_grad, .grad, ._version); returned tensors
    detached, on ``a``'s device, of its dtype.

    >>> dynamic_doubling(torch.tensor([1.]))    # 2 -> 4 -> ... -> 1024: 9 doublings
    (tensor([1024.]), tensor([1024.]), 9)
    >>> dynamic_doubling(torch.tensor([-1.]))   # b.sum() < 0: c = 100 * b
    (tensor([-102400.]), tensor([102400.]), 9)

    在 ``a`` 的叶子副本上（不要直接用 ``a``）原样运行上面的程序，再求 ``c.sum()`` 对该副本的梯度。
    ``a`` 可以是任意形状，至少有一个非零值，不需要梯度。返回 ``(c, grad, steps)``：``c`` 已 detach；
    ``grad`` = d(c.sum())/da，形状同 ``a``；``steps`` 为循环体执行的次数（Python ``int``）。
    约定：``a`` 不得修改（数值、requires_grad、.grad、._version）；返回的张量已 detach，
    设备与 dtype 同 ``a``。示例：a = [1.] 时 2 -> 1024 共翻倍 9 次；a = [-1.] 时 b 之和为负，
    c = 100 * b。
    """
    raise NotImplementedError("dynamic_doubling: not implemented yet / 尚未实现")
