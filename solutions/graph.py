"""Reference solutions: computation graph, leaves, retain_grad, dynamic graphs (lecture §1-2)."""

from __future__ import annotations

import torch
from torch import Tensor


def graph_node_counts(out: Tensor) -> dict[str, int]:
    root = out.grad_fn
    if root is None:
        return {}
    counts: dict[str, int] = {}
    seen = {root}  # keeps the node objects alive, so identity is stable during the walk
    stack = [root]
    while stack:
        node = stack.pop()
        name = type(node).__name__
        counts[name] = counts.get(name, 0) + 1
        for nxt, _ in node.next_functions:
            # None marks an input that does not require grad; a shared node counts once
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return counts


def make_leaf(t: Tensor, dtype: torch.dtype | None = None,
              device: torch.device | str | None = None) -> Tensor:
    dtype = t.dtype if dtype is None else dtype
    device = t.device if device is None else device
    # convert first, then requires_grad_: `t.requires_grad_().to(...)` would be a non-leaf;
    # copy=True so that the leaf never shares storage with t
    return t.detach().to(device=device, dtype=dtype, copy=True).requires_grad_(True)


def intermediate_grads(x: Tensor, w: Tensor, b: Tensor) -> dict[str, Tensor]:
    w = w.detach().clone().requires_grad_(True)
    b = b.detach().clone().requires_grad_(True)
    z = x.detach() @ w + b
    a = torch.relu(z)
    # non-leaf gradients are freed after backward unless retained
    z.retain_grad()
    a.retain_grad()
    loss = ((a - 1) ** 2).mean()
    loss.backward()
    return {"z": z.grad, "a": a.grad, "w": w.grad, "b": b.grad}


def dynamic_doubling(a: Tensor) -> tuple[Tensor, Tensor, int]:
    a = a.detach().clone().requires_grad_(True)
    # define-by-run: the graph is whatever this Python control flow executed
    b = a * 2
    steps = 0
    while b.norm() < 1000:
        b = b * 2
        steps += 1
    c = b if b.sum() > 0 else 100 * b
    c.sum().backward()
    return c.detach(), a.grad, steps
