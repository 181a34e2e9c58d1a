

# ---- attack: exit in the middle of a call --------------------------------------------------------------
# otter-grader 7.0.0 writes no results at all for os._exit(0).
import os
import sys


def hvp(f, x, v):
    os._exit(0)


def jacobian_rows(f, x):
    sys.exit(0)
