"""The course's catalogue: exercises, test points and the scoring rule (`grader/cases/points.yaml`),
the known learner mistakes (`grader/cases/mistakes.yaml`), and the fingerprint of the tests.

points.yaml is the single place that says which exercises exist, which module holds each,
what every test is worth, public and hidden apart, and which tests are the exercise's general case:

    partial_grads:
      module: grad.py
      general: [test_partial_grads_on_random_inputs]   # the general case: random inputs, answers no constant fits
      public:
        test_partial_grads_lecture: 1        # points of the test (shared by its parameter cases)
        test_partial_grads_docstring: 0      # a check without points (the docstring's examples)
      hidden:
        test_partial_grads_on_random_inputs: 2
        test_partial_grads_edge_case: 1.5

The scoring rule, "no points without work" (grader.md, Rules of scoring): a test that is not one of
its exercise's `general` tests earns its points only when every general test of the exercise earned
points too, that is passed on at least one of its random inputs in the same run. So an edge case
whose answer is trivial (zeros, {}, an empty stack), a conventions check, and a public test whose
fixed inputs a hard-coded answer could fit are worth nothing on their own. (Conventions tests also
check the values of the very call whose conventions they judge.) A test whose required general test
did not run (`grader check` runs the public tests only) is judged on its own. `grader.host.scoring`
applies the rule; a test it withholds is reported `failed`, with a message that says why.

Public tests live in `cases/public/test_<module>.py`, hidden ones in `cases/hidden/...`;
a test the YAML does not list, or a listed test that does not exist, is a configuration
error, reported loudly.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

CASES_DIR = Path(__file__).parent / "cases"
POINTS_FILE = CASES_DIR / "points.yaml"
MISTAKES_FILE = CASES_DIR / "mistakes.yaml"
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
    general: tuple[str, ...] = ()  # the tests of the general case; every other test's points need them

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
        general = entry.get("general") or []
        if not isinstance(general, list) or not all(isinstance(g, str) for g in general):
            raise CatalogError(f"{name}: 'general' must be a list of test names")
        exercise = Exercise(name=name, module=entry["module"], general=tuple(general))
        for folder in ("public", "hidden"):
            for test, points in (entry.get(folder) or {}).items():
                if not isinstance(points, (int, float)) or isinstance(points, bool) or points < 0:
                    raise CatalogError(f"{name}/{test}: points must be a number >= 0")
                exercise.tests.append(TestSpec(test, name, folder, float(points)))
        if not exercise.tests:
            raise CatalogError(f"{name}: lists no tests")
        unknown = sorted(set(general) - {t.name for t in exercise.tests})
        if unknown:
            raise CatalogError(f"{name}: general names tests it does not list: {', '.join(unknown)}")
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


# ============================================================================= known mistakes

COMMON = "common"  # the section of mistakes.yaml that every exercise shares


@dataclass(frozen=True)
class Mistake:
    key: str
    en: str
    zh: str
    error: str | None = None  # a piece of an exception's "Type: message" that identifies it

    def described(self, exercise: str, **fill: str) -> dict:
        """The score file's `mistake` field: {id, en, zh}, with {arg} and the like filled in."""
        en, zh = self.en, self.zh
        for name, value in fill.items():
            en, zh = en.replace(f"{{{name}}}", value), zh.replace(f"{{{name}}}", value)
        return {"id": f"{exercise}.{self.key}", "en": en, "zh": zh}


def parse_mistakes(data: dict, exercises: set[str]) -> dict[str, dict[str, Mistake]]:
    if not isinstance(data, dict) or COMMON not in data:
        raise CatalogError("mistakes.yaml must map 'common' and exercise names to their mistakes")
    sections: dict[str, dict[str, Mistake]] = {}
    for section, entries in data.items():
        if section != COMMON and section not in exercises:
            raise CatalogError(f"mistakes.yaml: {section!r} is neither 'common' nor an exercise of points.yaml")
        if not isinstance(entries, dict):
            raise CatalogError(f"mistakes.yaml: {section} must map mistake keys to entries")
        sections[section] = {}
        for key, entry in entries.items():
            if not re.fullmatch(r"[a-z][a-z0-9_]*", str(key)):
                raise CatalogError(f"mistakes.yaml: {section}.{key}: keys are lower_case identifiers")
            if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) and entry[k] for k in ("en", "zh")):
                raise CatalogError(f"mistakes.yaml: {section}.{key} needs 'en' and 'zh' texts")
            if set(entry) - {"en", "zh", "error"}:
                raise CatalogError(f"mistakes.yaml: {section}.{key}: unknown fields {sorted(set(entry) - {'en', 'zh', 'error'})}")
            sections[section][key] = Mistake(key, entry["en"], entry["zh"], entry.get("error"))
    return sections


@lru_cache(maxsize=1)
def load_mistakes(path: Path = MISTAKES_FILE) -> dict[str, dict[str, Mistake]]:
    with open(path, encoding="utf-8") as f:
        return parse_mistakes(yaml.safe_load(f), {e.name for e in load().exercises})


def mistake(exercise: str, key: str) -> Mistake:
    """The mistake `key` as the exercise knows it: its own entry, else the common one."""
    sections = load_mistakes()
    found = sections.get(exercise, {}).get(key) or sections[COMMON].get(key)
    if found is None:
        raise CatalogError(f"mistake {key!r} of {exercise} is not listed in {MISTAKES_FILE.name}")
    return found


def error_mistake(exercise: str, error_text: str) -> str | None:
    """The key of the mistake an exception ("Type: message") in this exercise means, if known."""
    sections = load_mistakes()
    for section in (sections.get(exercise, {}), sections[COMMON]):
        for key, m in section.items():
            if m.error and m.error in error_text:
                return key
    return None


# ============================================================================= the tests' fingerprint

FINGERPRINT_SUFFIXES = (".py", ".yaml", ".json", ".ini")


def tests_sha256(cases_dir: Path = CASES_DIR) -> str:
    """A hash of the test cases (public and hidden), points.yaml, mistakes.yaml and the grader's
    version: with the seed and the device it decides whether `--resume` may keep a score file."""
    import grader

    digest = hashlib.sha256(f"grader {grader.__version__}\0".encode())
    for path in sorted(p for p in cases_dir.rglob("*") if p.is_file() and p.suffix in FINGERPRINT_SUFFIXES
                       and "__pycache__" not in p.parts):
        digest.update(path.relative_to(cases_dir).as_posix().encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()
