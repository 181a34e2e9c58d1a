"""The course: one file (`grader/cases/course.yaml` by default) and what derives from it.

The course file lists the modules a submission holds, the exercises of each, what every test is
worth (public and hidden apart), each exercise's `general` tests (the scoring rule below), its
learner mistakes and facts such as "ships with code to repair", the mistakes every exercise shares,
and where the course's folders are (stubs, solutions, test folders, worker-side helpers, learner
mistakes). Its own comments describe each field; docs/authoring.md walks through adding an exercise.

    exercises:
      partial_grads:
        module: grad.py
        general: [test_partial_grads_on_random_inputs]   # the general case: random inputs, answers no constant fits
        public:
          test_partial_grads_lecture: 1          # points of the test (shared by its parameter cases)
          test_partial_grads_docstring: 0        # a check without points (the docstring's examples)
        hidden:
          test_partial_grads_on_random_inputs: 2
        mistakes:
          no_allow_unused: {en: "...", zh: "..."}

The scoring rule, "no points without work" (docs/scoring.md): a test that is not one of
its exercise's `general` tests earns its points only when every general test of the exercise earned
points too, that is passed on at least one of its random inputs in the same run. (Conventions tests
also check the values of the very call whose conventions they judge.) A test whose required general
test did not run (`grader check` runs the public tests only) is judged on its own.
`grader.host.scoring` applies the rule; a test it withholds is reported `failed`, with a message that
says why. A test the course file does not list, or a listed test that does not exist, is a
configuration error, reported loudly.

One course is active per process: the default, or the one `use(path)` chose (`--course PATH`);
`load()` returns it. Everything is read, never run: the course's code (tests, oracle, helpers) is
loaded by the engine (`grader.host`) and by the workers' zygote.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

from grader.errors import UsageError

CASES_DIR = Path(__file__).parent / "cases"
DEFAULT_COURSE = CASES_DIR / "course.yaml"
FOLDERS = ("public", "hidden")
VISIBILITY = {"public": "visible", "hidden": "hidden"}
COURSE_KEYS = {"course", "version", "stubs", "solutions", "learner_mistakes", "public", "hidden", "helpers", "modules",
               "mistakes", "exercises", "counterexamples", "properties"}
COUNTEREXAMPLE_KEYS = {"show", "calls", "seconds", "examples"}
PROPERTY_KEYS = {"calls", "seconds", "examples"}
EXERCISE_KEYS = {"module", "general", "public", "hidden", "repair", "mistakes", "property"}
MISTAKE_KEYS = {"en", "zh", "error"}


class CatalogError(UsageError, ValueError):
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


@dataclass(frozen=True)
class CounterexampleSearch:
    """The course file's `counterexamples:`: whether a failed exercise's score file gets the smallest input
    found that shows its mistake, and the search's budget per failing exercise (grader.host.counterexample)."""

    show: bool = True  # false (an exam): no search, nothing in what students see
    calls: int = 100  # calls of the student's function, drawing and shrinking together
    seconds: float = 5.0  # wall-clock seconds, the student's calls and the grader's work together
    examples: int = 30  # fresh inputs drawn before the first failure is shrunk


@dataclass(frozen=True)
class PropertyChecks:
    """The course file's `properties:`: the budget of each exercise's property check in `grader check` (its
    public property test run on fresh inputs drawn by Hypothesis, the first failure shrunk; grader.host.properties)."""

    calls: int = 80  # calls of the student's function, drawing and shrinking together
    seconds: float = 15.0  # wall-clock seconds per exercise (a safety net: the calls decide, so a seed repeats)
    examples: int = 20  # fresh inputs drawn before the first failure is shrunk


