"""otter-grader 7.0.0 end to end: the real `otter run` on the zip `grader export otter` makes, and the
real `otter check` on what `grader export otter-check` makes.

For every submission (the reference, the stubs, three wrong ones, six hostile ones) otter's
per-question scores must equal `grader grade`'s per-exercise scores. The hostile ones fool plain
otter, that is otter with test files an instructor would write (import the module in the kernel,
compare with torch.allclose): four get full marks there (two of them by running their code in
otter's grading process), and two run their code in otter's kernel (one as the kernel itself).
Our zip is fooled by none, and none of their code runs in otter's processes.

These run otter, a Jupyter kernel and the engine for each submission (seconds each), so they are
marked slow: `-m "not slow"` skips them; CI runs them (and fails if otter is missing).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from grader import catalog

import course_copy
from conftest import FULL_MARKS, OTTER_RUNS, ROOT, SOLUTIONS, STUBS, venv_tool
from sample_submissions import WRONG, hostile, modules_of, wrong_zip, write_zip

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]  # traitlets, via otter

# The otter processes import this checkout's grader (the plugin), whatever else is installed.
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
HOSTILE = list(hostile("").keys())
FOOLS_PLAIN_OTTER = ["hostile_allclose", "hostile_patch_runner", "hostile_pickle", "hostile_otter_log"]
RUNS_CODE_IN_OTTER = {"hostile_pickle": "grading process", "hostile_otter_log": "grading process",
                      "hostile_shadow_otter": "kernel", "hostile_kernel_launcher": "kernel (it replaced the kernel)"}
SUBMISSIONS = ["reference", "stubs", *WRONG, *HOSTILE]

# What an instructor writes for plain otter: import the student's module in the kernel, compare there.
NAIVE_QUESTION = '''\
OK_FORMAT = False

from otter.test_files import test_case

name = {name!r}
points = 5


@test_case(points=5)
def check(env):
    import os, sys
    sys.path.insert(0, os.path.join(os.getcwd(), "exercises"))
{body}
'''
NAIVE_BODIES = {
    "partial_grads": """
import torch, grad
dx, dy = grad.partial_grads(lambda a, b: (a + b) * (b + 1), torch.tensor(2.0), torch.tensor(1.0))
assert torch.allclose(dx, torch.tensor(2.0)) and torch.allclose(dy, torch.tensor(5.0))
""",
    "hvp": """
import torch, grad
got = grad.hvp(lambda t: (t ** 3).sum(), torch.tensor([1.0, 2.0]), torch.tensor([1.0, 1.0]))
assert torch.allclose(got, torch.tensor([6.0, 12.0]))
""",
    "gd_fit": """
import torch, accumulation
w = accumulation.gd_fit(torch.tensor([[1.0]]), torch.tensor([2.0]), torch.tensor([0.0]), 0.1, 2)
assert torch.allclose(w, torch.tensor([0.72]))
""",
}


def otter() -> str:
    """The venv's own `otter` (beside sys.executable); a missing one skips, and fails in CI."""
    path = venv_tool("otter")
    if path is None:
        message = f"otter-grader is not installed beside {sys.executable}: pip install -e '.[otter]'"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return str(path)


def require_otter() -> None:
    otter()


def python(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, *args], env=ENV, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@dataclass
class OtterRun:
    scores: dict[str, float]
    max_scores: dict[str, float]
    results: dict
    stdout: str
    seconds: float


