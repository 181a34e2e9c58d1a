"""Calls w.add_(delta) while autograd records, which raises for a leaf that requires grad."""
EXERCISE = "safe_add_"
MODULE = "inplace.py"
PUBLIC = "fail"
MISTAKE = "safe_add_.outside_no_grad"


def safe_add_(w, delta):
    w.add_(delta)
    return w
