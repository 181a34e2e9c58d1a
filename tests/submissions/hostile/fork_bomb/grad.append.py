

# ---- attack: fork bomb, bounded -------------------------------------------------------------------------
# At most 200 children, each sleeping 30 s and then exiting, so that a grader without a
# process limit cannot take the machine down. Their name (comm) is @@COMM@@, for the test to
# find survivors. Honest code otherwise: the score must be the honest one.
import ctypes
import os
import time

_honest_hvp = hvp


def _spawn(count):
    started = 0
    for _ in range(count):
        try:
            pid = os.fork()
        except OSError as exc:
            print(f"fork_bomb: fork refused after {started}: {type(exc).__name__}")
            return started
        if pid == 0:
            ctypes.CDLL(None).prctl(15, b"@@COMM@@", 0, 0, 0)  # PR_SET_NAME
            time.sleep(30)
            os._exit(0)
        started += 1
    print(f"fork_bomb: all {started} forks allowed")
    return started


def hvp(f, x, v):
    if not os.path.exists(".forked"):  # once per worker
        open(".forked", "w").close()
        _spawn(200)
    return _honest_hvp(f, x, v)