def otter_run(autograder: Path, submission: Path, out: Path, check: bool = True) -> OtterRun:
    """The real `otter run`; with check=False a run that crashes (plain otter can) gives no scores."""
    out.mkdir(parents=True)
    start = time.perf_counter()
    done = subprocess.run([otter(), "run", "-a", str(autograder), str(submission), "-o", str(out), "--no-logo"],
                          env=ENV, cwd=out, capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - start
    assert done.returncode == 0 or not check, done.stdout + done.stderr
    if done.returncode != 0:
        return OtterRun({}, {}, {}, done.stdout + done.stderr, seconds)
    results = json.loads((out / "results.json").read_text())  # otter's own output, as JSON
    questions = [t for t in results["tests"] if "max_score" in t]
    return OtterRun({t["name"]: t["score"] for t in questions}, {t["name"]: t["max_score"] for t in questions},
                    results, done.stdout, seconds)


@dataclass
class Graded:
    zips: dict[str, Path] = field(default_factory=dict)
    ours: dict[str, OtterRun] = field(default_factory=dict)
    naive: dict[str, OtterRun] = field(default_factory=dict)
    grader: dict[str, dict] = field(default_factory=dict)
    markers: dict[tuple[str, str], Path] = field(default_factory=dict)


def export(tmp_path_factory, kind: str) -> Path:
    """`grader export KIND`, as the instructor runs it."""
    require_otter()
    out = tmp_path_factory.mktemp(f"export-{kind}") / f"{kind}.zip"
    python("-m", "grader", "export", kind, "--out", str(out))
    return out


@pytest.fixture(scope="session")
def otter_zip(tmp_path_factory) -> Path:
    return export(tmp_path_factory, "otter")


@pytest.fixture(scope="session")
def naive_zip(tmp_path_factory) -> Path:
    require_otter()
    work = tmp_path_factory.mktemp("naive")
    (work / "tests").mkdir()
    for name, body in NAIVE_BODIES.items():
        (work / "tests" / f"{name}.py").write_text(NAIVE_QUESTION.format(name=name, body=textwrap.indent(body, "    ")))
    subprocess.run([otter(), "generate", "--no-config", "--no-requirements", "--no-environment", "-t", "tests",
                    "-o", "naive.zip"], cwd=work, env=ENV, check=True, capture_output=True)
    return work / "naive.zip"


@pytest.fixture(scope="session")
def graded(tmp_path_factory, otter_zip, naive_zip) -> Graded:
    work = tmp_path_factory.mktemp("otter-runs")
    g = Graded()
    subs = work / "submissions"
    subs.mkdir()
    for name, folder in (("reference", SOLUTIONS), ("stubs", STUBS)):  # as students make them
        python("-m", "grader", "submit", str(folder), "--out", str(subs / f"{name}.zip"))
        g.zips[name] = subs / f"{name}.zip"
    for name in WRONG:
        g.zips[name] = wrong_zip(name, subs / f"{name}.zip")
    naive_zips = {name: g.zips[name] for name in ("reference", "stubs")}
    (work / "naive-submissions").mkdir()
    for which, folder, zips in (("ours", subs, g.zips), ("naive", work / "naive-submissions", naive_zips)):
        for name in HOSTILE:  # one marker per zip: the runs go in parallel
            marker = g.markers[which, name] = work / f"{name}.{which}.marker"
            spec = hostile(str(marker))[name]
            zips[name] = write_zip(folder / f"{name}.zip", modules_of(spec["base"], spec["modules"]), spec["extra"])

    # one run alone, for its wall time; then the rest side by side
    g.ours["reference"] = otter_run(otter_zip, g.zips["reference"], work / "ours" / "reference")
    OTTER_RUNS.append(("otter run, reference submission, our zip", g.ours["reference"].seconds))
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 2)) as pool:
        ours = {n: pool.submit(otter_run, otter_zip, z, work / "ours" / n) for n, z in g.zips.items() if n != "reference"}
        naive = {n: pool.submit(otter_run, naive_zip, z, work / "naive" / n, check=False) for n, z in naive_zips.items()}
        python("-m", "grader", "grade", *map(str, g.zips.values()), "--out", str(work / "grades"), "--workers", "2")
        g.ours.update({n: f.result() for n, f in ours.items()})
        g.naive.update({n: f.result() for n, f in naive.items()})
    for name in g.zips:
        g.grader[name] = json.loads((work / "grades" / f"{name}.json").read_text())
    for name in SUBMISSIONS:
        naive = g.naive.get(name)
        plain = ("" if naive is None else f"; plain otter {sum(naive.scores.values()):g}/15 on {'+'.join(NAIVE_BODIES)}"
                 if naive.scores else "; plain otter: Autograder Failed" if naive.results else "; plain otter crashed")
        OTTER_RUNS.append((f"{name}: otter {sum(g.ours[name].scores.values()):g} / grader grade "
                           f"{g.grader[name]['score']:g}{plain}", g.ours[name].seconds))
    return g


