"""Adds through w.data, which autograd does not see: the version counter does not move."""
EXERCISE = "safe_add_"
MODULE = "inplace.py"
PUBLIC = "fail"
MISTAKE = "safe_add_.data_trick"


def safe_add_(w, delta):
    w.data.add_(delta)
    return w