@dataclass
class Exercise:
    name: str
    module: str  # "grad.py"
    tests: list[TestSpec] = field(default_factory=list)
    general: tuple[str, ...] = ()  # the tests of the general case; every other test's points need them
    repair: bool = False  # the stub ships code to repair instead of raising NotImplementedError
    mistakes: dict[str, Mistake] = field(default_factory=dict)  # its own learner mistakes, by key
    property_name: str | None = None  # the course file's `property:`: its public property test, run by `grader check` only, worth no points

    @property
    def property_spec(self) -> TestSpec | None:
        """The property test as a public test worth 0 points (never one of `tests`: no score file lists it)."""
        return TestSpec(self.property_name, self.name, "public", 0.0) if self.property_name else None

    @property
    def module_name(self) -> str:
        return self.module.removesuffix(".py")

    @property
    def max_score(self) -> float:
        return sum(t.points for t in self.tests)


@dataclass
class Course:
    """One course file, read: its modules, exercises, tests and points, learner mistakes and folders."""

    exercises: list[Exercise]
    path: Path = DEFAULT_COURSE  # the course file
    name: str = "course"
    version: str = ""  # the assignment's version (a term, a revision): a notebook of another one is refused
    module_info: dict[str, dict] = field(default_factory=dict)  # module file -> its facts (lecture, ...)
    common_mistakes: dict[str, Mistake] = field(default_factory=dict)
    places: dict[str, str] = field(default_factory=dict)  # stubs, solutions, learner_mistakes, public, hidden
    helper_files: tuple[str, ...] = ()  # worker-side helpers, relative to the course file
    counterexamples: CounterexampleSearch = field(default_factory=CounterexampleSearch)
    properties: PropertyChecks = field(default_factory=PropertyChecks)

    def property_test(self, name: str) -> TestSpec | None:
        """The spec of the property test `name` (a public test function), None when no exercise names it."""
        return next((e.property_spec for e in self.exercises if e.property_name == name), None)

    @property
    def module_of_exercise(self) -> dict[str, str]:
        """Exercise (a function or class name) -> the module it lives in ("partial_grads" -> "grad")."""
        return {e.name: e.module_name for e in self.exercises}

    modules_by_function = module_of_exercise  # the old name

    @property
    def modules(self) -> list[str]:
        return list(self.module_info) or list(dict.fromkeys(e.module for e in self.exercises))

    @property
    def root(self) -> Path:
        return self.path.resolve().parent

    def place(self, key: str) -> Path | None:
        """A folder the course file names (stubs, solutions, learner_mistakes, public, hidden), or None."""
        default = key if key in FOLDERS else None
        where = self.places.get(key, default)
        return None if where is None else _resolved(self.path, where)

    def folder(self, folder: str) -> Path:
        """The test folder of `public` or `hidden` tests."""
        return self.place(folder)

    @property
    def helpers(self) -> list[Path]:
        return [(self.root / h).resolve() for h in self.helper_files]

    def exercise(self, name: str) -> Exercise:
        for e in self.exercises:
            if e.name == name:
                return e
        raise KeyError(name)

    def unknown_exercises(self, asked) -> str:
        """"" when every name asked for is one of the course's exercises; else what a student reads,
        in English and Chinese, with the names meant where one is close ("hpv": did you mean hvp?)."""
        names = [e.name for e in self.exercises]
        unknown = [a for a in dict.fromkeys(asked) if a not in names]
        if not unknown:
            return ""
        import difflib

        guesses = {a: difflib.get_close_matches(a, names, n=1, cutoff=0.6) for a in unknown}
        meant = [f"{a} -> {g[0]}" for a, g in guesses.items() if g]
        listed = ", ".join(sorted(names))
        en = f"unknown exercise {', '.join(unknown)}" + (f"; did you mean: {', '.join(meant)}?" if meant else "")
        zh = f"没有这道题：{'、'.join(unknown)}" + (f"；你是不是想写：{'、'.join(meant)}？" if meant else "")
        return f"{en}\n  {zh}\n  the exercises are / 所有题目：{listed}"

    def exercises_in(self, module: str) -> tuple[str, ...]:
        """The names of the exercises a module ("grad.py") holds, in order."""
        return tuple(e.name for e in self.exercises if e.module == module)

    def test(self, folder: str, name: str) -> TestSpec:
        for e in self.exercises:
            for t in e.tests:
                if t.folder == folder and t.name == name:
                    return t
        raise CatalogError(f"test {folder}/{name} is not listed in {self.path.name}")

    def max_score(self, folders: tuple[str, ...] = FOLDERS) -> float:
        return sum(t.points for e in self.exercises for t in e.tests if t.folder in folders)

    def mistake(self, exercise: str, key: str) -> Mistake:
        """The mistake `key` as the exercise knows it: its own entry, else the common one."""
        own = self.exercise(exercise).mistakes if exercise in self.modules_by_function else {}
        found = own.get(key) or self.common_mistakes.get(key)
        if found is None:
            raise CatalogError(f"mistake {key!r} of {exercise} is not listed in {self.path.name}")
        return found

    def error_mistake(self, exercise: str, error_text: str) -> str | None:
        """The key of the mistake an exception ("Type: message") in this exercise means, if known."""
        own = self.exercise(exercise).mistakes if exercise in self.modules_by_function else {}
        for section in (own, self.common_mistakes):
            for key, m in section.items():
                if m.error and m.error in error_text:
                    return key
        return None


