

# ---- attack: a profile function set by forward, to rewrite what the probe returns ------------------------
# backward is wrong (sign(x)). forward installs a profile function (sys.setprofile): Python calls it on
# every call and return in this thread, the worker's own code included. When the probe returns, it
# overwrites the derivatives in the returned tensors with the right values, read from the probe's own
# frame, and removes itself. Before the worker refused sys.settrace and sys.setprofile, this scored
# full marks on SmoothAbs.
import sys


def _profile(frame, event, arg):
    if event == "return" and frame.f_code.co_name.startswith("probe_smooth_abs") and type(arg) is tuple:
        seen = frame.f_locals
        x, eps, v, u = seen["x"].detach(), seen["eps"], seen["v"], seen["u"]
        for i, right in ((1, v * x / torch.sqrt(x * x + eps)), (2, u * v * eps / (x * x + eps) ** 1.5)):
            if type(arg[i]) is torch.Tensor:
                arg[i].copy_(right)
        sys.setprofile(None)


class SmoothAbs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, eps):
        sys.setprofile(_profile)
        ctx.save_for_backward(x)
        return torch.sqrt(x * x + eps)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * x.sign(), None  # wrong: the derivative of |x|
