

# ---- attack: torch.autograd.Function.apply rewritten at import -----------------------------------------
# backward is wrong (sign(x)). At import the code of torch.autograd.Function.apply itself is
# swapped (the name in the class stays the same object, so putting names back changes nothing):
# for SmoothAbs it computes sqrt(x ** 2 + eps) with plain torch operations, whose derivatives torch
# knows, so the student's backward is never used. Before the probes were bound to torch's C engine,
# this scored full marks on SmoothAbs.
_apply = torch.autograd.Function.__dict__["apply"].__func__


class _Rewritten(torch.autograd.Function):
    @classmethod
    def apply(cls, *args, **kwargs):
        if cls.__name__ == "SmoothAbs":
            x, eps = args
            return torch.sqrt(x * x + eps)
        return super().apply(*args, **kwargs)


_apply.__code__ = _Rewritten.__dict__["apply"].__func__.__code__


class SmoothAbs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, eps):
        ctx.save_for_backward(x)
        return torch.sqrt(x * x + eps)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * x.sign(), None  # wrong: the derivative of |x|