# ============================================================================= reading the course file

Catalog = Course  # the old name of a course


def parse(data: dict, path: Path = DEFAULT_COURSE) -> Catalog:
    """The course a course file's data describes; CatalogError says what is wrong with it."""
    if not isinstance(data, dict) or not isinstance(data.get("exercises"), dict) or not data["exercises"]:
        raise CatalogError(f"{path.name}: needs `exercises:`, mapping exercise names to their entries")
    unknown = sorted(set(data) - COURSE_KEYS)
    if unknown:
        raise CatalogError(f"{path.name}: unknown keys {unknown}; a course file has {sorted(COURSE_KEYS)}")
    modules = data.get("modules") or {}
    if not isinstance(modules, dict) or not all(str(m).endswith(".py") for m in modules):
        raise CatalogError(f"{path.name}: `modules:` maps module files (<name>.py) to their facts")
    helpers = data.get("helpers") or []
    if not isinstance(helpers, list) or not all(isinstance(h, str) and h.endswith(".py") for h in helpers):
        raise CatalogError(f"{path.name}: `helpers:` is a list of .py files")
    places = {key: str(data[key]) for key in ("stubs", "solutions", "learner_mistakes", *FOLDERS) if data.get(key)}
    exercises = [_exercise(name, entry, modules) for name, entry in data["exercises"].items()]
    order = {m: n for n, m in enumerate(modules)}  # an exercise sits with its module, wherever the file lists it
    exercises.sort(key=lambda e: order.get(e.module, len(order)))
    seen: dict[tuple[str, str], str] = {}
    for e in exercises:
        for t in e.tests:
            if (t.folder, t.name) in seen:
                raise CatalogError(f"test {t.folder}/{t.name} listed under both {seen[(t.folder, t.name)]} and {e.name}")
            seen[(t.folder, t.name)] = e.name
    unused = [m for m in modules if not any(e.module == m for e in exercises)]
    if unused:
        raise CatalogError(f"{path.name}: modules without an exercise: {', '.join(unused)}")
    return Catalog(exercises=exercises, path=Path(path), name=str(data.get("course") or Path(path).parent.name),
                   version=str(data.get("version") or ""),
                   module_info={m: dict(info or {}) for m, info in modules.items()},
                   common_mistakes=_mistakes("mistakes", data.get("mistakes") or {}),
                   places=places, helper_files=tuple(helpers),
                   counterexamples=_counterexamples(path, data.get("counterexamples") or {}),
                   properties=_properties(path, data.get("properties") or {}))


def _properties(path: Path, entry) -> PropertyChecks:
    if not isinstance(entry, dict) or set(entry) - PROPERTY_KEYS:
        raise CatalogError(f"{path.name}: `properties:` has the keys {sorted(PROPERTY_KEYS)}")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in entry.values()):
        raise CatalogError(f"{path.name}: `properties:` calls, seconds and examples are numbers above 0")
    return PropertyChecks(**entry)


