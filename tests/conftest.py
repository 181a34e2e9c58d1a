"""Shared fixtures: one grading engine per test session, and submissions built on the fly."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from grader import catalog
from grader.host.runner import Engine, Options

ROOT = Path(__file__).resolve().parent.parent
# The course the tests grade: this project's, or the course file AUTOGRAD_LAB_TEST_COURSE names (a changed
# copy: tests/test_course_changes.py runs the course-dependent tests on one). Its solutions and stubs too.
TEST_COURSE = os.environ.get("AUTOGRAD_LAB_TEST_COURSE") or None
COURSE = catalog.use(TEST_COURSE) if TEST_COURSE else catalog.load()
SOLUTIONS = COURSE.place("solutions") or ROOT / "solutions"
STUBS = COURSE.place("stubs") or ROOT / "exercises"
SUBMISSIONS = ROOT / "tests" / "submissions"
FULL_MARKS = COURSE.max_score()  # the course's total: what the reference scores
OTTER_RUNS: list[tuple[str, float]] = []  # (what ran, wall seconds) of otter runs, shown after the tests


# In CI (CI=1) a skipped test is a failure: a test skipped because a tool or an extra is missing would
# pass for code it never ran. Only these reasons are facts about the machine, not about the set-up.
SKIPS_ALLOWED_IN_CI = ("needs a GPU", "needs a machine with a GPU")
SKIPPED: list[str] = []


def venv_tool(name: str) -> Path | None:
    """A command installed beside the Python that runs the tests (the venv's bin/), never one found on
    PATH: a global install would make a green run that a fresh machine cannot repeat."""
    path = Path(sys.executable).parent / name
    return path if path.is_file() and os.access(path, os.X_OK) else None


def _record_skip(report) -> None:
    # A strict xfail is not a skip: it ran, and it fails the run if the gap it marks closes (docs/security.md).
    if report.skipped and not hasattr(report, "wasxfail"):
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        if not str(reason).removeprefix("Skipped: ").startswith(SKIPS_ALLOWED_IN_CI):
            SKIPPED.append(f"{report.nodeid}: {reason}")


def pytest_runtest_logreport(report):
    _record_skip(report)


def pytest_collectreport(report):
    _record_skip(report)


def pytest_sessionfinish(session, exitstatus):
    if os.environ.get("CI") and SKIPPED and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_report_header(config):
    return f"course: {COURSE.path} ({len(COURSE.exercises)} exercises, {FULL_MARKS:g} points)"


def pytest_terminal_summary(terminalreporter):
    if os.environ.get("CI") and SKIPPED:
        terminalreporter.section("CI: skipped tests count as failures")
        for line in SKIPPED:
            terminalreporter.write_line(line)
    if OTTER_RUNS:
        terminalreporter.section("otter runs: wall time")
        for what, seconds in OTTER_RUNS:
            terminalreporter.write_line(f"{seconds:6.1f} s  {what}")


@pytest.fixture(scope="session")
def engine():
    """Grades with public and hidden tests, seed 0, on the CPU."""
    e = Engine(Options(seed=0, course=TEST_COURSE))
    yield e
    e.close()


@pytest.fixture(scope="session")
def public_engine():
    e = Engine(Options(seed=0, folders=("public",), course=TEST_COURSE))
    yield e
    e.close()


@pytest.fixture(scope="session")
def validated(tmp_path_factory):
    """`grader validate` on this course, run once as an instructor runs it (a subprocess): its exit status,
    its output, and the score files it graded at seed 0 (`report("mistake-<name>")`, "lazy-<mode>",
    "reference", "stubs"). The corpus tests read those instead of grading the corpus again."""
    scores = tmp_path_factory.mktemp("validate") / "scores"
    course = ["--course", TEST_COURSE] if TEST_COURSE else []
    done = subprocess.run([sys.executable, "-m", "grader", "validate", "--scores", str(scores), *course], cwd=ROOT,
                          capture_output=True, text=True, timeout=1800)
    return SimpleNamespace(returncode=done.returncode, stdout=done.stdout, stderr=done.stderr, scores=scores,
                           report=lambda name: json.loads((scores / f"{name}.json").read_text()))


def make_submission(folder: Path, overrides: dict[str, str | bytes] | None = None, base: Path = SOLUTIONS) -> Path:
    """A submission folder: the modules of `base`, with some modules' sources replaced."""
    folder.mkdir(parents=True, exist_ok=True)
    for module in base.glob("*.py"):
        shutil.copy(module, folder / module.name)
    for name, source in (overrides or {}).items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(source if isinstance(source, bytes) else source.encode())
    return folder


def scores(report: dict) -> dict[str, float]:
    return {e["name"]: e["score"] for e in report["exercises"]}


def max_scores(report: dict) -> dict[str, float]:
    return {e["name"]: e["max_score"] for e in report["exercises"]}


def lost(report: dict) -> set[str]:
    """Exercises that did not get full marks."""
    return {e["name"] for e in report["exercises"] if e["score"] < e["max_score"]}


def public_passed(report: dict, exercise: str) -> bool:
    entry = next(e for e in report["exercises"] if e["name"] == exercise)
    return all(t["status"] == "passed" for t in entry["tests"] if t["visibility"] == "visible")


# The hostile corpus holds planted conftest.py, torch.py and the like: never collect or import it.
collect_ignore_glob = ["submissions/*"]
