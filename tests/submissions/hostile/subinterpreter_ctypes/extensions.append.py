

# ---- attack: the same write as ctypes_probe_defaults, made by ctypes in a subinterpreter ----------------
# SmoothAbs.backward is wrong (sign(x)); at import, ctypes writes into the slot of the course probe's
# __defaults__ tuple that holds the engine's run_backward, putting in a function that answers the
# derivatives of the right SmoothAbs. The seal compared closures and keyword defaults, not __defaults__.

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
# The worker's audit hook refuses ctypes, but a Python audit hook belongs to one interpreter: a
# subinterpreter (_xxsubinterpreters, _testcapi.run_in_subinterp) has none, imports ctypes there and
# writes into this interpreter's memory (one address space).
for _name, _module in list(sys.modules.items()):
    _derivatives = getattr(_module, "_derivatives", None) if _name.startswith("grader.sandboxed.helpers_course") else None
    if _derivatives is not None and _derivatives.__defaults__:
        _names = _derivatives.__code__.co_varnames[_derivatives.__code__.co_argcount - len(_derivatives.__defaults__):]
        _slot = _names.index("_run_backward")
        _keep = [_forged_run_backward] * 8  # references the write below does not count
        import _xxsubinterpreters

        _address = id(_derivatives.__defaults__) + tuple.__basicsize__ + 8 * _slot
        _xxsubinterpreters.run_string(_xxsubinterpreters.create(),
                                      f"import ctypes\nctypes.c_void_p.from_address({_address}).value = {id(_forged_run_backward)}\n")
