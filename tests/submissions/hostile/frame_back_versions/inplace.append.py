

# ---- attack: lower the recorded version through the caller's frames (issue 29) -----------------------
# safe_add_ adds through w.data (the version counter does not move), then walks sys._getframe().f_back
# up to the worker's `call` frame and lowers the version it recorded for w before the call.
import sys


def safe_add_(w, delta):
    w.data.add_(delta)  # wrong: hidden from autograd, the version counter stays
    f = sys._getframe().f_back
    while f is not None:
        before = f.f_locals.get("versions_before")
        if type(before) is list and before and type(before[0]) is int:
            before[0] -= 1
        f = f.f_back
    return w
