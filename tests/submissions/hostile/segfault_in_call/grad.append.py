

# ---- attack: crash the interpreter in a call ---------------------------------------------------------
# (faulthandler's own null read: ctypes, the older route, is refused by the worker's audit hook)
import faulthandler


def hvp(f, x, v):
    faulthandler._read_null()  # SIGSEGV
