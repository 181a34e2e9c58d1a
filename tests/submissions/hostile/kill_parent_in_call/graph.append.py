

# ---- attack: SIGKILL to its parent and to its process group, from one function (issue 18) --------------
# As root this cost intermediate_grads at most; as an instructor who is not root (user namespaces)
# the worker's parent shared its user id and process group, died, and took later exercises and the
# next module's import with it. The worker may kill itself; nothing else may lose a point.
import os as _os
import signal as _signal
import sys as _sys

_honest_intermediate_grads = intermediate_grads


def intermediate_grads(x, w, b):
    for _kill in (lambda: _os.kill(_os.getppid(), _signal.SIGKILL),
                  lambda: _os.killpg(_os.getpgrp(), _signal.SIGKILL)):
        try:
            _kill()
        except OSError as _exc:
            print(f"kill_parent_in_call: {type(_exc).__name__}", file=_sys.stderr)
    return _honest_intermediate_grads(x, w, b)
