

# ---- attack: recurse without end -------------------------------------------------------------------------
import sys


def _down(n):
    return _down(n + 1) + 1


class _Deep:
    def __repr__(self):
        return repr(self)  # every level goes through C (the builtin repr): it uses the C stack


def hvp(f, x, v):
    return _down(0)  # RecursionError


def jacobian_rows(f, x):
    sys.setrecursionlimit(10**8)
    return repr(_Deep())  # past the C stack: SIGSEGV
