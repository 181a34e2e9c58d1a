"""A second course, graded by the same engine: a copy of one module of this course, renamed.

`--course PATH` on `grader check`, `grade`, `validate` and the exports points the grader at another
course file; nothing of the engine changes. The second course here is `grad.py` as `derivatives.py`:
its stubs, solutions, public and hidden tests (with a copy of the oracle), helpers, course file and
learner mistakes, in a folder of its own.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path

import pytest
import yaml

from grader import catalog
from grader.host.launcher import hidden_paths, readonly_paths
from grader.host.plugin import GradingPlugin
from grader.host.runner import Engine, Options
from grader.host.session import GradingSession
from grader.validate import mistakes as corpus

from conftest import ROOT, SOLUTIONS, STUBS, SUBMISSIONS, make_submission

COURSE = catalog.load()
SOURCE, RENAMED = "grad.py", "derivatives.py"


def make_course(folder: Path, mistakes: list[str] | None = None) -> Path:
    """The second course in `folder`; `mistakes`: the learner mistakes to copy (default: all of grad.py's)."""
    data = yaml.safe_load(COURSE.path.read_text(encoding="utf-8"))
    data.update(course="derivatives", stubs="exercises", solutions="solutions", learner_mistakes="wrong",
                helpers=["public/helpers.py"], modules={RENAMED: data["modules"][SOURCE]},
                exercises={n: {**e, "module": RENAMED} for n, e in data["exercises"].items() if e["module"] == SOURCE})
    for part in ("public", "hidden", "exercises", "solutions", "wrong"):
        (folder / part).mkdir(parents=True)
    (folder / "course.yaml").write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    cases = catalog.CASES_DIR
    for part in ("public", "hidden"):
        (folder / part / "__init__.py").write_text("")
        shutil.copy(cases / part / f"test_{SOURCE}", folder / part / f"test_{RENAMED}")
    shutil.copy(cases / "public" / "helpers.py", folder / "public")
    shutil.copy(cases / "public" / "finite_differences.py", folder / "public")  # the properties' public oracles
    shutil.copy(cases / "hidden" / "oracle.py", folder / "hidden")
    shutil.copy(STUBS / SOURCE, folder / "exercises" / RENAMED)
    shutil.copy(SOLUTIONS / SOURCE, folder / "solutions" / RENAMED)
    for path in sorted((SUBMISSIONS / "wrong").glob("*.py")):
        text = path.read_text()
        if f'MODULE = "{SOURCE}"' in text and (mistakes is None or path.stem in mistakes):
            (folder / "wrong" / path.name).write_text(text.replace(f'MODULE = "{SOURCE}"', f'MODULE = "{RENAMED}"'))
    return folder


def run(*args: str, cwd: Path = ROOT, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=900, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def second(tmp_path_factory) -> Path:
    return make_course(tmp_path_factory.mktemp("courses") / "derivatives")


def test_the_second_course_is_graded_with_its_own_modules_and_points(second, tmp_path):
    done = run("grade", "--course", str(second / "course.yaml"), str(second / "solutions"), str(second / "exercises"),
               "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr[-3000:]
    reference = json.loads((tmp_path / "out" / "solutions.json").read_text())
    stubs = json.loads((tmp_path / "out" / "exercises.json").read_text())
    names = list(catalog.load(second).modules_by_function)
    assert [e["name"] for e in reference["exercises"]] == names == list(COURSE.exercises_in(SOURCE))
    assert {e["module"] for e in reference["exercises"]} == {RENAMED}
    assert reference["score"] == reference["max_score"] == catalog.load(second).max_score() > 0
    assert stubs["score"] == 0
    check = run("check", "--course", str(second), str(second / "solutions"))  # a folder names its course.yaml
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"{len(names)} of {len(names)} exercises pass" in check.stdout


# One mistake named by the error the student's code raised (the course file's `error:` text), one by
# the test's own comparison (`close(..., mistakes=...)`).
TWO_WAYS = ["partial_grads_no_allow_unused", "hvp_sum_instead_of_v"]
MARK = "[derivatives] "


@pytest.mark.slow  # two engines, about 40 s
def test_two_courses_in_one_process_each_name_their_own_mistakes(tmp_path):
    """Two engines in one process (as a Dask worker may hold), this course's and the second's, whose
    mistakes read differently: each submission's mistakes come from its own engine's course, whichever
    engine started last and in whatever order they grade. Nothing reads a course of the process."""
    folder = make_course(tmp_path / "derivatives", mistakes=TWO_WAYS)
    data = yaml.safe_load((folder / "course.yaml").read_text(encoding="utf-8"))
    for exercise in data["exercises"].values():
        for mistake in exercise.get("mistakes", {}).values():
            mistake["en"] = MARK + mistake["en"]
    (folder / "course.yaml").write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    courses = {"autograd-lab": (COURSE, None, SUBMISSIONS / "wrong"),
               "derivatives": (catalog.load(folder), str(folder / "course.yaml"), folder / "wrong")}
    only = {"partial_grads", "hvp"}
    engines = {"autograd-lab": Engine(Options(seed=0, exercises=only))}
    engines["derivatives"] = Engine(Options(seed=0, exercises=only, course=courses["derivatives"][1]), slot=1)
    path_before = list(sys.path)
    try:
        for name in TWO_WAYS + TWO_WAYS[::-1]:  # interleaved: first, second, second, first
            for which in (["autograd-lab", "derivatives"] if name == TWO_WAYS[0] else ["derivatives", "autograd-lab"]):
                course, _, wrong = courses[which]
                entry = corpus.read_folder(wrong)[name]
                sub = make_submission(tmp_path / which / name, corpus.submission_modules(entry, course),
                                      base=course.place("solutions"))
                report = engines[which].grade(sub)
                found = [t["mistake"] for e in report["exercises"] if e["name"] == entry["EXERCISE"]
                         for t in e["tests"] if t.get("mistake")]
                assert entry["MISTAKE"] in {m["id"] for m in found}, (which, name)
                assert {e["module"] for e in report["exercises"]} == {RENAMED if which == "derivatives" else SOURCE}
                marked = {m["en"].startswith(MARK) for m in found if m["id"] == entry["MISTAKE"]}
                assert marked == {which == "derivatives"}, (which, name, found)
    finally:
        for engine in engines.values():
            engine.close()
    assert added_folders(path_before) == []  # the sessions put back what pytest added (the test below)


def added_folders(before: list[str]) -> list[str]:
    """The folders on sys.path now that were not before, or are there more often (not a path hook's entry)."""
    return [p for p in Counter(sys.path) - Counter(before) if os.path.isdir(p)]


def test_collecting_a_course_leaves_nothing_for_later_engines(tmp_path):
    """pytest puts a course's case folder on sys.path and its case packages in sys.modules by bare
    names (`hidden.test_derivatives`). Left there, every later engine of the process bound the folder
    into its workers' sandboxes (`readonly_paths`: another course's hidden tests readable), and a
    second course laid out the same could not be collected. The session puts them back."""
    first, second = (catalog.load(make_course(tmp_path / n / "derivatives", mistakes=[])) for n in ("a", "b"))
    folders = ("public", "hidden")
    path_before = list(sys.path)
    sessions = []
    try:
        for course in (first, second):
            plugin = GradingPlugin(course, folders, "cpu", 0, {"hvp"})
            sessions.append(GradingSession(plugin, course, folders))
            assert plugin.errors == [], plugin.errors
        assert added_folders(path_before) == []
        secret = str(first.folder("hidden"))
        for course in (COURSE, second):
            bound = readonly_paths(hidden_paths(course))
            assert not [p for p in bound if secret == p or secret.startswith(p.rstrip("/") + "/")], bound
        loaded = {getattr(m, "__file__", None) for m in list(sys.modules.values())}
        assert str(first.folder("hidden") / "oracle.py") in loaded  # still seen as loaded (may_fork_zygote)
        assert "hidden" not in sys.modules and "public" not in sys.modules
    finally:
        for session in sessions:
            session.close()
        sys.path[:] = path_before  # only a failure here has anything to put back: it must not spread


def test_validate_audits_the_second_course(second):
    done = run("validate", "--course", str(second))
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if line.split()[:1] and line.split()[0] in
            catalog.load(second).modules_by_function]
    assert [r[0] for r in rows] == list(COURSE.exercises_in(SOURCE)) and {r[1] for r in rows} == {RENAMED}
    assert "every check held" in done.stdout


def test_validate_names_what_is_wrong_and_exits_1(tmp_path):
    """A learner mistake that is no mistake, and a stub that ships an answer: both named, exit 1."""
    course = make_course(tmp_path / "broken", mistakes=["hvp_sum_instead_of_v", "partial_grads_none_for_unused",
                                                        "nth_derivative_no_create_graph", "jacobian_rows_grad_of_sum"])
    (course / "wrong" / "hvp_sum_instead_of_v.py").write_text(
        '"""Not a mistake at all: the reference\'s own hvp."""\nEXERCISE = "hvp"\nMODULE = "derivatives.py"\n'
        'PUBLIC = "fail"\nMISTAKE = "hvp.hvp_of_sum"\n')
    stub = course / "exercises" / RENAMED
    stub.write_text(stub.read_text() + "\n\ndef jacobian_rows(f, x):\n    return x\n")
    done = run("validate", "--course", str(course), "--seeds", "0")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "learner mistake hvp_sum_instead_of_v should lose points on hvp only; it loses on nothing" in done.stdout
    assert "the student bundle: autograd-lab-student/exercises/derivatives.py: jacobian_rows does not raise " \
           "NotImplementedError" in done.stdout


def test_the_exports_carry_the_second_course_in_the_packages_place(second, tmp_path):
    """The student bundle and the Gradescope autograder of the second course grade it without being told."""
    done = run("export", "student", "--course", str(second), "--out", str(tmp_path / "student.zip"))
    assert done.returncode == 0, done.stdout + done.stderr
    with zipfile.ZipFile(tmp_path / "student.zip") as zf:
        names = set(zf.namelist())
        zf.extractall(tmp_path / "student")
    top = "autograd-lab-student"
    assert f"{top}/exercises/{RENAMED}" in names and f"{top}/grader/cases/public/test_{RENAMED}" in names
    assert not [n for n in names if "hidden" in n or n.endswith(f"/{SOURCE}") or "test_grad" in n]
    check = run("check", str(second / "solutions"), cwd=tmp_path, env={"PYTHONPATH": str(tmp_path / "student" / top)})
    assert check.returncode == 0, check.stdout + check.stderr

    done = run("export", "gradescope", "--course", str(second), "--out", str(tmp_path / "gradescope.zip"))
    assert done.returncode == 0, done.stdout + done.stderr
    with zipfile.ZipFile(tmp_path / "gradescope.zip") as zf:
        zf.extractall(tmp_path / "gradescope")
    package = tmp_path / "gradescope" / "autograd_lab"
    assert (package / "grader" / "cases" / "hidden" / f"test_{RENAMED}").is_file()
    graded = run("grade", str(second / "solutions"), "--out", str(tmp_path / "out"), cwd=tmp_path,
                 env={"PYTHONPATH": str(package)})
    assert graded.returncode == 0, graded.stderr[-3000:]
    report = json.loads((tmp_path / "out" / "solutions.json").read_text())
    assert {e["module"] for e in report["exercises"]} == {RENAMED}
    assert report["score"] == report["max_score"] == catalog.load(second).max_score()
