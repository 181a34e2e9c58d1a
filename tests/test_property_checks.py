"""Property checks for students: `grader check` runs each exercise's property (course file: `property:`) on
fresh random inputs drawn by Hypothesis from a printed seed, against a public oracle (float64 finite
differences, grader/cases/public/finite_differences.py), through the worker like every public check. A
failure is shrunk and shown as a call to run; a property is worth no points and `grader grade` never runs
one. The mistake caught here (tests/submissions/property/) passes every fixed public input.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from grader import catalog
from grader.display import check_table
from grader.host.runner import Engine, Options

from conftest import ROOT, SOLUTIONS, STUBS, make_submission

MISTAKE = ROOT / "tests" / "submissions" / "property" / "hvp_clamped_leaf.py"
PROPERTIES = {"partial_grads", "nth_derivative", "hvp", "jacobian_rows", "SmoothAbs"}
COURSE = catalog.load()


def _mistake_folder(folder: Path) -> Path:
    source = (SOLUTIONS / "grad.py").read_text() + "\n\n" + MISTAKE.read_text()
    return make_submission(folder, {"grad.py": source})


def _tests(report: dict, exercise: str) -> dict[str, dict]:
    return {t["name"]: t for e in report["exercises"] if e["name"] == exercise for t in e["tests"]}


def _literal_sizes(snippet: str) -> list[int]:
    """The number of elements of every torch.tensor literal of a snippet."""
    return [len(re.findall(r"-?\d+\.?\d*(?:e-?\d+)?", body)) for body in re.findall(r"torch\.tensor\(([^)]*)\)", snippet)]


def test_the_course_names_the_properties_and_their_budget():
    named = {e.name: e.property_name for e in COURSE.exercises if e.property_name}
    assert set(named) == PROPERTIES
    assert COURSE.properties.calls > 0 and COURSE.properties.examples > 0 and COURSE.properties.seconds > 0
    for name, test in named.items():  # worth no points: never one of the exercise's listed tests
        assert test not in {t.name for t in COURSE.exercise(name).tests}
        assert COURSE.property_test(test).points == 0


@pytest.mark.parametrize("change, message", [
    (lambda d: d["properties"].update(budget=3), "`properties:` has the keys"),
    (lambda d: d["properties"].update(calls=0), "numbers above 0"),
    (lambda d: d["exercises"]["hvp"].update(property="hvp_property"), "names one public test function"),
    (lambda d: d["exercises"]["hvp"].update(property="test_hvp_small"), "is not also one of its"),
])
def test_a_wrong_property_entry_is_refused(change, message):
    data = yaml.safe_load(COURSE.path.read_text(encoding="utf-8"))
    change(data)
    with pytest.raises(catalog.CatalogError, match=message):
        catalog.parse(data, COURSE.path)


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """`grader check`'s engine (public tests and properties), at seed 11: the reference, the stubs, and the
    mistake twice (the same seed)."""
    engine = Engine(Options(seed=11, show_output=True, folders=("public",), properties=True, exercises=PROPERTIES))
    mistake = _mistake_folder(tmp_path_factory.mktemp("property") / "mistake")
    try:
        yield {"reference": engine.grade(SOLUTIONS), "stubs": engine.grade(STUBS), "mistake": engine.grade(mistake),
               "again": engine.grade(mistake)}
    finally:
        engine.close()


def test_a_mistake_the_fixed_public_inputs_miss_is_caught_shrunk_by_the_property(checked):
    tests = _tests(checked["mistake"], "hvp")
    fixed = {name: t for name, t in tests.items() if name != "test_hvp_property"}
    assert fixed and all(t["status"] == "passed" for t in fixed.values()), fixed  # every fixed public input
    prop = tests["test_hvp_property"]
    assert prop["status"] == "failed" and prop["max_score"] == 0
    message = prop["message"]
    assert "H @ v has wrong values" in message and "grader check --seed 11" in message
    snippet = message[message.index("import torch"):message.index("got / 实际得到")]
    assert "from grad import hvp" in snippet and "hvp(" in snippet
    sizes = _literal_sizes(snippet)
    assert sizes and max(sizes) <= 2, snippet  # shrunk: the smallest x and v that still fail
    assert "expected" in message  # what the oracle gives, beside what came back
    shown = check_table(checked["mistake"], "exercises", width=200, property_seed=11)
    assert "x test_hvp_property: failed" in shown and "grader check --seed 11 repeats them" in shown


def test_the_shown_call_reproduces_the_mistake_and_the_reference_differs(checked, tmp_path):
    message = _tests(checked["mistake"], "hvp")["test_hvp_property"]["message"]
    lines = message[message.index("import torch"):message.index("got / 实际得到")].splitlines()
    code = "\n".join(line.strip() for line in lines if line.strip())
    *body, last = code.splitlines()
    script = "\n".join([*body, f"print({last})"])
    folder = _mistake_folder(tmp_path / "run")
    got = subprocess.run([sys.executable, "-c", script], cwd=folder, capture_output=True, text=True, timeout=120)
    reference = subprocess.run([sys.executable, "-c", script], cwd=SOLUTIONS, capture_output=True, text=True, timeout=120)
    assert got.returncode == 0 and reference.returncode == 0, got.stderr + reference.stderr
    assert got.stdout != reference.stdout  # the call shows the mistake; the reference gives something else


def test_the_same_seed_repeats_the_check(checked):
    first, again = (_tests(checked[k], "hvp")["test_hvp_property"]["message"] for k in ("mistake", "again"))
    assert first == again


def test_a_property_never_changes_the_public_points(checked):
    mistake, reference = checked["mistake"], checked["reference"]
    assert mistake["score"] == reference["score"] == reference["max_score"]
    assert mistake["max_score"] == reference["max_score"] == COURSE.max_score(("public",)) \
        - sum(t.points for e in COURSE.exercises if e.name not in PROPERTIES for t in e.tests if t.folder == "public")


def test_the_reference_passes_every_property_and_the_stubs_show_todo(checked):
    for exercise in PROPERTIES:
        prop = _tests(checked["reference"], exercise)[COURSE.exercise(exercise).property_name]
        assert prop["status"] == "passed", prop["message"]
    shown = check_table(checked["stubs"], "exercises", width=100)
    assert shown.count("TODO 未开始") == len(PROPERTIES) and "FAIL" not in shown
    for exercise in PROPERTIES:  # a property runs once the fixed checks pass: never on a stub
        assert COURSE.exercise(exercise).property_name not in _tests(checked["stubs"], exercise)


def test_a_property_runs_only_once_the_fixed_checks_pass(tmp_path):
    """An exercise that fails a fixed public check has its mistake shown already: its property does not run
    (no row, no seed, no cost), and the other exercises' properties still do."""
    folder = tmp_path / "exercises"
    shutil.copytree(SOLUTIONS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    with (folder / "grad.py").open("a", encoding="utf-8") as out:  # H @ ones: fails test_hvp_small
        out.write("\n\ndef hvp(f, x, v):\n    x = x.detach().requires_grad_(True)\n"
                  "    (g,) = torch.autograd.grad(f(x), x, create_graph=True)\n"
                  "    return torch.autograd.grad(g.sum(), x)[0] if g.requires_grad else torch.zeros_like(x)\n")
    engine = Engine(Options(seed=3, show_output=True, folders=("public",), properties=True,
                            exercises={"hvp", "partial_grads"}))
    try:
        report = engine.grade(folder)
    finally:
        engine.close()
    hvp = _tests(report, "hvp")
    assert hvp["test_hvp_small"]["status"] == "failed" and "test_hvp_property" not in hvp
    assert _tests(report, "partial_grads")["test_partial_grads_property"]["status"] == "passed"


def test_grading_never_runs_a_property(tmp_path):
    engine = Engine(Options(seed=0, exercises={"hvp"}))
    try:
        report = engine.grade(_mistake_folder(tmp_path / "mistake"))
    finally:
        engine.close()
    assert "test_hvp_property" not in _tests(report, "hvp")
    assert report["max_score"] == COURSE.exercise("hvp").max_score


def _check(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader", "check", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "COLUMNS": "200"})


@pytest.mark.slow
def test_grader_check_prints_a_seed_and_repeats_it(tmp_path):
    folder = _mistake_folder(tmp_path / "exercises")
    first = _check("--exercise", "hvp", "--seed", "5", cwd=tmp_path)
    again = _check("--exercise", "hvp", "--seed", "5", cwd=tmp_path)
    assert first.returncode == again.returncode == 1, first.stdout + first.stderr
    assert first.stdout == again.stdout
    assert "grader check --seed 5 repeats them" in first.stdout and "from grad import hvp" in first.stdout
    assert "1/1     FAIL" in first.stdout or "FAIL 未通过" in first.stdout
    fresh = _check(str(SOLUTIONS), "--exercise", "hvp", cwd=tmp_path)
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    seed = re.search(r"grader check --seed (\d+) repeats them", fresh.stdout)
    assert seed and folder.is_dir()
