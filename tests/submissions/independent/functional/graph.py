import collections

import torch


def graph_node_counts(out):
    def walk(node, seen):
        if node is None or node in seen:
            return
        seen.add(node)
        for parent, _ in node.next_functions:
            walk(parent, seen)

    nodes = set()
    walk(out.grad_fn, nodes)
    return dict(collections.Counter(type(n).__name__ for n in nodes))


def make_leaf(t, dtype=None, device=None):
    return torch.tensor(t.detach().tolist(), dtype=dtype if dtype is not None else t.dtype,
                        device=device if device is not None else t.device, requires_grad=True) \
        if t.dim() > 0 and t.numel() > 0 else t.detach().clone().to(dtype=dtype or t.dtype, device=device or t.device).requires_grad_()


def intermediate_grads(x, w, b):
    params = [p.detach().requires_grad_() for p in (w, b)]
    z = torch.add(torch.matmul(x.detach(), params[0]), params[1])
    a = torch.nn.functional.relu(z)
    loss = torch.nn.functional.mse_loss(a, torch.ones_like(a))
    gz, ga, gw, gb = torch.autograd.grad(loss, [z, a, *params])
    return dict(zip(["z", "a", "w", "b"], [gz, ga, gw, gb]))


def dynamic_doubling(a):
    leaf = a.detach().requires_grad_()
    doublings = 1
    while (2 ** doublings * a).norm() < 1000:
        doublings += 1
    result = leaf * 2 ** doublings
    if not result.sum() > 0:
        result = result * 100
    (g,) = torch.autograd.grad(result.sum(), leaf)
    return result.detach(), g, doublings - 1
