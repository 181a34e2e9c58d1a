"""The seal's all-at-once comparison (`seal._unchanged`) finds every change the entry-by-entry one does.

`seal.check` answers None at once when the snapshot's digest finds everything as it was, and looks
entry by entry otherwise. Each change below is made to a small reply path of every kind the seal
covers; the answer must be the one the entries alone give (the snapshot without its digest), and
None again once the change is undone."""

import builtins
import sys
import types

import pytest

from grader.sandboxed import seal

SOURCE = '''
import os
A = object()
def plain(x):
    return x
def with_defaults(x, y=A, *, z=A):
    return x
def outer():
    full = A
    def inner():
        return full, empty
    return inner
    empty = None
closure = outer()
class Kind:
    def method(self):
        return A
    @property
    def prop(self):
        return A
TABLE = {"k": A}
'''


@pytest.fixture
def reply_path():
    module = types.ModuleType("fake_reply_path")
    exec(compile(SOURCE, "fake_reply_path.py", "exec"), module.__dict__)
    holder = types.SimpleNamespace(attr=module.A)
    snapshot = seal.take([module], {"fake_reply_path.TABLE": module.TABLE}, [("holder", holder, "attr")])
    assert snapshot[0][0] == seal.DIGEST and seal.check(snapshot) is None
    return module, holder, snapshot


def _cells(module):
    """(the cell that holds something, the empty one) of the closure."""
    cells = dict(zip(module.closure.__code__.co_freevars, module.closure.__closure__))
    return cells["full"], cells["empty"]


def changes(module, holder):
    """(what, make the change, undo it), for every kind of entry."""
    other = object()
    full, empty = _cells(module)
    defaults, kwdefaults = module.with_defaults.__defaults__, module.with_defaults.__kwdefaults__
    method = module.Kind.__dict__["method"]
    ascii_ = builtins.ascii

    def setitem(d, k, v):
        return lambda: d.__setitem__(k, v)

    return [
        ("a module's name rebound", setitem(module.__dict__, "plain", other),
         setitem(module.__dict__, "plain", module.plain)),
        ("a module's name added", setitem(module.__dict__, "added", other), lambda: module.__dict__.pop("added")),
        ("a submodule imported", setitem(module.__dict__, "sub", sys), lambda: module.__dict__.pop("sub")),
        ("a class's method replaced", lambda: type.__setattr__(module.Kind, "method", other),
         lambda: type.__setattr__(module.Kind, "method", method)),
        ("a table's value replaced", setitem(module.TABLE, "k", other), setitem(module.TABLE, "k", module.A)),
        ("a table's key added", setitem(module.TABLE, "new", other), lambda: module.TABLE.pop("new")),
        ("defaults given where there were none", lambda: setattr(module.plain, "__defaults__", (other,)),
         lambda: setattr(module.plain, "__defaults__", None)),
        ("the defaults tuple replaced", lambda: setattr(module.with_defaults, "__defaults__", (module.A,)),
         lambda: setattr(module.with_defaults, "__defaults__", defaults)),
        ("a keyword default replaced", setitem(kwdefaults, "z", other), setitem(kwdefaults, "z", module.A)),
        ("a keyword default added", setitem(kwdefaults, "w", other), lambda: kwdefaults.pop("w")),
        ("a cell's contents replaced", lambda: setattr(full, "cell_contents", other),
         lambda: setattr(full, "cell_contents", module.A)),
        ("a cell emptied", lambda: delattr(full, "cell_contents"), lambda: setattr(full, "cell_contents", module.A)),
        ("an empty cell filled", lambda: setattr(empty, "cell_contents", other),
         lambda: delattr(empty, "cell_contents")),
        ("a builtin rebound", lambda: setattr(builtins, "ascii", other), lambda: setattr(builtins, "ascii", ascii_)),
        ("a name added to builtins", lambda: setattr(builtins, "_seal_test", other),
         lambda: delattr(builtins, "_seal_test")),
        ("an attribute replaced", lambda: setattr(holder, "attr", other), lambda: setattr(holder, "attr", module.A)),
    ]


ALLOWED = {"a submodule imported", "a name added to builtins"}


def test_every_change_is_answered_as_entry_by_entry(reply_path):
    module, holder, snapshot = reply_path
    for what, change, undo in changes(module, holder):
        change()
        try:
            found, by_entries = seal.check(snapshot), seal.check(snapshot[1:])
            digest_agrees = seal._unchanged(snapshot[0])
        finally:
            undo()
        assert found == by_entries, what
        assert (found is None) == (what in ALLOWED), (what, found)
        # a name added to builtins is allowed by the digest too; any other change is looked at entry by entry
        assert digest_agrees == (what == "a name added to builtins"), what
        assert seal.check(snapshot) is None, f"{what}, undone"


def test_a_key_renamed_in_place_is_caught(reply_path):
    """Same length, the same values in the same order, one key another: the keys are compared too."""
    module, holder, snapshot = reply_path
    d = module.TABLE
    d.clear()
    d["renamed"] = module.A
    assert seal.check(snapshot) == seal.check(snapshot[1:]) == "fake_reply_path.TABLE.k"
