

# ---- attack: lie about a tensor's state -------------------------------------------------------------
# safe_add_ must change w in place where autograd sees it (the version counter goes up).
# w.data.add_ hides the change; the patched encoder then reports the version one higher
# for the tensor that is the argument itself. Before the reply path was sealed, this
# scored full marks on safe_add_.
import grader.sandboxed.worker

_original_tensor = grader.sandboxed.worker.Encoder.tensor


def _tensor(self, v, depth=0, with_grad=True):
    node = _original_tensor(self, v, depth, with_grad)
    if isinstance(node, dict) and "$tensor" in node and node["$tensor"].get("same_as_arg") == 0:
        node["$tensor"]["version"] += 1
    return node


grader.sandboxed.worker.Encoder.tensor = _tensor


def safe_add_(w, delta):
    w.data.add_(delta)  # wrong: hidden from autograd, the version counter stays
    return w
