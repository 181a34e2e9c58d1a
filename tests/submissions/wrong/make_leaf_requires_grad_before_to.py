"""Sets requires_grad before converting the dtype, so t.clone().requires_grad_().to(float64) is a non-leaf."""
EXERCISE = "make_leaf"
MODULE = "graph.py"
PUBLIC = "fail"
MISTAKE = "make_leaf.not_a_leaf"


def make_leaf(t, dtype=None, device=None):
    leaf = t.detach().clone().requires_grad_(True)
    return leaf.to(dtype=dtype or t.dtype, device=device or t.device)
