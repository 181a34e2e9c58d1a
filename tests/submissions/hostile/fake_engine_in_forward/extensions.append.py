

# ---- attack: the engine's entry point replaced during forward, restored after use -------------------
# backward is wrong (sign(x)). forward replaces torch.autograd._engine_run_backward, which
# torch.autograd.grad and backward call into, with one that answers derivatives of SmoothAbs's own
# output with the right formula; after the second derivative it puts the real one back. Before the
# probes were bound to torch's C engine, this scored full marks on SmoothAbs.
import torch.autograd.graph

_real_run = torch.autograd._engine_run_backward


def _fake_run(outputs, grad_outputs, *args, **kwargs):
    out, x = outputs[0], args[2][0] if len(args) > 2 and args[2] else None
    if type(out.grad_fn).__name__ == "SmoothAbsBackward" and x is not None:
        eps = float((out.detach() ** 2 - x.detach() ** 2).mean())
        return (grad_outputs[0] * x / torch.sqrt(x * x + eps),)
    torch.autograd._engine_run_backward = _real_run  # the second derivative: real, and the trace gone
    return _real_run(outputs, grad_outputs, *args, **kwargs)


class SmoothAbs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, eps):
        torch.autograd._engine_run_backward = _fake_run
        ctx.save_for_backward(x)
        return torch.sqrt(x * x + eps)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * x.sign(), None  # wrong: the derivative of |x|
