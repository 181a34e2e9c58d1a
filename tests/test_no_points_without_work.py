"""No points without work (grader.md, "Rules of scoring"): lazy submissions score 0, the rule of
points.yaml withholds what a test earns on its own, and the hidden tests decide on random inputs."""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from grader import catalog
from grader.host import results, scoring
from grader.host.runner import Options, grade_many

from conftest import make_submission
from lazy_submissions import MODES, lazy_modules


@pytest.fixture(scope="module")
def lazy(tmp_path_factory):
    base = tmp_path_factory.mktemp("lazy")
    paths = [str(make_submission(base / f"lazy_{mode}", lazy_modules(mode))) for mode in MODES]
    summary = grade_many(paths, base / "out", Options(seed=0), workers=os.cpu_count() or 2)
    check = grade_many(paths, base / "check", Options(seed=0, folders=("public",)), workers=os.cpu_count() or 2)
    graded = {("grade", r["submission"]): r for r in summary.reports}
    graded.update({("check", r["submission"]): r for r in check.reports})
    return lambda mode, kind="grade": graded[kind, f"lazy_{mode}"]


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
