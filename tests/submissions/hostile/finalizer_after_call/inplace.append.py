

# ---- attack: a finalizer that edits the worker's reply after safe_add_ returned -----------------------------
# safe_add_ adds through w.data (a learner mistake: the version counter does not move). It registers a
# finalizer on its argument delta: when the worker drops the call's arguments, after it has encoded
# the reply and before it sends it, the finalizer finds the reply among the process's objects and
# raises the version reported for w. Before the worker kept a call's objects alive until the next call,
# this scored full marks on safe_add_.
import gc
import weakref


def _raise_versions():
    for o in gc.get_objects():
        if type(o) is dict and o.get("same_as_arg") == 0 and type(o.get("version")) is int:
            o["version"] += 1


def safe_add_(w, delta):
    w.data.add_(delta)  # wrong: hidden from autograd, the version counter stays
    weakref.finalize(delta, _raise_versions)
    return w