# ============================================================================= our zip

@pytest.mark.parametrize("name", SUBMISSIONS)
def test_otter_scores_equal_grader_grade(graded, name):
    run, report = graded.ours[name], graded.grader[name]
    assert run.scores == {e["name"]: e["score"] for e in report["exercises"]}
    assert run.max_scores == {e["name"]: e["max_score"] for e in report["exercises"]}
    assert sum(run.scores.values()) == pytest.approx(report["score"])
    # the plugin that graded is this checkout's, with the engine's sandbox
    assert f"autograd-lab {__import__('grader').__version__} ({ROOT / 'grader'})" in run.stdout
    assert "graded this submission in its sandbox" in run.stdout
    public = next(t for t in run.results["tests"] if t["name"] == "Public Tests")
    public_passed = all(t["status"] == "passed" for e in report["exercises"] for t in e["tests"]
                        if t["visibility"] == "visible")
    assert public["status"] == ("passed" if public_passed else "failed")


def test_reference_and_stubs_get_full_marks_and_nothing(graded):
    assert sum(graded.ours["reference"].scores.values()) == graded.grader["reference"]["score"] == FULL_MARKS
    assert sum(graded.ours["stubs"].scores.values()) == graded.grader["stubs"]["score"] == 0


@pytest.mark.parametrize("name", list(WRONG))
def test_a_wrong_function_costs_its_exercise_only(graded, name):
    lost = {q for q, s in graded.ours[name].scores.items() if s < graded.ours[name].max_scores[q]}
    broken = {n for n in ("hvp", "grads_per_step", "make_leaf") if n in name}
    assert lost == broken


@pytest.mark.parametrize("name", list(RUNS_CODE_IN_OTTER))
def test_no_student_code_runs_in_otters_processes(graded, name):
    assert not graded.markers["ours", name].exists()
    where = RUNS_CODE_IN_OTTER[name]
    assert graded.markers["naive", name].exists(), f"plain otter ran this submission's code in its {where}"


def test_a_notebook_hand_in_through_the_real_otter_run_scores_as_its_py_zip(otter_zip, tmp_path, engine):
    """`otter run` on a notebook (the reference, and a Colab copy with one learner mistake): otter's
    per-question scores are those of the .py zip of the same code, to the point."""
    from notebook_support import colab_copy, exported, with_mistake, with_reference, write

    reference = with_reference(exported())
    for name, nb, zip_of_py in (("reference", reference, write_zip(tmp_path / "reference.zip", modules_of(SOLUTIONS, {}))),
                                ("wrong_hvp", colab_copy(with_mistake(reference, "wrong_hvp")),
                                 wrong_zip("wrong_hvp", tmp_path / "wrong_hvp.zip"))):
        run = otter_run(otter_zip, write(nb, tmp_path / f"{name}.ipynb"), tmp_path / "otter" / name)
        report = engine.grade(zip_of_py)
        assert run.scores == {e["name"]: e["score"] for e in report["exercises"]}, run.stdout
        assert sum(run.scores.values()) == pytest.approx(report["score"])
        assert "graded this submission in its sandbox" in run.stdout
        OTTER_RUNS.append((f"{name}.ipynb: otter {sum(run.scores.values()):g} / the .py zip {report['score']:g}", run.seconds))
    assert sum(run.scores.values()) < FULL_MARKS


# ============================================================================= plain otter, for contrast

def naive_total(graded, name):
    return sum(graded.naive[name].scores.values())


def test_the_naive_tests_tell_right_from_wrong(graded):
    assert naive_total(graded, "reference") == 15
    assert naive_total(graded, "stubs") == 0


@pytest.mark.parametrize("name", FOOLS_PLAIN_OTTER)
def test_plain_otter_is_fooled_and_our_zip_is_not(graded, name):
    deserved = sum(e["score"] for e in graded.grader[name]["exercises"] if e["name"] in NAIVE_BODIES)
    assert deserved < 15
    assert naive_total(graded, name) == 15, "plain otter gives full marks"
    assert sum(graded.ours[name].scores[q] for q in NAIVE_BODIES) == deserved


