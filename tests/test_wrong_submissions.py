"""The corpus of realistic wrong submissions: each one loses points on its own exercise only.

Every file in tests/submissions/wrong/ holds one learner mistake: the wrong function or class,
and three constants, EXERCISE (the exercise it breaks), MODULE (where that exercise lives) and
PUBLIC ("pass" if the exercise's public tests still pass, "fail" otherwise). The submission is
the reference everywhere else: its MODULE is the solution's source followed by the file's, whose
later definitions replace the solution's.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from grader import catalog
from grader.cases.kit import ERROR_HINTS, MISTAKES, mistake_text
from grader.host import results
from grader.host.runner import Options, grade_many

from conftest import SOLUTIONS, SUBMISSIONS, lost, make_submission, public_passed

WRONG = SUBMISSIONS / "wrong"
CONSTANTS = ("EXERCISE", "MODULE", "PUBLIC")


def read_entry(path: Path) -> dict:
    """The file's constants and docstring, read without running it."""
    tree = ast.parse(path.read_text())
    entry = {"name": path.stem, "path": path, "doc": ast.get_docstring(tree)}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id in CONSTANTS and isinstance(node.value, ast.Constant):
            entry[node.targets[0].id] = node.value.value
    return entry


CORPUS = {p.stem: read_entry(p) for p in sorted(WRONG.glob("*.py"))}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Grades the whole corpus once (seed 0, public and hidden tests, one engine per CPU) and
    returns a lookup of the reports by entry name."""
    base = tmp_path_factory.mktemp("corpus")
    paths = []
    for name, entry in CORPUS.items():
        module = entry["MODULE"]
        source = (SOLUTIONS / module).read_text() + "\n\n" + entry["path"].read_text()
        paths.append(str(make_submission(base / "subs" / name, {module: source})))
    summary = grade_many(paths, base / "out", Options(seed=0), workers=os.cpu_count() or 2)
    reports = {r["submission"]: r for r in summary.reports}
    return reports.__getitem__


def failures(report: dict, exercise: str, visibility: str | None = None) -> list[str]:
    entry = next(e for e in report["exercises"] if e["name"] == exercise)
    return [t["message"] for t in entry["tests"]
            if t["status"] != "passed" and (visibility is None or t["visibility"] == visibility)]


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_entry_is_well_formed(name):
    entry = CORPUS[name]
    missing = [c for c in CONSTANTS if c not in entry]
    assert not missing, f"{name}: missing {missing}"
    names = [e.name for e in catalog.load().exercises]
    assert entry["EXERCISE"] in names, f"{name}: unknown exercise {entry['EXERCISE']!r}"
    exercise = catalog.load().exercise(entry["EXERCISE"])
    assert exercise.module == entry["MODULE"], f"{name}: {entry['EXERCISE']} lives in {exercise.module}"
    assert entry["PUBLIC"] in ("pass", "fail")
    assert entry["doc"] and len(entry["doc"].splitlines()) == 1, f"{name}: say the mistake in one sentence"


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_mistake_costs_its_own_exercise_only(graded, name):
    entry = CORPUS[name]
    report = graded(name)
    assert results.validate(report) == []
    assert report.get("submission_errors", []) == [], report.get("submission_errors")
    assert lost(report) == {entry["EXERCISE"]}, \
        f"{name} should lose points on {entry['EXERCISE']} only; lost {sorted(lost(report))}"
    assert public_passed(report, entry["EXERCISE"]) == (entry["PUBLIC"] == "pass"), \
        f"{name}: PUBLIC = {entry['PUBLIC']!r}, but the public tests say {failures(report, entry['EXERCISE'], 'visible')}"


def test_corpus_covers_every_exercise_with_a_mistake_only_hidden_tests_catch(graded):
    """For every exercise some mistake passes the public tests and still loses points."""
    assert len(CORPUS) >= 30
    caught_by_hidden = {}
    for name, entry in CORPUS.items():
        if entry["PUBLIC"] != "pass":
            continue
        report = graded(name)
        exercise = entry["EXERCISE"]
        if public_passed(report, exercise) and exercise in lost(report) and failures(report, exercise, "hidden"):
            caught_by_hidden.setdefault(exercise, []).append(name)
    missing = [e.name for e in catalog.load().exercises if e.name not in caught_by_hidden]
    assert missing == [], f"no corpus mistake passes the public tests and fails hidden ones for {missing}"


def _hint(key: str) -> str:
    en, zh = ERROR_HINTS[key]
    return f"Hint: {en} / {zh}"


# A mistake, and the text a hidden test's failure message names it with (kit.MISTAKES / ERROR_HINTS,
# or a probe's own explanation).
NAMED = [
    ("two_losses_aliased_grad", mistake_text("aliased_grad")),
    ("two_losses_zeroed_between", mistake_text("not_accumulated")),
    ("two_losses_no_retain_graph", _hint("backward through the graph a second time")),
    ("weighted_sum_backward", mistake_text("unweighted")),
    ("intermediate_grads_sum_loss", mistake_text("wrong_loss")),
    ("gnc_none_not_skipped", _hint("'NoneType'")),
    ("dynamic_doubling_branch_ignored", mistake_text("unscaled_branch")),
    ("nth_derivative_differentiates_f_each_time", mistake_text("first_derivative_only")),
    ("nth_derivative_no_create_graph", mistake_text("graph_dropped")),
    ("hvp_no_create_graph", _hint("does not require grad")),
    ("hvp_sum_instead_of_v", mistake_text("hvp_of_sum")),
    ("partial_grads_no_allow_unused", _hint("not have been used in the graph")),
    ("jacobian_rows_grad_of_sum", mistake_text("grad_of_sum")),
    ("grads_per_step_not_zeroed", mistake_text("not_zeroed")),
    ("grads_per_step_recorded_alias", mistake_text("recorded_alias")),
    ("microbatches_batch_mean", mistake_text("batch_mean")),
    ("microbatches_divide_by_num_batches", mistake_text("per_step_scaled")),
    ("gd_fit_not_zeroed", mistake_text("no_zero_gd")),
    ("gd_fit_update_without_no_grad", _hint("leaf Variable that requires grad")),
    ("gd_fit_rebind_outside_no_grad", _hint("'NoneType'")),
    ("shifted_sigmoid_inplace_add", _hint("modified by an inplace operation")),
    ("shifted_sigmoid_shift_dropped", mistake_text("no_shift_in_s")),
    ("shifted_sigmoid_mean_backward", mistake_text("mean_not_sum")),
    ("shifted_sigmoid_data_shift", mistake_text("shifted_saved_output")),
    ("smooth_abs_sign_backward", mistake_text("sign_instead")),
    ("smooth_abs_no_grad_backward", mistake_text("not_differentiable")),
    ("smooth_abs_once_differentiable", mistake_text("not_differentiable")),
    ("smooth_abs_detached_output", mistake_text("detached_in_backward")),
    ("numerical_gradient_forward_difference", mistake_text("forward_difference")),
    ("frozen_predict_inference_mode", _hint("Inference tensors cannot be saved for backward")),
    ("frozen_predict_grad_disabled_globally", "torch.set_grad_enabled(False) was never undone"),
]


@pytest.mark.parametrize("name, text", NAMED, ids=[n for n, _ in NAMED])
def test_hidden_failure_message_names_the_mistake(graded, name, text):
    entry = CORPUS[name]
    messages = failures(graded(name), entry["EXERCISE"], "hidden")
    assert any(text in m for m in messages), messages


# MISTAKES entries no corpus mistake produces. gradient_not_hvp: returning the gradient itself from hvp takes a
# bug of another kind (returning the wrong variable), not an autograd misunderstanding.
NOT_NAMED = ["gradient_not_hvp"]


def test_named_mistakes_cover_the_catalogue():
    """Every MISTAKES entry is named by some corpus mistake above, or listed in NOT_NAMED."""
    named = "\n".join(text for _, text in NAMED)
    assert [key for key in MISTAKES if mistake_text(key) not in named] == NOT_NAMED


@pytest.mark.parametrize("name", ["smooth_abs_no_grad_backward", "smooth_abs_once_differentiable"])
def test_non_differentiable_backward_loses_only_the_double_backward_points(graded, name):
    entry = next(e for e in graded(name)["exercises"] if e["name"] == "SmoothAbs")
    failed = {t["name"].split("[")[0] for t in entry["tests"] if t["status"] != "passed" and t["visibility"] == "hidden"}
    assert failed == {"test_smooth_abs_double_backward"}
