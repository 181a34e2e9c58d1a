

# ---- attack: a kernel for aten::clone registered with torch.library at import (issue 29) -------------
# SmoothAbs.backward is wrong (sign(x), and a second derivative of 0). At import, a CPU kernel replaces
# aten::clone: the probe copied the tensors it computed with clone, so the kernel hands back the right
# derivatives in their place, recognised by their values. The worker refuses torch.library.
import torch.library

_state = {}


class _SignTimes(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, v):
        _state["x"], _state["v"] = x.detach(), v.detach()
        ctx.save_for_backward(x)
        return v * torch.sign(x)  # wrong

    @staticmethod
    def backward(ctx, u):
        (x,) = ctx.saved_tensors
        _state["u"] = u.detach()
        return torch.zeros_like(x), u * torch.sign(x)  # wrong: the second derivative is not 0


class SmoothAbs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, eps):
        _state["eps"] = eps
        ctx.save_for_backward(x)
        return torch.sqrt(x * x + eps)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return _SignTimes.apply(x, grad_out), None


def _clone_kernel(t, memory_format=None):
    with torch._C._AutoDispatchBelowAutograd():
        out = torch.empty_like(t)
        out.copy_(t)
        x, v, u = _state.get("x"), _state.get("v"), _state.get("u")
        if x is not None and v is not None and out.shape == x.shape:
            y = torch.sqrt(x * x + _state["eps"])
            if torch.equal(out, v * torch.sign(x)):  # the probe's copy of the first derivative
                out.copy_(v * x / y)
            elif u is not None and torch.equal(out, torch.zeros_like(x)):  # of the second
                out.copy_(u * v * _state["eps"] / y ** 3)
                _state.clear()
    return out


_lib = torch.library.Library("aten", "IMPL")  # (kept: a Library that is collected takes its kernels with it)
_lib.impl("clone", _clone_kernel, "CPU")
