"""An exercise in one place: docs/authoring.md's walk-through, applied to a copy of the project.

The test copies the project to a temporary folder, applies exactly the steps of docs/authoring.md
(each fenced block after a `<!-- append: PATH -->` or `<!-- create: PATH -->` marker), and grades, with
the copy's own grader, the reference (full marks), the stubs (0) and the new learner mistake (caught on
its own exercise, by its id, and nowhere else). The files the steps touch are the exercise's own.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT

GUIDE = ROOT / "docs" / "authoring.md"
STEP = re.compile(r"<!-- (append|create): (\S+) -->\n```[a-z]*\n(.*?)```", re.S)
NEW = "directional_derivative"
# What adding an exercise touches, and nothing else: its stub, its solution, its helper (next to its
# public tests), its public and hidden tests, its course file entry, and a learner mistake.
OWN_FILES = ["exercises/grad.py", "solutions/grad.py", "grader/cases/public/helpers.py",
             "grader/cases/public/test_grad.py", "grader/cases/hidden/test_grad.py", "grader/cases/course.yaml",
             f"tests/submissions/wrong/{NEW}_gradient_sum.py"]


def steps() -> list[tuple[str, str, str]]:
    return STEP.findall(GUIDE.read_text(encoding="utf-8"))


def apply_steps(copy: Path) -> list[str]:
    """Apply the guide's steps in `copy`; returns the files they touched, in order."""
    touched = []
    for action, path, text in steps():
        target = copy / path
        if action == "create":
            assert not target.exists(), path
            target.write_text(text, encoding="utf-8")
        else:
            target.write_text(target.read_text(encoding="utf-8") + text, encoding="utf-8")
        touched.append(path)
    return touched


@pytest.fixture(scope="module")
def project_copy(tmp_path_factory):
    """A copy of the project with the guide's steps applied: (its folder, the files the steps touched)."""
    copy = tmp_path_factory.mktemp("authoring") / "project"
    ignore = shutil.ignore_patterns("__pycache__")
    for folder in ("grader", "exercises", "solutions", "tests/submissions/wrong"):
        shutil.copytree(ROOT / folder, copy / folder, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", copy)
    return copy, apply_steps(copy)


def grader_in(copy: Path, *args: str) -> subprocess.CompletedProcess:
    """The copy's own grader (its package first on the path), run in the copy."""
    env = {**os.environ, "PYTHONPATH": str(copy)}
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=copy, env=env, capture_output=True, text=True,
                          timeout=900)


def test_the_guide_touches_only_the_exercises_own_files(project_copy):
    _, touched = project_copy
    assert sorted(set(touched)) == sorted(OWN_FILES)
    assert len(set(touched)) == 7


def test_the_new_exercise_grades_reference_stubs_and_mistake(project_copy):
    copy, _ = project_copy
    mistake = copy / "mistake"
    shutil.copytree(copy / "solutions", mistake)
    wrong = (copy / "tests/submissions/wrong" / f"{NEW}_gradient_sum.py").read_text()
    (mistake / "grad.py").write_text((copy / "solutions/grad.py").read_text() + "\n\n" + wrong)
    done = grader_in(copy, "grade", "solutions", "exercises", "mistake", "--out", "out")
    assert done.returncode == 0, done.stderr[-3000:]
    reports = {name: json.loads((copy / "out" / f"{name}.json").read_text())
               for name in ("solutions", "exercises", "mistake")}
    reference, stubs, wrong_report = reports["solutions"], reports["exercises"], reports["mistake"]

    new = next(e for e in reference["exercises"] if e["name"] == NEW)
    modules = [e["module"] for e in reference["exercises"]]  # appended last, it sits with its module's others
    assert modules == sorted(modules, key=list(dict.fromkeys(modules)).index), modules
    assert new["module"] == "grad.py" and new["max_score"] == 3
    assert reference["score"] == reference["max_score"]
    assert [t["name"] for e in reference["exercises"] for t in e["tests"] if t["status"] != "passed"] == []
    assert stubs["score"] == 0 and any(e["name"] == NEW for e in stubs["exercises"])

    lost = {e["name"] for e in wrong_report["exercises"] if e["score"] < e["max_score"]}
    assert lost == {NEW}
    failed = [t for e in wrong_report["exercises"] if e["name"] == NEW for t in e["tests"] if t["status"] != "passed"]
    assert any((t.get("mistake") or {}).get("id") == f"{NEW}.gradient_sum" for t in failed), failed


def test_the_new_exercise_ships_in_the_student_bundle_without_its_hidden_test(project_copy, tmp_path):
    copy, _ = project_copy
    done = grader_in(copy, "export", "student", "--out", str(tmp_path / "student.zip"))
    assert done.returncode == 0, done.stdout + done.stderr
    with zipfile.ZipFile(tmp_path / "student.zip") as zf:
        text = b"".join(zf.read(n) for n in zf.namelist()).decode("utf-8", errors="replace")
    assert f"def {NEW}" in text and "test_directional_derivative_small" in text
    assert "test_directional_derivative_random" not in text
