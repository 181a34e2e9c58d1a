

# ---- attack: make the worker lie about what came back -----------------------------------------------
# Wrong hvp; the worker's encoder is replaced so that whatever is returned is reported as
# the second argument v (for the public test's v = [1, 1]), and every reply the wire sends
# says the tests passed. The trusted side compares values itself, and the worker's reply
# path is sealed: a changed encoder makes every reply of this module 'tampered'.
import grader.protocol.wire
import grader.sandboxed.worker

_original_value = grader.sandboxed.worker.Encoder.value


def _lying_value(self, v, depth=0):
    if type(v) is torch.Tensor and self.args and type(self.args[-1]) is torch.Tensor:
        v = self.args[-1] * 6
    return _original_value(self, v, depth)


grader.sandboxed.worker.Encoder.value = _lying_value
_original_pack = grader.protocol.wire.pack


def _pack_with_verdict(body, blobs):
    if isinstance(body, dict):
        body = {**body, "passed": True, "score": 1.0, "verdict": "pass"}
    return _original_pack(body, blobs)


grader.protocol.wire.pack = _pack_with_verdict


def hvp(f, x, v):
    return x.new_full((x.numel() + 1,), 123.0)  # wrong: shape and values
