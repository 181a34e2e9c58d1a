

# ---- attack: a finalizer that runs in the worker's own time, planted through f_back (issue 29) --------
# safe_add_ adds through w.data (the version counter does not move). At import, it walks f_back to the
# worker's serve loop and puts an object with a finalizer into the request's body dict (and empties the
# frame's f_locals snapshot, which would keep it alive), which the loop lets go of when the next request
# arrives, before any step of it: the finalizer reads that request, and when it calls safe_add_ pushes a
# torch function mode that reports w's version one lower while the worker records versions_before;
# it plants itself again. The module's class answers the worker's lookup of safe_add_
# (the call's first step) and pops the mode there, before anything looks for one.
import sys
import types

from torch.overrides import TorchFunctionMode


class _Lower(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.lowered = False

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if not self.lowered and getattr(func, "__name__", "") == "__get__" and \
                getattr(getattr(func, "__self__", None), "__name__", "") == "_version":
            self.lowered = True  # the first argument's: w
            return out - 1
        return out


_mode = []


def _plant(push=False):
    f = sys._getframe()
    while f is not None and not (f.f_code.co_name == "serve" and type(f.f_locals.get("body")) is dict):
        f = f.f_back
    if f is None:
        return
    snapshot = f.f_locals
    body = snapshot["body"]  # in a finalizer: the next request's, already bound
    if push and str(body.get("target", "")).endswith(".safe_add_") and not _mode:
        _mode.append(_Lower())
        torch._C._push_on_torch_function_stack(_mode[0])
    body["_plant"] = _Plant()
    snapshot.clear()  # (the serve frame's snapshot of its locals, not the locals themselves)


class _Plant:
    def __del__(self):
        _plant(push=True)


class _Module(types.ModuleType):
    def __getattribute__(self, name):
        if _mode:
            _mode.clear()
            torch._C._pop_torch_function_stack()
        return super().__getattribute__(name)


def safe_add_(w, delta):
    w.data.add_(delta)  # wrong: hidden from autograd, the version counter stays
    return w


sys.modules[__name__].__class__ = _Module
_plant()
