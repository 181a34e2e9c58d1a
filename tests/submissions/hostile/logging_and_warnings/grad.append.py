

# ---- not an attack: honest code that uses frames through the standard library (issue 29) -------------
# logging (which finds its caller with sys._getframe), warnings.warn, traceback printing (tb_frame),
# collections.namedtuple, typing.NamedTuple and enum, in calls and at import: the audit hook refuses
# what reaches the grader's own frames and objects, none of this. Honest score.
import collections
import enum
import logging
import traceback
import typing
import warnings

_log = logging.getLogger("my_grad")
logging.basicConfig(level=logging.INFO)
Point = collections.namedtuple("Point", "x y")


class Colour(enum.Enum):
    RED = 1


class Pair(typing.NamedTuple):
    a: int
    b: int


_honest_hvp = hvp


def hvp(f, x, v):
    _log.info("hvp of %s", tuple(x.shape))
    warnings.warn("hvp: computed with double backward", stacklevel=2)
    try:
        raise ValueError("a caught error, printed")
    except ValueError:
        traceback.print_exc()
        _log.exception("and logged")
    collections.namedtuple("Inner", "a b")(Point(1, 2), Pair(3, 4))
    return _honest_hvp(f, x, v)
