

# ---- attack: allocate 20 GB ------------------------------------------------------------------------------
# First try to lift the limit, then ask for 20 GB without touching it (a broken grader then
# only loses address space, never RAM), then really use memory in 128 MB steps, at most
# @@TOUCH_MB@@ MB in all, so that a grader without a limit cannot take the machine down.
import resource


def hvp(f, x, v):
    try:
        resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        print("memory_bomb: RLIMIT_AS lifted!")
    except (ValueError, OSError) as exc:
        print("memory_bomb: RLIMIT_AS stays:", type(exc).__name__)
    for what, allocate in (("torch.empty", lambda: torch.empty(5 * 2**30, dtype=torch.float32)),
                           ("bytearray", lambda: bytearray(20 * 2**30))):
        try:
            allocate()
            print(f"memory_bomb: 20 GB {what} allowed!")
        except (MemoryError, RuntimeError) as exc:
            print(f"memory_bomb: 20 GB {what} refused ({type(exc).__name__})")
    kept = []
    try:
        while len(kept) * 128 < @@TOUCH_MB@@:
            kept.append(torch.ones(2**25))  # 128 MB, written
    finally:
        print(f"memory_bomb: got {len(kept) * 128} MB before the limit")
    return x  # wrong anyway
