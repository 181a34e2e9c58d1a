"""The corpus of realistic wrong submissions: each one loses points on its own exercise only, fails
`grader check`, and is named by its own mistake id.

Every file in tests/submissions/wrong/ holds one learner mistake: the wrong function or class, and four
constants, EXERCISE (the exercise it breaks), MODULE (where that exercise lives), PUBLIC ("pass" if
`grader check` still passes the exercise, "fail" otherwise) and MISTAKE (the id, `<exercise>.<key>` of
grader/cases/mistakes.yaml, that a failed test of the exercise must carry). The submission is the
reference everywhere else: its MODULE is the solution's source followed by the file's, whose later
definitions replace the solution's.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest
import torch

from grader import catalog
from grader.cases import kit
from grader.host import plugin, results
from grader.host.runner import Options, grade_many
from grader.host.student_code import CallResult
from grader.protocol.messages import Outcome
from grader.protocol.wire import RemoteTensor

from conftest import SOLUTIONS, SUBMISSIONS, lost, make_submission

WRONG = SUBMISSIONS / "wrong"
CONSTANTS = ("EXERCISE", "MODULE", "PUBLIC", "MISTAKE")
DEVICE_CONSTANTS = ("DEVICE", "ON_DEVICE")  # device-specific mistakes only
RETURNS_ON_CPU = "returns a tensor on cpu"


def read_entry(path: Path) -> dict:
    """The file's constants and docstring, read without running it."""
    tree = ast.parse(path.read_text())
    entry = {"name": path.stem, "path": path, "doc": ast.get_docstring(tree)}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id in CONSTANTS + DEVICE_CONSTANTS and isinstance(node.value, ast.Constant):
            entry[node.targets[0].id] = node.value.value
    return entry


CORPUS = {p.stem: read_entry(p) for p in sorted(WRONG.glob("*.py"))}
ON_CPU = sorted(n for n, e in CORPUS.items() if "DEVICE" not in e)  # caught on every device
ON_GPU = sorted(n for n, e in CORPUS.items() if "DEVICE" in e)  # caught with --device cuda only


