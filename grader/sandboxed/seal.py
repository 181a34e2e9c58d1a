"""Tamper evidence for the worker's reply path.

The worker reports what student code returned, and also things only it can see: a tensor's
`requires_grad`, `grad_fn`, version counter, whether it is the argument itself. A submission
that patches the code that reports them (`grader.sandboxed.worker.Encoder.tensor`, the accessor table,
`json`'s encoder, a builtin) could make wrong code look right. Values cannot be forged this
way (the trusted side computes them itself); these attested facts could.

`take()` runs in the zygote, before any student code: it records which object every name of
the reply path's modules and classes is bound to, and each of their functions' code,
defaults and closure contents. `check()` runs in the worker before each reply and names the
first thing that changed; the worker then answers "tampered" instead, with bytes it builds
without any of that code, and the trusted side scores the call 0.

What this does not stop: a submission that writes to memory through ctypes, that answers
requests with a reply loop of its own instead of returning, or that races the reporter from a
thread. An in-process reporter is a speed bump against those; see docs in the test suite.
"""

from __future__ import annotations

import builtins
import sys
from types import FunctionType, ModuleType
from typing import is_typeddict

_MISSING = object()
MODULE, CLASS, TABLE, BUILTINS, FUNCTION, ATTRIBUTE = range(6)


def take(modules: list[ModuleType], tables: dict[str, dict], attributes: list[tuple[str, object, str]]) -> tuple:
    """A snapshot of the reply path, as nested tuples (nothing in it can be changed in place)."""
    entries: list[tuple] = []
    for module in modules:
        d = module.__dict__
        entries.append((MODULE, module.__name__, d, tuple(d.items())))
        for name, obj in list(d.items()):
            qualified = f"{module.__name__}.{name}"
            if type(obj) is FunctionType and obj.__module__ == module.__name__:
                entries.append(_function(qualified, obj))
            elif isinstance(obj, type) and obj.__module__ == module.__name__ and not is_typeddict(obj):
                # (a TypedDict is an annotation: it holds no code and no reply reads it)
                entries.append((CLASS, qualified, obj, tuple(obj.__dict__.items())))
                for attr, member in obj.__dict__.items():
                    # the class's own functions; another module's (an enum's machinery) are bound
                    # by the class entry, and checked where that module is on the reply path
                    for f in _functions_of(member):
                        if f.__module__ == module.__name__:
                            entries.append(_function(f"{qualified}.{attr}", f))
    for name, table in tables.items():
        entries.append((TABLE, name, table, tuple(table.items())))
    entries.append((BUILTINS, "builtins", builtins.__dict__, tuple(builtins.__dict__.items())))
    for name, obj, attr in attributes:
        entries.append((ATTRIBUTE, name, obj, attr, getattr(obj, attr)))
    return tuple(entries)


def _functions_of(member) -> list[FunctionType]:
    if type(member) in (staticmethod, classmethod):
        member = member.__func__
    if type(member) is property:
        return [f for f in (member.fget, member.fset, member.fdel) if type(f) is FunctionType]
    return [member] if type(member) is FunctionType else []


def _function(name: str, f: FunctionType) -> tuple:
    kw = f.__kwdefaults__
    return (FUNCTION, name, f, f.__code__, f.__defaults__, kw, None if kw is None else tuple(kw.items()),
            tuple(_cell(c) for c in f.__closure__ or ()))


def _cell(cell) -> object:
    try:
        return cell.cell_contents
    except ValueError:
        return _MISSING


def check(entries: tuple, _type=type, _Module=ModuleType, _getattr=getattr, _missing=_MISSING, _zip=zip,
          _str=str, _kinds=(MODULE, CLASS, TABLE, BUILTINS, FUNCTION, ATTRIBUTE)) -> str | None:
    """The first name in the snapshot that is no longer bound as it was, or None.

    Self-contained on purpose: it looks up no global or builtin name at run time (everything
    it uses is a default argument or a method of a built-in type), so patching a builtin or
    this module's globals cannot blind it. The worker checks that its code and defaults are
    the ones recorded before it calls it."""
    module_kind, class_kind, table_kind, builtins_kind, function_kind, attribute_kind = _kinds
    for entry in entries:
        kind, name = entry[0], entry[1]
        if kind == function_kind:
            f, code, defaults, kw, kw_items, cells = entry[2], entry[3], entry[4], entry[5], entry[6], entry[7]
            if f.__code__ is not code or f.__defaults__ is not defaults or f.__kwdefaults__ is not kw:
                return name
            if kw is not None:
                if kw.__len__() != kw_items.__len__():
                    return name
                for key, value in kw_items:
                    if kw.get(key, _missing) is not value:
                        return name
            closure = f.__closure__ or ()
            if closure.__len__() != cells.__len__():
                return name
            for cell, contents in _zip(closure, cells):
                try:
                    if cell.cell_contents is not contents:
                        return name
                except ValueError:
                    if contents is not _missing:
                        return name
            continue
        if kind == attribute_kind:
            if _getattr(entry[2], entry[3], _missing) is not entry[4]:
                return name + "." + entry[3]
            continue
        live = entry[2].__dict__ if kind == class_kind else entry[2]
        items = entry[3]
        for key, value in items:
            if live.get(key, _missing) is not value:
                return name + "." + _str(key)
        if kind == builtins_kind or live.__len__() == items.__len__():
            continue
        if kind != module_kind:
            return name + ": a name was added"
        known = {}
        for key, value in items:
            known[key] = value
        for key, value in live.items():
            # a submodule imported later, or a registry the interpreter adds, is no change
            if known.get(key, _missing) is _missing and not (key.startswith("__") and key.endswith("__")) \
                    and _type(value) is not _Module:
                return name + "." + _str(key)
    return None


def reply_path_modules() -> list[ModuleType]:
    """The modules whose code and names build a reply: the grader's own, and json's encoder."""
    import json.encoder

    names = sorted(n for n in sys.modules if n == "grader" or n.startswith("grader."))
    return [sys.modules[n] for n in names] + [sys.modules["json"], json.encoder]