def test_one_otter_run_takes_seconds(graded):
    assert graded.ours["reference"].seconds < 120


# ============================================================================= the zip itself

def test_the_zip_is_otters_with_one_question_per_exercise_and_the_plugin(otter_zip):
    with zipfile.ZipFile(otter_zip) as zf:
        names = set(zf.namelist())
        config = json.loads(zf.read("otter_config.json"))
        environment = zf.read("environment.yml").decode()
        questions = {n[len("tests/"):-3]: zf.read(n).decode() for n in names if n.startswith("tests/")}
    assert {"run_autograder", "run_otter.py", "setup.sh", "environment.yml", "autograd_lab/pyproject.toml",
            "autograd_lab/grader/exports/otter.py", "autograd_lab/grader/cases/hidden/test_grad.py"} <= names
    assert config["plugins"] == [{"grader.exports.otter.AutogradLabPlugin": {"seed": 0, "device": "cpu"}}]
    for line in ("otter-grader[grading,plugins]==7.0.0", "--extra-index-url https://download.pytorch.org/whl/cpu",
                 "torch>=2.5,<2.14", "-e /autograder/source/autograd_lab"):
        assert f"- {line}" in environment
    cat = catalog.load()
    assert set(questions) == {e.name for e in cat.exercises}
    from otter.test_files import create_test_file
    from otter.nbmeta_config import NBMetadataConfig
    for exercise in cat.exercises:
        path = otter_zip.parent / f"{exercise.name}.py"
        path.write_text(questions[exercise.name])
        question = create_test_file(str(path), NBMetadataConfig())
        assert question.possible == exercise.max_score
        assert [(c.name, c.points, c.hidden) for c in question.test_cases] == \
            [(t.name, t.points, t.folder == "hidden") for t in exercise.tests]
        question.run({})
        assert question.score == 0, "in otter's kernel a case never passes: without the plugin, 0"


# ============================================================================= students: otter check

@pytest.fixture(scope="session")
def check_files(tmp_path_factory) -> Path:
    return export(tmp_path_factory, "otter-check")


def student_folder(check_files: Path, modules: dict[str, bytes], work: Path) -> Path:
    """A student's folder: exercises/ with these modules, and otter-check.zip unpacked beside it."""
    with zipfile.ZipFile(check_files) as zf:
        zf.extractall(work)
    (work / "exercises").mkdir()
    for module, source in modules.items():
        (work / "exercises" / module).write_bytes(source)
    return work


