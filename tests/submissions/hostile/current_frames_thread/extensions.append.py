

# ---- attack: the probe's saved first derivative rewritten from a thread's sys._current_frames (issue 29)
# SmoothAbs is wrong: forward by 1, backward sign(x), differentiable by a Function of its own, whose
# backward (the probe's second pass) gives the right second derivative and starts a thread that reads
# the main thread's frames with sys._current_frames() and walks up to the probe's frame, to copy the
# right forward and first derivative into the tensors the probe kept from its previous steps. The
# audit hook refuses sys._current_frames, in any thread.
import sys


def _frames():
    import threading

    main, found = threading.get_ident(), []
    worker = threading.Thread(target=lambda: found.append(sys._current_frames()[main]))
    worker.start()
    worker.join()
    f = found[0] if found else None
    while f is not None:
        yield f
        f = f.f_back


class _SignTimes(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, v, eps):
        ctx.save_for_backward(x, v)
        ctx.eps = eps
        return v * torch.sign(x)  # wrong: sign(x), not x / sqrt(x^2 + eps)

    @staticmethod
    def backward(ctx, u):
        x, v = ctx.saved_tensors
        y = torch.sqrt(x * x + ctx.eps)
        wrong = {"forward": (y + 1).detach(), "first": (v * torch.sign(x)).detach()}
        right = {"forward": y.detach(), "first": (v * x / y).detach()}
        fixed = set()
        for f in _frames():
            for value in list(f.f_locals.values()):
                for key in wrong:
                    if type(value) is torch.Tensor and value.shape == x.shape and not value.requires_grad \
                            and torch.equal(value, wrong[key]):
                        value.copy_(right[key])  # what the probe kept from its earlier steps
                        fixed.add(key)
        if len(fixed) < 2:  # nothing to gain: all of it wrong
            return torch.zeros_like(x), torch.zeros_like(v), None
        return u * v * ctx.eps / y ** 3, u * x / y, None


class SmoothAbs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, eps):
        ctx.save_for_backward(x)
        ctx.eps = eps
        return torch.sqrt(x * x + eps) + 1  # wrong by 1: put right by the attack

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return _SignTimes.apply(x, grad_out, ctx.eps), None
