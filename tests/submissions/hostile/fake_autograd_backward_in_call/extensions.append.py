

# ---- attack: torch.autograd.backward replaced during the call, restored after use -------------------
# frozen_predict switches gradient recording off for good (a learner mistake) and replaces
# torch.is_grad_enabled, which the probe asks, and torch.autograd.backward, which Tensor.backward
# calls, with a backward that finds the probe's tensors in its callers' frames, writes the gradient
# the probe expects and puts every real function back: after the call there is nothing left to see.
# Before the probes were bound to torch's C engine, this scored full marks on frozen_predict.
import sys

_real_is_grad_enabled = torch.is_grad_enabled
_real_backward = torch.autograd.backward


def _fake_backward(*args, **kwargs):
    torch.is_grad_enabled, torch.autograd.backward = _real_is_grad_enabled, _real_backward
    frame = sys._getframe(1)
    while frame is not None and not {"q", "r"} <= set(frame.f_locals):
        frame = frame.f_back
    q, r = frame.f_locals["q"], frame.f_locals["r"]
    torch.set_grad_enabled(True)
    q.grad = r.detach().clone()  # d/dq sum(r * q) = r


def frozen_predict(w, x):
    torch.set_grad_enabled(False)  # wrong: never switched back on
    torch.is_grad_enabled = lambda: True
    torch.autograd.backward = _fake_backward
    return x @ w
