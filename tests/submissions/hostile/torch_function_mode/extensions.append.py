

# ---- attack: a torch function mode left active by forward ----------------------------------------------
# backward is wrong (sign(x)). forward pushes a TorchFunctionMode: every torch call the worker's probe
# makes afterwards goes through it first, and it answers the probe's last two detach() calls (the first
# and second derivatives) with the right values, read from the probe's own frame. Before the worker
# checked for modes after each step of student code, this scored full marks on SmoothAbs.
import sys

from torch.overrides import TorchFunctionMode


def _probe_locals():
    frame = sys._getframe(1)
    while frame is not None and not {"v", "u", "eps"} <= set(frame.f_locals):
        frame = frame.f_back
    return frame.f_locals if frame is not None else None


class _Answers(TorchFunctionMode):
    detached = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        func = getattr(func, "__wrapped__", func)  # past the worker's call counter: no extra autograd calls seen
        out = func(*args, **(kwargs or {}))
        if getattr(func, "__name__", "") == "detach":
            self.detached += 1
            seen = _probe_locals()
            if seen is not None and self.detached in (2, 3):
                x, eps, v, u = seen["x"].detach(), seen["eps"], seen["v"], seen["u"]
                right = v * x / torch.sqrt(x * x + eps) if self.detached == 2 else u * v * eps / (x * x + eps) ** 1.5
                return right.to(out.dtype)
        return out


class SmoothAbs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, eps):
        if torch._C._len_torch_function_stack() == 0:
            _Answers().__enter__()
        else:
            torch._C._get_function_stack_at(0).detached = 0
        ctx.save_for_backward(x)
        return torch.sqrt(x * x + eps)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * x.sign(), None  # wrong: the derivative of |x|
