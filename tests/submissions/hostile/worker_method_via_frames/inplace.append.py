

# ---- attack: the worker's own method shadowed on its instance, found through f_back (issue 29) ---------
# safe_add_ adds through w.data (the version counter does not move), then walks f_back from its own
# frame (sys._getframe() returns the submission's frame: allowed) to the worker's `call` frame, whose
# f_locals hold the Worker itself (`self`). An instance attribute shadows the class's method that checks
# the seal and builds the reply: the shadow takes itself out of the instance, so that the seal finds the
# worker's state as it was, calls the real method, reports w's version one higher, and puts itself back.
# Where the class has no such method, the first of its reply methods it has is shadowed the same way.
import sys

_pending = []  # the calls of safe_add_ whose reply is to be bent


def _worker():
    f = sys._getframe()
    while f is not None:
        candidate = f.f_locals.get("self")
        if type(candidate).__name__ == "Worker" and "threads_at_start" in vars(candidate):
            return candidate
        f = f.f_back
    return None


def _shadow(worker):
    state = vars(worker)
    names = [n for n in ("_checked_reply", "_returned", "_reply") if hasattr(type(worker), n)]
    if not names or names[0] in state:
        return
    name = names[0]
    original = getattr(worker, name)

    def checked(*args, **kwargs):
        state.pop(name, None)  # the seal finds the instance as it was taken
        answer = original(*args, **kwargs)
        state[name] = checked
        if _pending and type(answer) is tuple and type(answer[0]) is dict:
            _pending.clear()
            value = answer[0].get("value")
            if type(value) is dict and "$tensor" in value:
                value["$tensor"]["version"] += 1
        return answer

    state[name] = checked


def safe_add_(w, delta):
    w.data.add_(delta)  # wrong: hidden from autograd, the version counter stays
    worker = _worker()
    if worker is not None:
        _shadow(worker)
        _pending.append(True)
    return w
