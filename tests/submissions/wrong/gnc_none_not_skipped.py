"""Follows every entry of next_functions, including the None that marks an input without grad."""
EXERCISE = "graph_node_counts"
MODULE = "graph.py"
PUBLIC = "fail"
MISTAKE = "graph_node_counts.none_not_skipped"


def graph_node_counts(out):
    if out.grad_fn is None:
        return {}
    counts, seen, stack = {}, {out.grad_fn}, [out.grad_fn]
    while stack:
        node = stack.pop()
        counts[type(node).__name__] = counts.get(type(node).__name__, 0) + 1
        for nxt, _ in node.next_functions:
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return counts
