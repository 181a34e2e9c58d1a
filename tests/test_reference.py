"""The reference solutions score full marks; the stubs score nothing; every score file is valid."""

import re

import pytest

from grader import catalog
from grader.host import results

from conftest import FULL_MARKS, SOLUTIONS, STUBS, lost, make_submission


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_reference_scores_full_marks(engine, seed):
    engine.options.seed = seed
    try:
        report = engine.grade(SOLUTIONS)
    finally:
        engine.options.seed = 0
    assert results.validate(report) == []
    failing = [(e["name"], t["name"], t["message"]) for e in report["exercises"] for t in e["tests"]
               if t["status"] != "passed"]
    assert failing == []
    assert report["score"] == report["max_score"] == catalog.load().max_score() == FULL_MARKS
    assert report["seed"] == seed


def test_stubs_score_zero(engine):
    report = engine.grade(STUBS)
    assert results.validate(report) == []
    assert report["score"] == 0
    assert lost(report) == {e.name for e in catalog.load().exercises}
    statuses = {t["status"] for e in report["exercises"] for t in e["tests"]}
    assert statuses == {"failed"}


def test_every_exercise_and_test_is_listed(engine):
    report = engine.grade(STUBS)
    cat = catalog.load()
    assert [e["name"] for e in report["exercises"]] == [e.name for e in cat.exercises]
    for entry, exercise in zip(report["exercises"], cat.exercises):
        assert entry["module"] == exercise.module
        assert entry["max_score"] == exercise.max_score
        names = {t["name"].split("[")[0] for t in entry["tests"]}
        assert names == {t.name for t in exercise.tests}


def test_public_only_engine_reports_public_tests(public_engine):
    report = public_engine.grade(SOLUTIONS)
    assert {t["visibility"] for e in report["exercises"] for t in e["tests"]} == {"visible"}
    assert report["score"] == report["max_score"] == catalog.load().max_score(("public",))


WRONG_VALUES = """
def hvp(f, x, v):
    return (x * v + 0.5).detach()
"""


def test_hidden_messages_show_no_values(engine, tmp_path):
    """A failing hidden test says what is wrong, never the numbers; a public one shows them."""
    source = (SOLUTIONS / "grad.py").read_text() + WRONG_VALUES
    report = engine.grade(make_submission(tmp_path / "sub", {"grad.py": source}))
    tests = [t for e in report["exercises"] if e["name"] == "hvp" for t in e["tests"]]
    hidden = [t["message"] for t in tests if t["visibility"] == "hidden" and t["status"] == "failed"]
    visible = [t["message"] for t in tests if t["visibility"] == "visible" and t["status"] == "failed"]
    assert hidden and visible
    assert all(re.search(r"-?\d+\.\d", m) is None for m in hidden), hidden
    small = [t["message"] for t in tests if t["name"] == "test_hvp_small"]
    assert small and "got [" in small[0], small
