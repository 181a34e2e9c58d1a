"""Starts the walk at out.grad_fn without checking for None, so an output with no graph gives {'NoneType': 1} or crashes."""
EXERCISE = "graph_node_counts"
MODULE = "graph.py"
PUBLIC = "fail"
MISTAKE = "graph_node_counts.no_grad_fn"


def graph_node_counts(out):
    counts, seen, stack = {}, {out.grad_fn}, [out.grad_fn]
    while stack:
        node = stack.pop()
        counts[type(node).__name__] = counts.get(type(node).__name__, 0) + 1
        for nxt, _ in node.next_functions:
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return counts
