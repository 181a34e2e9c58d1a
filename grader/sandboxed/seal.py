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
first thing that changed (all of it is compared at once first, laid end to end in the snapshot's
digest, and entry by entry only where something differs: about half the time of the entries
alone); the worker then answers "tampered" instead, with bytes it builds without any of that code,
and the trusted side scores the call 0. No student code runs between the step and the check
(`grader.sandboxed.guard`), so a change cannot be made and undone unseen.

ctypes, which could write where Python cannot, is refused by the worker's audit hook, and the reply
is built where no thread of the submission runs (`grader.sandboxed.guard`, `grader.sandboxed.worker`).
"""

from __future__ import annotations

import builtins
import sys
from itertools import chain, islice
from operator import attrgetter, is_, methodcaller
from types import FunctionType, ModuleType
from typing import is_typeddict

_MISSING = object()
MODULE, CLASS, TABLE, BUILTINS, FUNCTION, ATTRIBUTE, DIGEST = range(7)


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
    return (_digest(entries), *entries)


def _digest(entries: list[tuple]) -> tuple:
    """Everything the entries compare, laid end to end, so that `check` can compare it all at once
    with a few identity comparisons over C iterators (`_unchanged`) before it looks entry by entry:
    (DIGEST, name, the mappings held to their length, their lengths, their keys and values in order;
    builtins, its length, its first keys and values; the functions, their `__defaults__`, the defaults
    tuples, their lengths and items; the keyword-default dicts, their lengths, keys and values; the
    closure cells that held something, what they held; the cells that were empty; the attributes)."""
    mappings = [e for e in entries if e[0] in (MODULE, CLASS, TABLE)]
    builtins_entry = next(e for e in entries if e[0] == BUILTINS)
    functions = [e for e in entries if e[0] == FUNCTION]
    defaults = tuple(e[8] for e in functions if e[8])
    kws = tuple(e[2] for e in functions if e[2] is not None)
    cells = [(cell, value) for e in functions for cell, value in zip(e[5], e[6])]
    return (DIGEST, "the reply path, all of it",
            tuple(e[2] for e in mappings), tuple(len(e[3]) for e in mappings),
            tuple(chain.from_iterable(e[3] for e in mappings)), tuple(chain.from_iterable(e[4] for e in mappings)),
            builtins_entry[2], len(builtins_entry[3]), builtins_entry[3], builtins_entry[4],
            tuple(e[7] for e in functions), tuple(e[7].__defaults__ for e in functions),
            defaults, tuple(map(len, defaults)), tuple(chain.from_iterable(e[9] for e in functions if e[8])),
            kws, tuple(len(e[3]) for e in functions if e[2] is not None),
            tuple(chain.from_iterable(e[3] for e in functions if e[2] is not None)),
            tuple(chain.from_iterable(e[4] for e in functions if e[2] is not None)),
            tuple(c for c, v in cells if v is not _MISSING), tuple(v for c, v in cells if v is not _MISSING),
            tuple(c for c, v in cells if v is _MISSING),
            tuple((e[2], e[3], e[4]) for e in entries if e[0] == ATTRIBUTE))


def _unchanged(digest: tuple, _tuple=tuple, _len=len, _all=all, _map=map, _is=is_, _chain=chain.from_iterable,
               _islice=islice, _values=methodcaller("values"), _defaults=attrgetter("__defaults__"),
               _contents=attrgetter("cell_contents"), _getattr=getattr, _missing=_MISSING,
               _error=ValueError) -> bool:
    """Whether everything `_digest` laid out is as it was: every mapping of its length with the same
    keys and values in order (builtins: at least its length, the same first ones), every function's
    `__defaults__` the same tuple holding the same items, every keyword-default dict the same, every
    cell holding the same object or still empty, every attribute the same. False says only that
    something differs; `check` then looks entry by entry. Self-contained, like `check`."""
    (_, _, lives, lengths, keys, values, builtins_live, builtins_length, builtins_keys, builtins_values,
     functions, raw_defaults, defaults, default_lengths, default_items, kws, kw_lengths, kw_keys, kw_values,
     cells, contents, empty_cells, attributes) = digest
    try:
        if not (_tuple(_map(_len, lives)) == lengths and _all(_map(_is, _chain(lives), keys))
                and _all(_map(_is, _chain(_map(_values, lives)), values))):
            return False
        if not (_len(builtins_live) >= builtins_length
                and _all(_map(_is, _islice(builtins_live, builtins_length), builtins_keys))
                and _all(_map(_is, _islice(builtins_live.values(), builtins_length), builtins_values))):
            return False
        if not (_all(_map(_is, _map(_defaults, functions), raw_defaults))
                and _tuple(_map(_len, defaults)) == default_lengths
                and _all(_map(_is, _chain(defaults), default_items))):
            return False
        if not (_tuple(_map(_len, kws)) == kw_lengths and _all(_map(_is, _chain(kws), kw_keys))
                and _all(_map(_is, _chain(_map(_values, kws)), kw_values))):
            return False
        if not _all(_map(_is, _map(_contents, cells), contents)):
            return False
    except _error:  # a cell emptied since
        return False
    for cell in empty_cells:
        try:
            cell.cell_contents
            return False
        except _error:
            pass
    for obj, attr, value in attributes:
        if _getattr(obj, attr, _missing) is not value:
            return False
    return True


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
          _kinds=(MODULE, CLASS, TABLE, BUILTINS, FUNCTION, ATTRIBUTE, DIGEST), _unchanged=_unchanged) -> str | None:
    """The first name in the snapshot that is no longer bound as it was, or None.

    Everything at once first (`_unchanged`, a few identity comparisons over C iterators); only where
    something differs, entry by entry, which names the first change or finds the difference allowed
    (a submodule imported since, a name the interpreter added to builtins).

    Self-contained on purpose: it looks up no global or builtin name at run time (everything
    it uses is a default argument or a method of a built-in type), and the audit hook keeps its
    code and defaults as they are, so patching a builtin or this module's globals cannot blind
    it. Namespaces are compared by identity and position, never by looking a name up: a key of
    the student's could run code when compared."""
    module_kind, class_kind, table_kind, builtins_kind, function_kind, attribute_kind, digest_kind = _kinds
    if _len(entries) and entries[0][0] == digest_kind and _unchanged(entries[0]):
        return None
    for entry in entries:
        kind, name = entry[0], entry[1]
        if kind == digest_kind:
            continue
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