def otter_check(check_files: Path, modules: dict[str, bytes], work: Path) -> dict[str, bool]:
    """Pass/fail per exercise from the real `otter check`, run as a student would."""
    student_folder(check_files, modules, work)
    done = subprocess.run([otter(), "check", "autograd_lab.py", "-t", "otter-tests"], cwd=work, env=ENV,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    names = [e.name for e in catalog.load().exercises]
    if done.stdout.strip().endswith("All tests passed!"):
        return dict.fromkeys(names, True)
    found = dict(re.findall(r"^(\S+) results:(.*)$", done.stdout, re.M))
    assert set(found) == set(names), done.stdout
    return {n: found[n].strip() == "All test cases passed!" for n in names}


@pytest.mark.parametrize("name", ["reference", "stubs", "wrong_hvp"])
def test_otter_check_gives_grader_checks_pass_fail(public_engine, check_files, tmp_path, name):
    base = {"reference": SOLUTIONS, "stubs": STUBS, "wrong_hvp": SOLUTIONS}[name]
    modules = modules_of(base, WRONG.get(name, {}))
    report = public_engine.grade(write_zip(tmp_path / "sub.zip", modules))
    expected = {e["name"]: all(t["status"] == "passed" for t in e["tests"]) for e in report["exercises"]}
    assert otter_check(check_files, modules, tmp_path / "student") == expected
    assert any(expected.values()) == (name != "stubs") and all(expected.values()) == (name == "reference")


@pytest.mark.parametrize("name, passes", [("reference", True), ("wrong_hvp", False)])
def test_notebook_check_in_a_students_notebook(check_files, tmp_path, monkeypatch, name, passes):
    """`otter.Notebook(tests_dir="otter-tests").check("hvp")`, as a cell of a notebook next to exercises/ runs it."""
    import otter

    monkeypatch.chdir(student_folder(check_files, modules_of(SOLUTIONS, WRONG.get(name, {})), tmp_path))
    result = otter.Notebook(tests_dir="otter-tests").check("hvp")
    assert result.passed_all == passes


def test_a_plugin_that_could_not_grade_gives_no_score(tmp_path):
    """after_grading without the snapshot of before_grading (the engine failing): an ungradable submission,
    never a 0 and never what otter's kernel produced. Without an earlier graded submission otter is left
    without results (NotGraded: it writes no results.json); with one, that one's scores stand, the reason first."""
    require_otter()
    from otter.test_files import GradingResults

    from grader.exports.otter import AutogradLabPlugin, NotGraded
    from grader.policy import limits

    results = GradingResults.without_results(RuntimeError("the kernel died"))
    with pytest.raises(NotGraded, match="before_grading did not run"):
        AutogradLabPlugin(str(tmp_path / "submission" / "autograd_lab.py"), {}, {"seed": 0}).after_grading(results)
    cat = catalog.load()
    earlier = {"score": 42.5, "tests": [{"name": e.name, "score": e.max_score / 2, "max_score": e.max_score}
                                        for e in cat.exercises]}
    metadata = {"created_at": "2026-12-02T10:00:00+08:00",
                "previous_submissions": [{"submission_time": "2026-12-01T09:00:00+08:00", "score": 42.5,
                                          "results": earlier}]}
    results = GradingResults.without_results(RuntimeError("the kernel died"))
    AutogradLabPlugin(str(tmp_path / "submission" / "autograd_lab.py"), metadata, {"seed": 0}).after_grading(results)
    assert not results.has_catastrophic_failure()
    assert {n: r.score for n, r in results.results.items()} == {e.name: e.max_score / 2 for e in cat.exercises}
    said = results.output
    assert said.startswith(limits.UNGRADABLE) and "before_grading did not run" in said and "Your score stays 42.5" in said


def test_an_ungradable_hand_in_through_the_real_otter_run_writes_no_results(otter_zip, tmp_path):
    """Last term's notebook through the real `otter run`: it stops without a results.json (Gradescope: an
    autograder error the instructor reruns), where before every question got 0 in one."""
    from notebook_support import exported, with_reference, write

    from grader.host.cells import METADATA_KEY

    old = with_reference(exported())
    old["metadata"][METADATA_KEY]["version"] = "2019.2"
    out = tmp_path / "otter"
    run = otter_run(otter_zip, write(old, tmp_path / "autograd_lab.ipynb"), out, check=False)
    assert run.scores == {} and not (out / "results.json").exists(), run.stdout
    assert "NotGraded" in run.stdout and "2019.2" in run.stdout


def test_a_local_otter_run_grades_with_the_zips_course_not_the_installed_one(tmp_path):
    """The zip is exported from a course whose points differ from the installed checkout's (as after
    changing points once the zip was made): the local `otter run` gives the zip's points, as Gradescope
    would, and says which course it used."""
    course_file = course_copy.copy_course(tmp_path / "course")
    data = course_copy.read(course_file)
    first = next(iter(data["exercises"]))
    test = next(iter(data["exercises"][first]["hidden"]))
    data["exercises"][first]["hidden"][test] += 3
    course_copy.write(course_file, data)
    autograder = tmp_path / "autograder.zip"
    python("-m", "grader", "export", "otter", "--course", str(course_file), "--out", str(autograder))
    python("-m", "grader", "submit", str(SOLUTIONS), "--out", str(tmp_path / "reference.zip"))
    run = otter_run(autograder, tmp_path / "reference.zip", tmp_path / "out")
    assert sum(run.scores.values()) == sum(run.max_scores.values()) == FULL_MARKS + 3, run.scores
    assert run.scores[first] == catalog.load().exercise(first).max_score + 3
    assert "(the autograder zip's own)" in run.stdout, run.stdout[-2000:]