def _counterexamples(path: Path, entry) -> CounterexampleSearch:
    if not isinstance(entry, dict) or set(entry) - COUNTEREXAMPLE_KEYS:
        raise CatalogError(f"{path.name}: `counterexamples:` has the keys {sorted(COUNTEREXAMPLE_KEYS)}")
    search = CounterexampleSearch(**entry)
    if type(search.show) is not bool or not all(isinstance(v, (int, float)) and v >= 0
                                                 for v in (search.calls, search.seconds, search.examples)):
        raise CatalogError(f"{path.name}: `counterexamples:` show is true or false; calls, seconds, examples are numbers")
    return search


def _exercise(name: str, entry, modules: dict) -> Exercise:
    if not isinstance(entry, dict) or not str(entry.get("module", "")).endswith(".py"):
        raise CatalogError(f"{name}: needs a 'module: <file>.py' entry")
    if modules and entry["module"] not in modules:
        raise CatalogError(f"{name}: its module {entry['module']} is not one of `modules:`")
    unknown = sorted(set(entry) - EXERCISE_KEYS)
    if unknown:
        raise CatalogError(f"{name}: unknown keys {unknown}; an exercise has {sorted(EXERCISE_KEYS)}")
    general = entry.get("general") or []
    if not isinstance(general, list) or not all(isinstance(g, str) for g in general):
        raise CatalogError(f"{name}: 'general' must be a list of test names")
    if not isinstance(entry.get("repair", False), bool):
        raise CatalogError(f"{name}: 'repair' is true or false")
    prop = entry.get("property")
    if prop is not None and (not isinstance(prop, str) or not prop.startswith("test_")):
        raise CatalogError(f"{name}: 'property' names one public test function (test_...)")
    exercise = Exercise(name=name, module=entry["module"], general=tuple(general), repair=entry.get("repair", False),
                        mistakes=_mistakes(name, entry.get("mistakes") or {}), property_name=prop)
    for folder in FOLDERS:
        for test, points in (entry.get(folder) or {}).items():
            if not isinstance(points, (int, float)) or isinstance(points, bool) or points < 0:
                raise CatalogError(f"{name}/{test}: points must be a number >= 0")
            exercise.tests.append(TestSpec(test, name, folder, float(points)))
    if not exercise.tests:
        raise CatalogError(f"{name}: lists no tests")
    if prop in {t.name for t in exercise.tests}:
        raise CatalogError(f"{name}: its property {prop} is not also one of its public or hidden tests")
    unknown = sorted(set(general) - {t.name for t in exercise.tests})
    if unknown:
        raise CatalogError(f"{name}: general names tests it does not list: {', '.join(unknown)}")
    return exercise


def _mistakes(section: str, entries) -> dict[str, Mistake]:
    if not isinstance(entries, dict):
        raise CatalogError(f"{section}: `mistakes:` maps mistake keys to entries")
    found = {}
    for key, entry in entries.items():
        if not re.fullmatch(r"[a-z][a-z0-9_]*", str(key)):
            raise CatalogError(f"{section}.{key}: mistake keys are lower_case identifiers")
        if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) and entry[k] for k in ("en", "zh")):
            raise CatalogError(f"{section}.{key} needs 'en' and 'zh' texts")
        if set(entry) - MISTAKE_KEYS:
            raise CatalogError(f"{section}.{key}: unknown fields {sorted(set(entry) - MISTAKE_KEYS)}")
        found[key] = Mistake(key, entry["en"], entry["zh"], entry.get("error"))
    return found


