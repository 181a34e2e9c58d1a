

# ---- attack: crash the interpreter while being imported -------------------------------------------
# (faulthandler's own null read: ctypes, the older route, is refused by the worker's audit hook)
import faulthandler

faulthandler._read_null()  # SIGSEGV
