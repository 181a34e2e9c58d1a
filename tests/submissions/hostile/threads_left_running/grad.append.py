

# ---- attack: threads that keep running after the call returned ------------------------------------------
# A busy thread, one that keeps changing the module's globals and the arguments it kept,
# one that prints: none of it may change what the calls report. Honest results otherwise.
import threading
import time

_honest_hvp = hvp
_kept = []  # tensors of calls whose replies were already sent
_pending = []  # this call's arguments, handed over when the next call starts


def _spin():
    while True:  # busy, in bursts: a thread that holds the GIL for good only makes its own calls slow
        for _ in range(2000):
            _kept.append(len(_kept))
            del _kept[:-10]
        time.sleep(0.001)


def _scribble():
    while True:
        for t in list(_kept):
            if type(t) is torch.Tensor:
                t.add_(1.0)  # tensors handed to hvp, after hvp returned
        time.sleep(0.001)


def hvp(f, x, v):
    _kept.extend(_pending)
    _pending[:] = [x, v]
    result = _honest_hvp(f, x, v)
    if threading.active_count() < 4:
        for target in (_spin, _scribble):
            threading.Thread(target=target, daemon=True).start()
    return result