@lru_cache(maxsize=8)
def _load(path: Path) -> Catalog:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CatalogError(f"cannot read the course file {path}: {exc.strerror or exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CatalogError(f"{path}: not valid YAML: {exc}") from None
    return parse(data, path)


_active: Path = DEFAULT_COURSE


def use(path: str | Path | None) -> Catalog:
    """Make the course file at `path` (None: the default course) this process's course, and return it."""
    global _active
    chosen = _course_file(path) if path else DEFAULT_COURSE
    catalog = _load(chosen)
    _active = chosen
    return catalog


def _course_file(path: str | Path) -> Path:
    chosen = Path(path).resolve()
    return chosen / "course.yaml" if chosen.is_dir() else chosen


def active_path() -> Path:
    return _active


def forget() -> None:
    """Drop every course read so far (a zygote forked from a check's process keeps none of them)."""
    _load.cache_clear()


def load(path: str | Path | None = None) -> Catalog:
    """The course of the course file at `path`, by default this process's course."""
    return _load(_course_file(path) if path else _active)


def mistake(exercise: str, key: str) -> Mistake:
    return load().mistake(exercise, key)


def error_mistake(exercise: str, error_text: str) -> str | None:
    return load().error_mistake(exercise, error_text)


# ============================================================================= the learner mistakes

LEARNER_MISTAKE_CONSTANTS = ("EXERCISE", "MODULE", "PUBLIC", "MISTAKE", "DEVICE", "ON_DEVICE")
SAMPLE_PREFIX = "wrong-"  # `make demo`'s sample of learner mistake NAME is wrong-NAME-001 (bench/make_submissions.py)


def read_learner_mistake(path: Path) -> dict:
    """A learner-mistake file's constants and docstring (name, path, doc, EXERCISE, ...), read without
    running it (grader/validate/mistakes.py says what each constant means)."""
    import ast

    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    entry = {"name": Path(path).stem, "path": Path(path), "doc": ast.get_docstring(tree)}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id in LEARNER_MISTAKE_CONSTANTS and isinstance(node.value, ast.Constant):
            entry[node.targets[0].id] = node.value.value
    return entry


def learner_mistakes(folder: Path | None) -> dict[str, dict]:
    """Every learner mistake of a folder (the course's `learner_mistakes`), by name (the file's stem)."""
    if folder is None or not Path(folder).is_dir():
        return {}
    return {p.stem: read_learner_mistake(p) for p in sorted(Path(folder).glob("*.py"))}


def device_only(entry: dict) -> str | None:
    """The only device where a learner mistake shows (None: it shows everywhere): DEVICE = "cuda"."""
    return entry.get("DEVICE")


def is_sample_of(submission: str, name: str) -> bool:
    """Whether a submission is `make demo`'s sample of learner mistake `name` (wrong-NAME or wrong-NAME-001)."""
    sample = SAMPLE_PREFIX + name
    return submission == sample or re.fullmatch(re.escape(sample) + r"-\d+", submission) is not None


# ============================================================================= the tests' fingerprint

FINGERPRINT_SUFFIXES = (".py", ".yaml", ".json", ".ini")


def course_files(catalog: Catalog) -> dict[str, Path]:
    """The files that make the course's tests (path relative to the course file -> file): the course
    file, the test folders with their oracle, the worker-side helpers, and the stubs (their docstrings'
    examples are public checks) where the course has them."""
    files = {catalog.path.name: catalog.path}
    stubs = catalog.place("stubs")
    for base in [catalog.folder(f) for f in FOLDERS] + catalog.helpers + ([stubs] if stubs else []):
        found = [base] if base.is_file() else sorted(base.rglob("*")) if base.is_dir() else []
        for path in found:
            if path.is_file() and path.suffix in FINGERPRINT_SUFFIXES and "__pycache__" not in path.parts:
                files[_relative(path, catalog.root)] = path
    return files


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


def tests_sha256(catalog: Catalog | None = None) -> str:
    """A hash of the course's tests (the course file, public and hidden tests, oracle, helpers, the
    stubs' docstring examples) and the grader's version: with the seed and the device it decides
    whether `--resume` may keep a score file."""
    import grader

    catalog = catalog or load()
    digest = hashlib.sha256(f"grader {grader.__version__}\0".encode())
    for rel, path in sorted(course_files(catalog).items()):
        digest.update(rel.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


@lru_cache(maxsize=256)
def _resolved(course_file: Path, where: str) -> Path:
    """A place the course file names, resolved once per process (asked for at every test of a
    submission: the docstring checks' examples, the test folders)."""
    return (course_file.resolve().parent / where).resolve()
