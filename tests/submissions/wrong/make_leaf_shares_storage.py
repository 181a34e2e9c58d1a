"""Uses t.detach().to(...) without a copy, which returns a view of t's own storage when nothing needs converting."""
EXERCISE = "make_leaf"
MODULE = "graph.py"
PUBLIC = "fail"
MISTAKE = "make_leaf.shares_storage"


def make_leaf(t, dtype=None, device=None):
    return t.detach().to(dtype=dtype or t.dtype, device=device or t.device).requires_grad_(True)
