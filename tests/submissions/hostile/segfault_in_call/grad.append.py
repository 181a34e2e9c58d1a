

# ---- attack: crash the interpreter in a call ---------------------------------------------------------
import ctypes


def hvp(f, x, v):
    ctypes.string_at(0)  # SIGSEGV
