"""Walks next_functions without remembering visited nodes, so a node reached along two paths is counted twice."""
EXERCISE = "graph_node_counts"
MODULE = "graph.py"
PUBLIC = "fail"
MISTAKE = "graph_node_counts.counted_twice"


def graph_node_counts(out):
    counts = {}
    stack = [out.grad_fn] if out.grad_fn is not None else []
    while stack:
        node = stack.pop()
        name = type(node).__name__
        counts[name] = counts.get(name, 0) + 1
        for nxt, _ in node.next_functions:
            if nxt is not None:
                stack.append(nxt)
    return counts
