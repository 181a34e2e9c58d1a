

# ---- attack: crash the interpreter while being imported -------------------------------------------
import ctypes

ctypes.string_at(0)  # SIGSEGV
