"""The catalogue of exercises and test points, read from `grader/cases/points.yaml`.

The YAML file is the single place that says which exercises exist, which module holds each,
and what every test is worth, public and hidden apart:

    partial_grads:
      module: grad.py
      public:
        test_partial_grads_lecture: 1      # points of the test (shared by its parameter cases)
      hidden:
        test_partial_grads_more: 2

Public tests live in `cases/public/test_<module>.py`, hidden ones in `cases/hidden/...`;
a test the YAML does not list, or a listed test that does not exist, is a configuration
error, reported loudly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

CASES_DIR = Path(__file__).parent / "cases"
POINTS_FILE = CASES_DIR / "points.yaml"
VISIBILITY = {"public": "visible", "hidden": "hidden"}


class CatalogError(ValueError):
    pass


@dataclass(frozen=True)
class TestSpec:
    name: str  # the test function's name
    exercise: str
    folder: str  # "public" or "hidden"
    points: float

    @property
    def visibility(self) -> str:
        return VISIBILITY[self.folder]


@dataclass
class Exercise:
    name: str
    module: str  # "grad.py"
    tests: list[TestSpec] = field(default_factory=list)

    @property
    def module_name(self) -> str:
        return self.module.removesuffix(".py")

    @property
    def max_score(self) -> float:
        return sum(t.points for t in self.tests)


@dataclass
class Catalog:
    exercises: list[Exercise]

    @property
    def modules_by_function(self) -> dict[str, str]:
        return {e.name: e.module_name for e in self.exercises}

    @property
    def modules(self) -> list[str]:
        return list(dict.fromkeys(e.module for e in self.exercises))

    def exercise(self, name: str) -> Exercise:
        for e in self.exercises:
            if e.name == name:
                return e
        raise KeyError(name)

    def test(self, folder: str, name: str) -> TestSpec:
        for e in self.exercises:
            for t in e.tests:
                if t.folder == folder and t.name == name:
                    return t
        raise CatalogError(f"test {folder}/{name} is not listed in {POINTS_FILE.name}")

    def max_score(self, folders: tuple[str, ...] = ("public", "hidden")) -> float:
        return sum(t.points for e in self.exercises for t in e.tests if t.folder in folders)


def parse(data: dict) -> Catalog:
    if not isinstance(data, dict) or not data:
        raise CatalogError("points.yaml must map exercise names to their entries")
    exercises = []
    for name, entry in data.items():
        if not isinstance(entry, dict) or not str(entry.get("module", "")).endswith(".py"):
            raise CatalogError(f"{name}: needs a 'module: <file>.py' entry")
        exercise = Exercise(name=name, module=entry["module"])
        for folder in ("public", "hidden"):
            for test, points in (entry.get(folder) or {}).items():
                if not isinstance(points, (int, float)) or points < 0:
                    raise CatalogError(f"{name}/{test}: points must be a number >= 0")
                exercise.tests.append(TestSpec(test, name, folder, float(points)))
        if not exercise.tests:
            raise CatalogError(f"{name}: lists no tests")
        exercises.append(exercise)
    seen: dict[tuple[str, str], str] = {}
    for e in exercises:
        for t in e.tests:
            if (t.folder, t.name) in seen:
                raise CatalogError(f"test {t.folder}/{t.name} listed under both {seen[(t.folder, t.name)]} and {e.name}")
            seen[(t.folder, t.name)] = e.name
    return Catalog(exercises)


@lru_cache(maxsize=1)
def load(path: Path = POINTS_FILE) -> Catalog:
    with open(path, encoding="utf-8") as f:
        return parse(yaml.safe_load(f))
