

# ---- attack: the execution engine replaced during backward, left in place ----------------------------
# backward gives the right first derivative but detaches the saved output (wrong second
# derivative). While the probe's first derivative runs, backward replaces Variable._execution_engine,
# the object torch's Python autograd hands every backward pass to, with one that answers the second
# derivative with the right formula and passes everything else to the real engine. Before the probes
# were bound to torch's C engine, this scored full marks on SmoothAbs.
from torch.autograd.variable import Variable

_real_engine = Variable._execution_engine
_seen = []  # x, y and grad_out (the probe's v) of the last backward


class _Engine:
    def run_backward(self, outputs, grad_outputs, *args, **kwargs):
        if _seen and type(outputs[0].grad_fn).__name__ == "DivBackward0":
            x, y, v = (t.detach() for t in _seen)
            del _seen[:]
            eps = y ** 2 - x ** 2
            return (grad_outputs[0] * v * eps / (x ** 2 + eps) ** 1.5,)
        return _real_engine.run_backward(outputs, grad_outputs, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(_real_engine, name)


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
            Variable._execution_engine = _Engine()
        return grad_out * x / y.detach(), None  # wrong second derivative: y detached
