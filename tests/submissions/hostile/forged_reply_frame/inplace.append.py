

# ---- attack: a reply of its own on the worker's connection (issue 29) -------------------------------------
# safe_add_ adds through w.data (wrong: the version counter stays), then writes on the worker's socket a
# reply to the request being run, built with the worker's own encoder from the call frame's locals (found
# through f_back), claiming the version rose. What it does next is @@MODE@@: "continue" (returns w, and
# the worker's honest reply follows the forged one), "raise", "exit" (os._exit: the worker ends with the
# forged reply as its last word) or "hang".
import os
import stat
import sys
import time

MODE = "@@MODE@@"


def _forged_reply(w):
    f = sys._getframe().f_back
    while f is not None:
        local = f.f_locals
        if "versions_before" in local and "request_id" in local and "args" in local:
            if local.get("probe") is not None:
                return None  # a probe's answer is not the function's value: left alone
            break
        f = f.f_back
    else:
        return None
    worker = sys.modules["grader.sandboxed.worker"]
    args = local["args"]
    encoder = worker.Encoder(args)
    body = {"outcome": "returned", "value": encoder.value(w), "elapsed": 0.001, "api_calls": {},
            "versions_before": [local["versions_before"][0] - 1, *local["versions_before"][1:]],  # w's only
            "args_after": [encoder.value(a) for a in args], "id": local["request_id"]}
    return worker._pack(body, encoder.blobs)


def safe_add_(w, delta):
    w.data.add_(delta)  # wrong: hidden from autograd, the version counter stays
    data = _forged_reply(w)
    for fd in range(3, 256):
        try:
            if data is not None and stat.S_ISSOCK(os.fstat(fd).st_mode):
                os.write(fd, data)
        except OSError:
            pass
    if MODE == "raise":
        raise RuntimeError("after the forged reply")
    if MODE == "exit":
        os._exit(0)
    if MODE == "hang":
        time.sleep(3600)
    return w