def corpus_paths(base: Path, names: list[str] | None = None) -> list[str]:
    paths = []
    for name in names or CORPUS:
        entry = CORPUS[name]
        module = entry["MODULE"]
        source = (SOLUTIONS / module).read_text() + "\n\n" + entry["path"].read_text()
        paths.append(str(make_submission(base / "subs" / name, {module: source})))
    return paths


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Grades the whole corpus once (seed 0, public and hidden tests, one engine per CPU), and once more
    as `grader check` does (public tests only). Returns a lookup: graded(name) or graded(name, "check")."""
    base = tmp_path_factory.mktemp("corpus")
    paths = corpus_paths(base)
    workers = os.cpu_count() or 2
    full = grade_many(paths, base / "out", Options(seed=0), workers=workers)
    check = grade_many(paths, base / "check", Options(seed=0, folders=("public",)), workers=workers)
    reports = {("grade", r["submission"]): r for r in full.reports}
    reports.update({("check", r["submission"]): r for r in check.reports})
    return lambda name, kind="grade": reports[kind, name]


def failed_tests(report: dict, exercise: str, visibility: str | None = None) -> list[dict]:
    entry = next(e for e in report["exercises"] if e["name"] == exercise)
    return [t for t in entry["tests"] if t["status"] != "passed" and (visibility is None or t["visibility"] == visibility)]


def check_passes(report: dict, exercise: str) -> bool:
    return not failed_tests(report, exercise)


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
    prefix, _, key = entry["MISTAKE"].partition(".")
    assert prefix == entry["EXERCISE"], f"{name}: the mistake id starts with its exercise"
    catalog.mistake(prefix, key)  # listed in mistakes.yaml
    assert entry["doc"] and len(entry["doc"].splitlines()) == 1, f"{name}: say the mistake in one sentence"
    if "DEVICE" in entry or "ON_DEVICE" in entry:
        assert entry.get("DEVICE") == "cuda", f"{name}: DEVICE = 'cuda' is the only device-specific kind"
        on_device = entry.get("ON_DEVICE", "")
        assert on_device == RETURNS_ON_CPU or ": " in on_device, \
            f"{name}: ON_DEVICE is the error raised ('Type: message') or {RETURNS_ON_CPU!r}"


@pytest.mark.parametrize("name", ON_CPU)
def test_mistake_costs_its_own_exercise_only(graded, name):
    entry = CORPUS[name]
    report = graded(name)
    assert results.validate(report) == []
    assert report.get("submission_errors", []) == [], report.get("submission_errors")
    assert lost(report) == {entry["EXERCISE"]}, \
        f"{name} should lose points on {entry['EXERCISE']} only; lost {sorted(lost(report))}"
    check = graded(name, "check")
    assert check_passes(check, entry["EXERCISE"]) == (entry["PUBLIC"] == "pass"), \
        f"{name}: PUBLIC = {entry['PUBLIC']!r}, but grader check says {failed_tests(check, entry['EXERCISE'])}"


@pytest.mark.parametrize("name", ON_GPU)
def test_device_mistake_is_right_on_the_cpu(graded, name):
    """On the CPU a device-specific mistake does no harm: full marks, and `grader check` passes. (One that
    loses points on the CPU is an ordinary mistake and belongs without DEVICE.)"""
    report = graded(name)
    assert results.validate(report) == []
    assert lost(report) == set(), f"{name} lost points on the CPU: {sorted(lost(report))}"
    assert check_passes(graded(name, "check"), CORPUS[name]["EXERCISE"])


@pytest.mark.parametrize("name", ON_GPU)
def test_device_mistake_is_named_from_its_gpu_failure(name):
    """What the mistake does on a GPU (ON_DEVICE: torch's error, or a result left on the CPU) fails the
    exercise's check with the mistake's id and advice, through the same kit and plugin code a GPU run uses."""
    entry = CORPUS[name]
    exercise = entry["EXERCISE"]
    x = torch.zeros(3, dtype=torch.float64)
    if entry["ON_DEVICE"] == RETURNS_ON_CPU:
        value = RemoteTensor(data=x, dtype=x.dtype, shape=(3,), device="cpu")
        call = CallResult(exercise, (x,), Outcome.RETURNED, value, device="cuda")
        check = lambda: kit.result_tensor(call, kit.returned(call), "the result", like=x)  # noqa: E731
    else:
        kind, _, message = entry["ON_DEVICE"].partition(": ")
        call = CallResult(exercise, (x,), Outcome.RAISED, exception={"type": kind, "message": message}, device="cuda")
        check = lambda: kit.returned(call)  # noqa: E731
    with pytest.raises(kit.Fail) as failure:
        check()
    status, message, mistake = plugin.classify(failure, visible=False, exercise=exercise)
    assert status == "failed" and mistake is not None and mistake["id"] == entry["MISTAKE"], (status, message)
    assert mistake["en"] in message and mistake["zh"] in message


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU: the device-specific mistakes graded for real")
@pytest.mark.parametrize("name", ON_GPU)
def test_device_mistake_is_caught_on_the_gpu(tmp_path, name):
    entry = CORPUS[name]
    (path,) = corpus_paths(tmp_path, [name])
    (report,) = grade_many([path], tmp_path / "out", Options(seed=0, device="cuda")).reports
    assert lost(report) == {entry["EXERCISE"]}
    named = [t for t in failed_tests(report, entry["EXERCISE"]) if t.get("mistake", {}).get("id") == entry["MISTAKE"]]
    assert named, [t["message"][:200] for t in failed_tests(report, entry["EXERCISE"])]


@pytest.mark.parametrize("name", ON_CPU)
def test_failure_names_the_mistake(graded, name):
    """A failed test of the exercise carries the mistake's id, and its message gives the mistake's advice."""
    entry = CORPUS[name]
    tests = failed_tests(graded(name), entry["EXERCISE"])
    named = [t for t in tests if t.get("mistake", {}).get("id") == entry["MISTAKE"]]
    assert named, [(t["name"], t.get("mistake", {}).get("id"), t["message"][:200]) for t in tests]
    for t in named:
        assert t["mistake"]["en"] in t["message"] and t["mistake"]["zh"] in t["message"]


def test_every_mistake_fails_grader_check():
    """Each corpus mistake breaks a rule its exercise's docstring states, and the public checks (the
    docstring's examples and the public edge cases) catch every one: none is PUBLIC = "pass"."""
    assert len(ON_CPU) >= 60
    assert sorted(n for n in ON_CPU if CORPUS[n]["PUBLIC"] == "pass") == []


# Exercise-specific entries of mistakes.yaml that no corpus file makes, and why.
NOT_MADE = {
    "graph_node_counts.missing_accumulate_grad": "a walk that stops before the leaves; seen in no student code yet",
    "graph_node_counts.wrong_counts": "the catch-all for counts that match no known mistake",
    "make_leaf.no_requires_grad": "forgetting requires_grad_ entirely; trivially caught, not worth a file",
    "intermediate_grads.missing_key": "a misspelt key; trivially caught",
    "dynamic_doubling.steps_not_int": "returning steps as a tensor; trivially caught",
    "hvp.gradient_not_hvp": "returning the gradient itself takes a bug of another kind (the wrong variable)",
    "hvp.shortcut": "torch.autograd.functional.hvp; the hostile corpus covers shortcuts",
    "hvp.single_pass": "only reachable with a shortcut",
    "jacobian_rows.shortcut": "torch.func.jacrev; the hostile corpus covers shortcuts",
    "jacobian_rows.one_pass": "only reachable with a shortcut",
    "add_into.not_new_tensor": "returning a for inplace=False; trivially caught",
    "safe_add_.not_same_object": "returning a new tensor; trivially caught",
    "SmoothAbs.wrong_gradient_count": "backward returning one value; the zero-for-eps file shows the neighbour",
    "SmoothAbs.autograd_in_backward": "torch.autograd.grad inside backward; the hostile corpus covers it",
    "numerical_gradient.autograd_used": "evaluating f with requires_grad on; caught with the float64 check",
}


def test_every_specific_mistake_is_made_by_the_corpus_or_said_why_not():
    specific = {f"{section}.{key}" for section, entries in catalog.load_mistakes().items()
                if section != catalog.COMMON for key in entries}
    made = {e["MISTAKE"] for e in CORPUS.values()}
    assert sorted(specific - made) == sorted(NOT_MADE), "update NOT_MADE"
    assert not set(NOT_MADE) & made


@pytest.mark.parametrize("name", ["smooth_abs_no_grad_backward", "smooth_abs_once_differentiable"])
def test_non_differentiable_backward_loses_only_the_double_backward_points(graded, name):
    entry = next(e for e in graded(name)["exercises"] if e["name"] == "SmoothAbs")
    failed = {t["name"].split("[")[0] for t in entry["tests"] if t["status"] != "passed" and t["visibility"] == "hidden"}
    assert failed == {"test_smooth_abs_double_backward"}
