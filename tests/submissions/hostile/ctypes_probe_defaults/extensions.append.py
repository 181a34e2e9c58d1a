

# ---- attack: a probe's positional default rewritten through ctypes (issue 29) -------------------------
# SmoothAbs.backward is wrong (sign(x)); at import, ctypes writes into the slot of the course probe's
# __defaults__ tuple that holds the engine's run_backward, putting in a function that answers the
# derivatives of the right SmoothAbs. The seal compared closures and keyword defaults, not __defaults__.
import ctypes
import sys

_seen = {}


class SmoothAbs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, eps):
        _seen["eps"] = eps
        ctx.save_for_backward(x)
        return torch.sqrt(x * x + eps)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * torch.sign(x), None  # wrong


def _forged_run_backward(tensors, grads, keep_graph, create_graph, inputs, allow_unreachable, accumulate):
    (x,) = inputs
    if create_graph:  # the first derivative: of the right function, with its graph
        y = torch.sqrt(x * x + _seen["eps"])
        _seen["g"] = torch.autograd.grad(y, x, grads[0], create_graph=True)[0]
        return (_seen["g"],)
    return torch.autograd.grad(_seen["g"], x, grads[0])


for _name, _module in list(sys.modules.items()):
    _derivatives = getattr(_module, "_derivatives", None) if _name.startswith("grader.sandboxed.helpers_course") else None
    if _derivatives is not None and _derivatives.__defaults__:
        _names = _derivatives.__code__.co_varnames[_derivatives.__code__.co_argcount - len(_derivatives.__defaults__):]
        _slot = _names.index("_run_backward")
        _address = id(_derivatives.__defaults__) + tuple.__basicsize__ - ctypes.sizeof(ctypes.c_void_p) + \
            ctypes.sizeof(ctypes.c_void_p) * (_slot + 1)
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(_forged_run_backward))
        ctypes.c_void_p.from_address(_address).value = id(_forged_run_backward)
