"""The corpus of realistic wrong submissions: each one loses points on its own exercise only, fails
`grader check`, and is named by its own mistake id.

Every file in tests/submissions/wrong/ holds one learner mistake (grader/validate/mistakes.py says how).
`grader validate` grades the corpus with public and hidden tests (the `validated` fixture, run once);
here it is graded once more as `grader check` does (public tests only). A device-specific mistake
(DEVICE = "cuda") is right on the CPU and is named from its recorded GPU failure here; graded on a GPU
where there is one.
"""

from __future__ import annotations

import os

import pytest
import torch

from grader import catalog
from grader.cases import kit
from grader.host import plugin, results
from grader.host.runner import Options, grade_many
from grader.host.student_code import CallResult
from grader.protocol.messages import Outcome
from grader.protocol.wire import RemoteTensor
from grader.validate import mistakes

from conftest import SUBMISSIONS, lost, make_submission

COURSE = catalog.load()
WRONG = COURSE.place("learner_mistakes") or SUBMISSIONS / "wrong"
CORPUS = mistakes.read_folder(WRONG)
ON_CPU = sorted(n for n, e in CORPUS.items() if not mistakes.device_of(e))  # caught on every device
ON_GPU = sorted(n for n, e in CORPUS.items() if mistakes.device_of(e))  # caught with --device cuda only


@pytest.fixture(scope="module")
def graded(validated, tmp_path_factory):
    """A lookup: graded(name), the score file `grader validate` wrote (seed 0, public and hidden tests), or
    graded(name, "check"), the corpus graded as `grader check` does (public tests only, one engine per CPU)."""
    base = tmp_path_factory.mktemp("corpus")
    paths = [str(make_submission(base / "subs" / name, mistakes.submission_modules(entry, COURSE)))
             for name, entry in CORPUS.items()]
    check = grade_many(paths, base / "check", Options(seed=0, folders=("public",)), workers=os.cpu_count() or 2)
    reports = {r["submission"]: r for r in check.reports}
    return lambda name, kind="grade": validated.report(f"mistake-{name}") if kind == "grade" else reports[name]


def failed_tests(report: dict, exercise: str, visibility: str | None = None) -> list[dict]:
    entry = next(e for e in report["exercises"] if e["name"] == exercise)
    return [t for t in entry["tests"] if t["status"] != "passed" and (visibility is None or t["visibility"] == visibility)]


def check_passes(report: dict, exercise: str) -> bool:
    return not failed_tests(report, exercise)


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_entry_is_well_formed(name):
    assert mistakes.problems(CORPUS[name], COURSE) == []


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
    if entry["ON_DEVICE"] == mistakes.RETURNS_ON_CPU:
        value = RemoteTensor(data=x, dtype=x.dtype, shape=(3,), device="cpu")
        call = CallResult(function=exercise, args=(x,), outcome=Outcome.RETURNED, value=value, device="cuda")
        check = lambda: kit.result_tensor(call, kit.returned(call), "the result", like=x)  # noqa: E731
    else:
        kind, _, message = entry["ON_DEVICE"].partition(": ")
        call = CallResult(function=exercise, args=(x,), outcome=Outcome.RAISED, exception={"type": kind, "message": message}, device="cuda")
        check = lambda: kit.returned(call)  # noqa: E731
    with pytest.raises(kit.Fail) as failure:
        check()
    status, message, mistake = plugin.classify(failure, visible=False, exercise=exercise, course=catalog.load())
    assert status == "failed" and mistake is not None and mistake["id"] == entry["MISTAKE"], (status, message)
    assert mistake["en"] in message and mistake["zh"] in message


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU: the device-specific mistakes graded for real")
@pytest.mark.parametrize("name", ON_GPU)
def test_device_mistake_is_caught_on_the_gpu(tmp_path, name):
    entry = CORPUS[name]
    path = make_submission(tmp_path / "subs" / name, mistakes.submission_modules(entry, COURSE))
    (report,) = grade_many([str(path)], tmp_path / "out", Options(seed=0, device="cuda")).reports
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
    assert len(CORPUS) >= 3 * len(COURSE.exercises)
    assert sorted(n for n, e in CORPUS.items() if e["PUBLIC"] == "pass") == []


# Exercise-specific mistakes of the course file that no corpus file makes, and why.
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
    specific = {f"{e.name}.{key}" for e in COURSE.exercises for key in e.mistakes}
    made = {e["MISTAKE"] for e in CORPUS.values()}
    not_made = {m: why for m, why in NOT_MADE.items() if m.split(".")[0] in COURSE.modules_by_function}
    assert sorted(specific - made) == sorted(not_made), "update NOT_MADE"
    assert not set(not_made) & made


@pytest.mark.parametrize("name", [n for n in ("smooth_abs_no_grad_backward", "smooth_abs_once_differentiable") if n in CORPUS])
def test_non_differentiable_backward_loses_only_the_double_backward_points(graded, name):
    entry = next(e for e in graded(name)["exercises"] if e["name"] == CORPUS[name]["EXERCISE"])
    failed = {t["name"].split("[")[0] for t in entry["tests"] if t["status"] != "passed" and t["visibility"] == "hidden"}
    assert failed == {"test_smooth_abs_double_backward"}


# Mistakes whose public check fails without naming them, each with the reason the public inputs cannot
# reveal it: none today, every mistake of the corpus is named by the public check that reveals it (a value
# the mistake gives on the public inputs, an error in its context, a docstring example's wrong text). The
# test below fails when this list and the corpus disagree. (A device mistake, DEVICE = "cuda", is right on
# the CPU: only a check on a GPU can reveal it.)
NOT_YET_NAMED_PUBLICLY: dict[str, str] = {}


@pytest.mark.parametrize("name", ON_CPU)
def test_grader_check_names_the_mistake(graded, name):
    """The public check that reveals a mistake names it, in the output a student reads."""
    from grader.display import check_table

    entry = CORPUS[name]
    shown = check_table(graded(name, "check"), "exercises", width=100)
    named = f"mistake / 已知错误: {entry['MISTAKE']}" in shown
    assert named != (name in NOT_YET_NAMED_PUBLICLY), \
        f"{name}: grader check {'names' if named else 'does not name'} {entry['MISTAKE']}:\n{shown}"
