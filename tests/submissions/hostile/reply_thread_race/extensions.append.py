

# ---- attack: a thread rewrites the reply while the worker encodes it (issue 29) ----------------------
# frozen_predict is wrong: its result keeps its graph (requires_grad, a grad_fn). In its first call it
# keeps the frames above it (the worker's); a thread then reads their locals over and over and, where
# it finds the reply being built, rewrites what the worker attests to what a right frozen_predict
# gives (requires_grad off, no grad_fn, a leaf) while it is encoded. Some runs it wins. The worker
# builds the reply in a copy of itself that has none of the submission's threads.
import sys
import threading

_frames = []


def _rewrite(node):
    if type(node) is dict:
        tensor = node.get("$tensor")
        if type(tensor) is dict and tensor.get("grad_fn") == "MmBackward0":
            tensor.update(requires_grad=False, grad_fn=None, is_leaf=True)
        for value in list(node.values()):
            _rewrite(value)
    elif type(node) in (list, tuple):
        for value in list(node):
            _rewrite(value)


def _race():
    while True:
        sys.setswitchinterval(1e-6)  # (the worker resets it after each step: set again, all the time)
        for f in list(_frames):
            try:
                for value in list(f.f_locals.values()):
                    if type(value) is dict and ("value" in value or "$tensor" in value):
                        _rewrite(value)
            except Exception:  # noqa: BLE001  (the frame moved on)
                pass


def frozen_predict(w, x):
    if not _frames:
        f = sys._getframe().f_back
        while f is not None:
            _frames.append(f)
            f = f.f_back
        threading.Thread(target=_race, daemon=True).start()
    return x @ w  # wrong: with its graph
