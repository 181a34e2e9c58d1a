"""The hidden tests' right answers are computed once per class and reused (grader.cases.kit.answer)."""

from __future__ import annotations

import torch

from grader.cases.hidden import oracle
from grader.cases.kit import answer

from conftest import SOLUTIONS, STUBS, TEST_COURSE


def test_an_answer_is_computed_once_per_input_and_each_caller_gets_its_own_copy():
    calls = []

    @answer
    def doubled(x, factor: float = 2.0):
        calls.append(1)
        return {"y": x * factor}

    x = torch.arange(3.0)
    first = doubled(x)
    first["y"].add_(100)  # a caller that mutates its answer changes no one else's
    again = doubled(x.clone().requires_grad_(True))
    assert len(calls) == 1
    assert torch.equal(again["y"], torch.tensor([0.0, 2.0, 4.0]))
    doubled(x + 1)
    doubled(x, factor=3.0)
    doubled(x.to(torch.float64))
    assert len(calls) == 4


def test_an_answer_refuses_an_argument_it_cannot_tell_apart_by_value():
    @answer
    def f(x):
        return x

    try:
        f(object())
    except TypeError as exc:
        assert "object" in str(exc)
    else:
        raise AssertionError("an object of unknown kind was accepted as part of an answer's key")


def test_grading_a_class_reuses_the_oracle_answers():
    """The hidden inputs are the same for every submission, so their answers are computed once. (A
    counterexample search draws fresh inputs on purpose, and is off here: the stubs' one started
    exercise would search.)"""
    from grader.host.runner import Engine, Options

    engine = Engine(Options(seed=0, course=TEST_COURSE, counterexamples=False))
    try:
        _reuses_the_oracle_answers(engine)
    finally:
        engine.close()


def _reuses_the_oracle_answers(engine):
    engine.grade(SOLUTIONS)
    kept = {name: len(getattr(oracle, name).kept) for name in dir(oracle) if hasattr(getattr(oracle, name), "kept")}
    assert sum(kept.values()) > 0
    assert engine.grade(STUBS)["score"] == 0
    after = {name: len(getattr(oracle, name).kept) for name in kept}
    assert after == kept  # the second submission drew the same inputs: nothing was computed again
