"""Shared fixtures: one grading engine per test session, and submissions built on the fly."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from grader.runner import Engine, Options

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
STUBS = ROOT / "exercises"
SUBMISSIONS = ROOT / "tests" / "submissions"
OTTER_RUNS: list[tuple[str, float]] = []  # (what ran, wall seconds) of otter runs, shown after the tests


def pytest_terminal_summary(terminalreporter):
    if OTTER_RUNS:
        terminalreporter.section("otter runs: wall time")
        for what, seconds in OTTER_RUNS:
            terminalreporter.write_line(f"{seconds:6.1f} s  {what}")


@pytest.fixture(scope="session")
def engine():
    """Grades with public and hidden tests, seed 0, on the CPU."""
    e = Engine(Options(seed=0))
    yield e
    e.close()


@pytest.fixture(scope="session")
def public_engine():
    e = Engine(Options(seed=0, folders=("public",)))
    yield e
    e.close()


def make_submission(folder: Path, overrides: dict[str, str | bytes] | None = None, base: Path = SOLUTIONS) -> Path:
    """A submission folder: the six modules of `base`, with some modules' sources replaced."""
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
