

# ---- attack: fork, then use memory in every child ------------------------------------------------------
# RLIMIT_AS is per process: six children with 384 MB each stay under it one by one. Bounded:
# 2.3 GB in all, children exit after 10 s even if nobody kills them.
import os
import time


def hvp(f, x, v):
    children = []
    for _ in range(6):
        pid = os.fork()
        if pid == 0:
            kept = []
            try:
                for _ in range(12):
                    kept.append(torch.ones(2**23))  # 32 MB, written
                    time.sleep(0.05)
            except (MemoryError, RuntimeError):
                pass
            time.sleep(10)
            os._exit(0)
        children.append(pid)
    time.sleep(30)  # the grader's call timeout comes first
    return x
