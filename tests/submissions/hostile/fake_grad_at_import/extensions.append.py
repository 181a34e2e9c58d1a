

# ---- attack: torch.autograd.grad replaced at import -------------------------------------------------
# backward is wrong (sign(x)). At import the module replaces torch.autograd.grad twice over: the
# name in torch.autograd (the worker puts torch's names back before each call), and the function
# that name's recorder calls, through its closure cell, which no namespace check looks at. The
# fake answers any derivative of SmoothAbs's own output with the right formula. Before the probes
# were bound to torch's C engine, this scored full marks on SmoothAbs.
_real_grad = torch.autograd.grad
_inner = getattr(_real_grad, "__wrapped__", _real_grad)


def _fake_grad(outputs, inputs, grad_outputs=None, **kwargs):
    out = outputs[0] if isinstance(outputs, (tuple, list)) else outputs
    x = inputs[0] if isinstance(inputs, (tuple, list)) else inputs
    if type(out.grad_fn).__name__ == "SmoothAbsBackward" and grad_outputs is not None:
        v = grad_outputs[0] if isinstance(grad_outputs, (tuple, list)) else grad_outputs
        eps = float((out.detach() ** 2 - x.detach() ** 2).mean())
        return (v * x / torch.sqrt(x * x + eps),)
    return _inner(outputs, inputs, grad_outputs=grad_outputs, **kwargs)


for _cell in getattr(_real_grad, "__closure__", None) or ():
    if _cell.cell_contents is _inner:
        _cell.cell_contents = _fake_grad
torch.autograd.grad = _fake_grad


class SmoothAbs(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, eps):
        ctx.save_for_backward(x)
        return torch.sqrt(x * x + eps)

    @staticmethod
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * x.sign(), None  # wrong: the derivative of |x|
