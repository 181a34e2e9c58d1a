"""Lazy answers, generated from the reference: code that does no work but answers in the right shape.

Each module is the reference's source followed by a wrapper that replaces every exercise's function
(and the forward and backward of an exercise that is an `autograd.Function`) by one that calls the
reference on copies of the arguments, only to learn the structure of the answer, and returns that
structure filled with

- `zeros`, `ones`, `random`: zeros, ones or random values (tensors keep their shape, dtype, device and
  requires_grad; dict keys and tuple lengths stay; ints and floats become 0, 1 or random numbers);
- `public`: the reference's own answer when every tensor argument holds only multiples of 1/8 (the
  public tests' and the docstrings' inputs are such small, round numbers; the hidden tests' random
  inputs never are), zeros otherwise: a fixed answer that fits the public inputs and nothing else.

None of them may earn a point (docs/scoring.md): `grader validate` checks it.
"""

from __future__ import annotations

from grader.catalog import Catalog

MODES = ("zeros", "ones", "random", "public")

WRAPPER = '''

# ---- lazy wrapper (tests/lazy_submissions.py): the answer's structure, none of its values ----
import random as _random

import torch as _torch

_MODE = {mode!r}
_RNG = _random.Random(0)


def _fill(t):
    if _MODE in ("zeros", "public"):
        v = _torch.zeros_like(t, requires_grad=False)
    elif _MODE == "ones":
        v = _torch.ones_like(t, requires_grad=False)
    else:
        v = _torch.rand(t.shape, dtype=t.dtype if t.is_floating_point() else _torch.float64).to(t.device, t.dtype)
    v = v.detach()
    return v.requires_grad_(True) if t.requires_grad and t.is_floating_point() else v


def _number(x):
    if _MODE in ("zeros", "public"):
        return type(x)(0)
    if _MODE == "ones":
        return type(x)(1)
    return _RNG.randint(0, 20) if type(x) is int else _RNG.random()


def _map(value):
    if isinstance(value, _torch.Tensor):
        return _fill(value)
    if type(value) is dict:
        return {{k: _map(v) for k, v in value.items()}}
    if type(value) in (list, tuple):
        return type(value)(_map(v) for v in value)
    if type(value) in (int, float):
        return _number(value)
    return value


def _copy(value):
    if isinstance(value, _torch.Tensor) and value.grad_fn is None:
        return value.detach().clone().requires_grad_(value.requires_grad)
    if type(value) is list:
        return [_copy(v) for v in value]
    return value


def _tensors(value):
    if isinstance(value, _torch.Tensor):
        yield value
    elif type(value) in (list, tuple):
        for v in value:
            yield from _tensors(v)


def _public(args):
    tensors = [t.detach() for a in args for t in _tensors(a)]
    return bool(tensors) and all(bool(((t.double() * 8) == (t.double() * 8).round()).all()) for t in tensors)


def _lazy(reference, role=None):
    """role "forward"/"backward": a Function's methods; backward answers as its forward was answered
    (a double backward calls it again with gradients that are no round numbers)."""
    def lazy(*args, **kwargs):
        if role == "backward":
            public = getattr(args[0], "lazy_public", False)
        else:
            public = _public(list(args) + list(kwargs.values()))
            if role == "forward":
                args[0].lazy_public = public
        if _MODE == "public" and public:
            return reference(*args, **kwargs)
        return _map(reference(*[_copy(a) for a in args], **{{k: _copy(v) for k, v in kwargs.items()}}))
    return lazy


for _name in {names!r}:
    _target = globals()[_name]
    if isinstance(_target, type) and issubclass(_target, _torch.autograd.Function):
        _target.forward = staticmethod(_lazy(_target.forward, "forward"))
        _target.backward = staticmethod(_lazy(_target.backward, "backward"))
    else:
        globals()[_name] = _lazy(_target)
'''


def lazy_modules(course: Catalog, mode: str) -> dict[str, str]:
    """Module file name -> source of the lazy submission `mode`, made from the course's reference."""
    if mode not in MODES:
        raise ValueError(f"unknown lazy mode {mode!r}: one of {', '.join(MODES)}")
    solutions = course.place("solutions")
    return {module: (solutions / module).read_text(encoding="utf-8")
            + WRAPPER.format(mode=mode, names=list(course.exercises_in(module)))
            for module in course.modules}
