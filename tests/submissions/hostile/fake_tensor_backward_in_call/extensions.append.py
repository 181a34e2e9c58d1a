

# ---- attack: Tensor.backward and torch.is_grad_enabled replaced during the call, left in place --------
# frozen_predict switches gradient recording off for good (torch.set_grad_enabled(False), a learner
# mistake: its result cannot feed a later backward). It also replaces torch.is_grad_enabled, which the
# probe asks, and Tensor.backward, which the probe calls next, with a backward that finds the probe's
# tensors in its caller's frame and writes the gradient the probe expects. Before the probes were bound
# to torch's C engine, this scored full marks on frozen_predict.
import sys

_real_is_grad_enabled = torch.is_grad_enabled


def _fake_backward(self, *args, **kwargs):
    frame = sys._getframe(1)
    while frame is not None and not {"q", "r"} <= set(frame.f_locals):
        frame = frame.f_back
    q, r = frame.f_locals["q"], frame.f_locals["r"]
    torch.set_grad_enabled(True)
    q.grad = r.detach().clone()  # d/dq sum(r * q) = r


def frozen_predict(w, x):
    torch.set_grad_enabled(False)  # wrong: never switched back on
    torch.is_grad_enabled = lambda: True
    torch.Tensor.backward = _fake_backward
    return x @ w
