"""The guard's fast paths answer as its slow paths do (`grader.sandboxed.guard`).

Run in this process, without a worker: the audit hook's function is called directly (it is never
installed here), and torch's namespaces are changed and put back by `restore_namespaces`."""

import pytest
import torch

from grader.sandboxed import guard


@pytest.fixture
def refusals():
    guard.REFUSALS.clear()
    yield guard.REFUSALS
    guard.REFUSALS.clear()


def test_the_events_let_through_first_are_none_the_hook_refuses(refusals):
    """`_UNCHECKED` is looked up before every branch: an event a branch refuses must never be in it."""
    for event in guard._UNCHECKED:
        assert event not in guard._VETOED and event not in guard._REFUSED
        assert not event.startswith(("sys.monitoring", "ctypes."))
        assert event not in ("sys._getframe", "object.__getattr__", "object.__setattr__", "import")
        guard._audit(event, ())
    assert refusals == []


@pytest.mark.parametrize("event, args", [
    ("ctypes.string_at", (0, 1)), ("sys.settrace", (None,)), ("gc.get_objects", ()),
    ("object.__getattr__", (iter(()), "gi_frame")), ("sys.monitoring.register_callback", ()),
    ("cpython.PyInterpreterState_New", ()), ("import", ("_xxsubinterpreters", None, [], [], [])),
    ("import", ("_testcapi", None, [], [], [])), ("import", ("_testinternalcapi", None, [], [], [])),
])
def test_what_the_hook_refused_it_still_refuses(refusals, event, args):
    with pytest.raises(RuntimeError, match="refused"):
        guard._audit(event, args)
    assert len(refusals) == 1


def test_object_getattr_of_a_plain_attribute_is_let_through(refusals):
    guard._audit("object.__getattr__", (test_object_getattr_of_a_plain_attribute_is_let_through, "__code__"))
    assert refusals == []


def test_restore_namespaces_puts_back_what_changed_and_nothing_else():
    saved = guard.take_namespaces()
    original = torch.allclose
    assert guard.restore_namespaces(saved) is None
    torch.allclose = lambda *a, **k: True
    torch.autograd.extra_name_for_the_test = 1
    torch.Tensor.extra_name_for_the_test = 2
    try:
        assert guard.restore_namespaces(saved) is None
        assert torch.allclose is original
        assert not hasattr(torch.autograd, "extra_name_for_the_test")
        assert not hasattr(torch.Tensor, "extra_name_for_the_test")
        assert all(tuple(space) == keys and all(map(lambda a, b: a is b, space.values(), values))
                   for _, _, space, keys, values in saved)
    finally:
        torch.allclose = original
        for owner in (torch.autograd, torch.Tensor):
            if hasattr(owner, "extra_name_for_the_test"):
                delattr(owner, "extra_name_for_the_test")


def test_restore_namespaces_refuses_a_key_that_is_not_a_str():
    saved = guard.take_namespaces()
    vars(torch.linalg)[1] = "a key of another type"
    try:
        assert guard.restore_namespaces(saved) == "torch.linalg: a name that is not a str"
    finally:
        del vars(torch.linalg)[1]
    assert guard.restore_namespaces(saved) is None


def test_importing_other_modules_is_let_through(refusals):
    for name in ("torch", "math", "_collections_abc", "numpy.linalg", "test_mine", "testcapi"):
        guard._audit("import", (name, None, [], [], []))
    assert refusals == []
