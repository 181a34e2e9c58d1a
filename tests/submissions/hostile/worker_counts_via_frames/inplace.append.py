

# ---- attack: a fact the worker keeps on its instance, replaced through f_back (issue 29) ---------------
# safe_add_ adds through w.data (the version counter does not move), then walks f_back from its own
# frame to the worker's `call` frame, whose f_locals hold the Worker itself (`self`), and replaces the
# count of threads it compares before building the reply with an object of its own. That comparison
# runs the object's __ge__ in the worker's own time, after the step was settled and before the seal:
# it puts the count back (the seal finds the instance as it was) and pushes a torch function mode
# that reports w's version one higher while the reply is encoded. A finalizer that the next call's
# first step runs pops the mode, before anything looks for one.
import sys

from torch.overrides import TorchFunctionMode


def _worker():
    f = sys._getframe()
    while f is not None:
        candidate = f.f_locals.get("self")
        if type(candidate).__name__ == "Worker" and "threads_at_start" in vars(candidate):
            return candidate
        f = f.f_back
    return None


class _Report(TorchFunctionMode):
    def __init__(self, target):
        super().__init__()
        self.target = target

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if getattr(func, "__name__", "") == "__get__" and args and args[0] is self.target and \
                getattr(getattr(func, "__self__", None), "__name__", "") == "_version":
            return out + 1
        return out


class _Pop:
    def __del__(self):
        torch._C._pop_torch_function_stack()


class _Count:
    def __init__(self, worker, count, target):
        self.worker, self.count, self.target = worker, count, target

    def __ge__(self, threads):
        vars(self.worker)["threads_at_start"] = self.count  # the same object, in the same place
        torch._C._push_on_torch_function_stack(_Report(self.target))
        sys.modules["grader.sandboxed.guard"].KEEP.append(_Pop())
        return True

    __le__ = __ge__


def safe_add_(w, delta):
    w.data.add_(delta)  # wrong: hidden from autograd, the version counter stays
    worker = _worker()
    if worker is not None:
        count = vars(worker)["threads_at_start"]
        if type(count) is int:
            vars(worker)["threads_at_start"] = _Count(worker, count, w)
    return w
