"""Tamper evidence for the worker's reply path.

The worker reports what student code returned, and also things only it can see: a tensor's
`requires_grad`, `grad_fn`, version counter, whether it is the argument itself. A submission
that patches the code that reports them (`grader.sandboxed.worker.Encoder.tensor`, the accessor table,
`json`'s encoder, a builtin) could make wrong code look right. Values cannot be forged this
way (the trusted side computes them itself); these attested facts could.

`take()` runs before any student code: it records which object every name of the reply path's
modules and classes is bound to, in order, what the worker's own tables and state hold, and
what their functions' closures, keyword defaults and positional defaults hold, item by item (their
code and defaults cannot be rebound:
the worker's audit hook refuses, see `grader.sandboxed.guard`). `check()` runs after the last
step of student code of each import and call, before the worker encodes anything, and names the
first thing that changed; the worker then answers "tampered" instead, with bytes it builds
without any of that code, and the trusted side scores the call 0. No student code runs between
the step and the check (`grader.sandboxed.guard`), so a change cannot be made and undone unseen.

ctypes, which could write where Python cannot, is refused by the worker's audit hook, and the reply
is built where no thread of the submission runs (`grader.sandboxed.guard`, `grader.sandboxed.worker`).
"""

from __future__ import annotations

import builtins
import sys
from operator import is_
from types import FunctionType, ModuleType
from typing import is_typeddict

_MISSING = object()
MODULE, CLASS, TABLE, BUILTINS, FUNCTION, ATTRIBUTE = range(6)


def take(modules: list[ModuleType], tables: dict[str, dict], attributes: list[tuple[str, object, str]]) -> tuple:
    """A snapshot of the reply path, as nested tuples (nothing in it can be changed in place)."""
    entries: list[tuple] = []
    for module in modules:
        d = module.__dict__
        entries.append(_mapping(MODULE, module.__name__, d))
        for name, obj in list(d.items()):
            qualified = f"{module.__name__}.{name}"
            if type(obj) is FunctionType and obj.__module__ == module.__name__:
                entries.append(_function(qualified, obj))
            elif isinstance(obj, type) and obj.__module__ == module.__name__ and not is_typeddict(obj):
                # (a TypedDict is an annotation: it holds no code and no reply reads it)
                entries.append(_mapping(CLASS, qualified, obj.__dict__))
                for attr, member in obj.__dict__.items():
                    # the class's own functions; another module's (an enum's machinery) are bound
                    # by the class entry, and checked where that module is on the reply path
                    for f in _functions_of(member):
                        if f.__module__ == module.__name__:
                            entries.append(_function(f"{qualified}.{attr}", f))
    for name, table in tables.items():
        entries.append(_mapping(TABLE, name, table))
    entries.append(_mapping(BUILTINS, "builtins", builtins.__dict__))
    for name, obj, attr in attributes:
        entries.append((ATTRIBUTE, name, obj, attr, getattr(obj, attr)))
    return tuple(entries)


def _mapping(kind: int, name: str, live) -> tuple:
    """A dict (or a class's mapping proxy) with its keys and values in order."""
    return kind, name, live, tuple(live), tuple(live.values())


def _functions_of(member) -> list[FunctionType]:
    if type(member) in (staticmethod, classmethod):
        member = member.__func__
    if type(member) is property:
        return [f for f in (member.fget, member.fset, member.fdel) if type(f) is FunctionType]
    return [member] if type(member) is FunctionType else []


def _function(name: str, f: FunctionType) -> tuple:
    kw = f.__kwdefaults__
    cells = f.__closure__ or ()
    defaults = f.__defaults__ or ()  # the tuple itself and its items: ctypes can write into a tuple's slots
    return (FUNCTION, name, kw, () if kw is None else tuple(kw), () if kw is None else tuple(kw.values()),
            cells, tuple(_cell(c) for c in cells), f, defaults, tuple(list(defaults)))  # (a copy: tuple(t) is t)


def _cell(cell) -> object:
    try:
        return cell.cell_contents
    except ValueError:
        return _MISSING


def check(entries: tuple, _type=type, _Module=ModuleType, _getattr=getattr, _missing=_MISSING, _zip=zip,
          _str=str, _tuple=tuple, _len=len, _all=all, _map=map, _is=is_, _range=range,
          _kinds=(MODULE, CLASS, TABLE, BUILTINS, FUNCTION, ATTRIBUTE)) -> str | None:
    """The first name in the snapshot that is no longer bound as it was, or None.

    Self-contained on purpose: it looks up no global or builtin name at run time (everything
    it uses is a default argument or a method of a built-in type), and the audit hook keeps its
    code and defaults as they are, so patching a builtin or this module's globals cannot blind
    it. Namespaces are compared by identity and position, never by looking a name up: a key of
    the student's could run code when compared."""
    module_kind, class_kind, table_kind, builtins_kind, function_kind, attribute_kind = _kinds
    for entry in entries:
        kind, name = entry[0], entry[1]
        if kind == function_kind:
            kw, kw_keys, kw_values, cells, contents = entry[2], entry[3], entry[4], entry[5], entry[6]
            defaults, items = entry[8], entry[9]
            if (entry[7].__defaults__ or ()) is not defaults or _len(defaults) != _len(items) or \
                    not _all(_map(_is, defaults, items)):
                return name + " (its __defaults__)"
            if kw is not None and not (_len(kw) == _len(kw_keys) and _all(_map(_is, _tuple(kw), kw_keys))
                                       and _all(_map(_is, _tuple(kw.values()), kw_values))):
                return name
            for cell, value in _zip(cells, contents):
                try:
                    if cell.cell_contents is not value:
                        return name
                except ValueError:
                    if value is not _missing:
                        return name
            continue
        if kind == attribute_kind:
            if _getattr(entry[2], entry[3], _missing) is not entry[4]:
                return name + "." + entry[3]
            continue
        live, keys, values = entry[2], entry[3], entry[4]
        now_keys, now_values = _tuple(live), _tuple(live.values())
        n = _len(keys)
        if _len(now_keys) < n or not (_all(_map(_is, now_keys, keys)) and _all(_map(_is, now_values, values))):
            for i in _range(n):  # names the first change
                if i >= _len(now_keys) or now_keys[i] is not keys[i] or now_values[i] is not values[i]:
                    return name + "." + keys[i] if _type(keys[i]) is _str else name
            return name
        if _len(now_keys) == n or kind == builtins_kind:  # (the interpreter adds builtins._ in doctest mode)
            continue
        if kind != module_kind:
            return name + ": a name was added"
        for key, value in _zip(now_keys[n:], now_values[n:]):
            # a submodule imported later, or a registry the interpreter adds, is no change
            if not (_type(key) is _str and (_type(value) is _Module or (key.startswith("__") and key.endswith("__")))):
                return name + "." + key if _type(key) is _str else name + ": a name was added"
    return None


def reply_path_modules() -> list[ModuleType]:
    """The modules whose code and names build a reply: the grader's own, and json's encoder."""
    import json.encoder

    names = sorted(n for n in sys.modules if n == "grader" or n.startswith("grader."))
    return [sys.modules[n] for n in names] + [sys.modules["json"], json.encoder]
