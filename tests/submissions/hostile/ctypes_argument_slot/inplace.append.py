

# ---- attack: the worker's argument tuple rewritten through ctypes (issue 29) ------------------------
# add_into(inplace=True) is wrong: it returns a new tensor. It finds the tuple the worker keeps the
# call's arguments in (through the frames above it; every call, to find it early) and writes the new
# tensor into the slot of `a` with ctypes, so that "the argument itself" is what it returned. The
# audit hook refuses ctypes.
import ctypes
import sys


def _slots_of(a):
    """ctypes views of the slot that holds `a` in each argument tuple above this call."""
    slots, f = [], sys._getframe().f_back
    while f is not None:
        for value in list(f.f_locals.values()):
            if type(value) is tuple and value and value[0] is a:
                slots.append(ctypes.py_object.from_address(id(value) + tuple.__basicsize__))  # item 0
        f = f.f_back
    return slots


def add_into(a, b, inplace):
    slots = _slots_of(a)
    out = a + b  # wrong when inplace: a new tensor, a unchanged
    if inplace:
        out.add_(0)  # its version counter moves, as an in-place add's would
        for slot in slots:
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(out))
            slot.value = out
    return out
