

# ---- false negative: a dict subclass as the answer (issue 29) ----------------------------------------
# exercises/graph.py says graph_node_counts returns a dict[str, int]; a collections.Counter is one. It must be
# judged as the plain dict of its items, not refused as "not a plain dict".
import collections

_reference_graph_node_counts = graph_node_counts


def graph_node_counts(out):
    return collections.Counter(_reference_graph_node_counts(out))
