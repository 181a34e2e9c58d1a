"""No points without work (docs/scoring.md): lazy submissions score 0, the rule of the
course file withholds what a test earns on its own, and the hidden tests decide on random inputs.
The lazy submissions (grader/validate/lazy.py) are graded by `grader validate` (the `validated` fixture)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from grader import catalog
from grader.host import results, scoring
from grader.host.runner import Options, grade_many

from grader.validate.lazy import MODES, lazy_modules

from conftest import make_submission


@pytest.fixture(scope="module")
def lazy(validated, tmp_path_factory):
    """lazy(mode): the score file `grader validate` wrote; lazy("public", "check"): graded as `grader check` does."""
    folder = make_submission(tmp_path_factory.mktemp("lazy") / "lazy-public", lazy_modules(catalog.load(), "public"))
    check = grade_many([str(folder)], folder.parent / "check", Options(seed=0, folders=("public",)))
    return lambda mode, kind="grade": validated.report(f"lazy-{mode}") if kind == "grade" else check.reports[0]


@pytest.mark.parametrize("mode", MODES)
def test_a_lazy_submission_scores_zero_on_every_exercise(lazy, mode):
    report = lazy(mode)
    assert results.validate(report) == []
    assert report.get("submission_errors", []) == []
    earned = {e["name"]: e["score"] for e in report["exercises"] if e["score"]}
    assert earned == {}, f"lazy_{mode} earned points: {earned}"


def test_fixed_answers_for_the_public_inputs_pass_grader_check_and_earn_nothing(lazy):
    """The hidden tests decide: answers hard-coded for the public tests' and the docstrings' inputs pass
    every public check of every exercise, and score 0 once the hidden tests run."""
    check = lazy("public", "check")
    failing = [(e["name"], t["name"]) for e in check["exercises"] for t in e["tests"] if t["status"] != "passed"]
    assert failing == []
    assert lazy("public")["score"] == 0
    withheld = [t for e in lazy("public")["exercises"] for t in e["tests"] if t["visibility"] == "visible"
                and t["max_score"] > 0]
    assert withheld and all(t["status"] == "failed" and "points withheld" in t["message"] for t in withheld)


def outcome(exercise: str, name: str, status: str, points: float = 1.0):
    return SimpleNamespace(spec=catalog.TestSpec(name, exercise, "hidden", points), points=points, status=status, message="")


def test_the_rule_withholds_what_a_test_earns_without_the_general_case():
    cat = catalog.load()
    general = cat.exercise("hvp").general[0]
    runs = [outcome("hvp", general, "failed"), outcome("hvp", general, "failed"),
            outcome("hvp", "test_hvp_conventions", "passed"), outcome("hvp", "test_hvp_docstring", "passed", 0.0),
            outcome("partial_grads", "test_partial_grads_conventions", "passed")]
    scoring.withhold_points_without_work(runs, cat)
    assert [o.status for o in runs] == ["failed", "failed", "failed", "passed", "passed"]
    assert general in runs[2].message and "points withheld" in runs[2].message
    runs = [outcome("hvp", general, "failed"), outcome("hvp", general, "passed"),
            outcome("hvp", "test_hvp_conventions", "passed")]
    scoring.withhold_points_without_work(runs, cat)
    assert runs[2].status == "passed", "one passing case of the general test is work"


def test_every_exercise_names_its_general_case():
    for e in catalog.load().exercises:
        assert e.general, e.name
        assert all(e.tests[[t.name for t in e.tests].index(g)].folder == "hidden" for g in e.general), e.name
