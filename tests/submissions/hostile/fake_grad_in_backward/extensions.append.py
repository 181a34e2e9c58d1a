

# ---- attack: torch.autograd.grad replaced during backward, restored after use ----------------------
# backward gives the right first derivative but detaches the saved output, so its own derivative
# (the second one) is wrong. While the probe's first derivative runs, backward swaps in a
# torch.autograd.grad that answers the second derivative with the right formula and puts the real
# one back: after the call there is nothing left to see. Before the probes were bound to torch's
# C engine, this scored full marks on SmoothAbs.
_real_grad = torch.autograd.grad
_seen = []  # x, y and grad_out (the probe's v) of the last backward


def _fake_grad(outputs, inputs, grad_outputs=None, **kwargs):
    torch.autograd.grad = _real_grad  # restored before the call returns
    x, y, v = (t.detach() for t in _seen)
    u = grad_outputs[0] if isinstance(grad_outputs, (tuple, list)) else grad_outputs
    eps = y ** 2 - x ** 2
    return (u * v * eps / (x ** 2 + eps) ** 1.5,)


class SmoothAbs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, eps):
        y = torch.sqrt(x * x + eps)
        ctx.save_for_backward(x, y)
        return y

    @staticmethod
    def backward(ctx, grad_out):
        x, y = ctx.saved_tensors
        if torch.is_grad_enabled():  # the probe's first derivative, taken with create_graph=True
            _seen[:] = [x, y, grad_out]
            torch.autograd.grad = _fake_grad
        return grad_out * x / y.detach(), None  # wrong second derivative: y detached
