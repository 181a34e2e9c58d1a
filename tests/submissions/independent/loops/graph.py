import torch


def graph_node_counts(out):
    if out.grad_fn is None:
        return {}
    visited = []
    queue = [out.grad_fn]
    result = {}
    while queue:
        fn = queue.pop(0)
        if any(fn is v for v in visited):
            continue
        visited.append(fn)
        key = fn.__class__.__name__
        result[key] = result.get(key, 0) + 1
        queue.extend(child for child, _ in fn.next_functions if child is not None)
    return result


def make_leaf(t, dtype=None, device=None):
    target_dtype = dtype or t.dtype
    target_device = device or t.device
    leaf = torch.empty(t.shape, dtype=target_dtype, device=target_device)
    with torch.no_grad():
        leaf.copy_(t.detach())
    leaf.requires_grad = True
    return leaf


def intermediate_grads(x, w, b):
    wl = w.detach().clone()
    bl = b.detach().clone()
    wl.requires_grad = True
    bl.requires_grad = True
    kept = {}
    pre = torch.matmul(x.detach(), wl) + bl
    pre.register_hook(lambda g: kept.__setitem__("z", g))
    act = pre.clamp(min=0)
    act.register_hook(lambda g: kept.__setitem__("a", g))
    torch.mean(torch.square(act - 1)).backward()
    return {"z": kept["z"], "a": kept["a"], "w": wl.grad, "b": bl.grad}


def dynamic_doubling(a):
    leaf = a.detach().clone()
    leaf.requires_grad = True
    value = leaf + leaf
    count = 0
    while torch.linalg.vector_norm(value) < 1000:
        value = value + value
        count = count + 1
    if value.sum() <= 0:
        value = value * 100
    value.sum().backward()
    return value.detach(), leaf.grad, count
