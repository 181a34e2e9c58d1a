"""Writes a = a + b for the in-place case, which makes a new tensor and leaves the caller's a unchanged."""
EXERCISE = "add_into"
MODULE = "inplace.py"
PUBLIC = "fail"
MISTAKE = "add_into.rebind"


def add_into(a, b, inplace):
    if inplace:
        a = a + b
        return a
    return a + b
