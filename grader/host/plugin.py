"""The pytest plugin that runs the test cases against a submission.

It provides the fixtures tests use (`student`, `device`, `rng`), maps every collected
test to its entry in the course, and turns each test's outcome into a `TestOutcome`:
status (`passed`, `failed`, `error`, `timeout`), points, and a message that never shows a
hidden test's inputs. It asserts nothing itself; the tests do, in this trusted process.
Tests are collected once per session (`grader.host.session`); `begin` starts a submission.
Each test runs inside `StudentCode.working_on(its exercise)`, the one writer of the current
exercise. The course is the plugin's own (`self.catalog`), passed, never a process global: two
engines of two courses in one process each name their own mistakes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import inspect
import time
from dataclasses import dataclass
from functools import lru_cache

import pytest
import torch

from grader import catalog as catalog_module
from grader.catalog import Catalog, CatalogError, TestSpec
from grader.host import counterexample, properties
from grader.host.student_code import CallTimeout, CodeUnavailable, StudentCode, Tampered, WorkerFault
from grader.protocol.messages import TestStatus

MAX_MESSAGE = 1500


@dataclass
class TestOutcome:
    name: str
    spec: TestSpec
    points: float
    status: TestStatus = TestStatus.ERROR
    message: str = "the test did not run"
    hint: str = ""
    duration_s: float = 0.0
    mistake: dict | None = None  # {id, en, zh}: the known learner mistake the failure matched
    output: str = ""  # what the student's code printed and warned during the test: public checks of `grader check` only

    @property
    def score(self) -> float:
        return self.points if self.status == TestStatus.PASSED else 0.0


class GradingPlugin:
    def __init__(self, catalog: Catalog, folders: tuple[str, ...], device: str, seed: int,
                 exercises: set[str] | None = None, show_output: bool = False, counterexamples: bool = True,
                 properties: bool = False):
        self.student_code: StudentCode | None = None  # the submission being graded
        self.current_nodeid = ""  # the test being run (set before its set-up)
        self.counterexamples_on = counterexamples and catalog.counterexamples.show
        self.counterexamples: dict[str, dict] = {}  # exercise -> its counterexample (failed exercises only)
        self.search_errors: list[str] = []  # a search that failed (a grader bug), for the engine's log
        # `grader check`: each exercise's property runs (with Hypothesis, which a student's install has)
        self.properties_on = properties and "public" in folders and importlib.util.find_spec("hypothesis") is not None
        self.catalog = catalog
        self.folders = folders
        self.device_name = device
        self.seed = seed
        self.only = exercises
        self.show_output = show_output  # `grader check`: public tests carry what the student's code printed
        self.collected: dict[str, TestOutcome] = {}  # node id -> its outcome before it runs
        self.outcomes: dict[str, TestOutcome] = {}  # the submission's
        self.errors: list[str] = []
        self.folder_of = {catalog.folder(f): f for f in catalog_module.FOLDERS}  # test folder -> public/hidden
        self.direct = False  # the submission's tests run without pytest's phases (`pytest_runtest_protocol_direct`)

    def begin(self, student: StudentCode) -> dict[str, TestOutcome]:
        """Grade `student` next: its outcomes, filled in as its tests run."""
        self.student_code = student
        self.counterexamples = {}
        self.outcomes = {nodeid: dataclasses.replace(o) for nodeid, o in self.collected.items()}
        return self.outcomes

    # -- fixtures -------------------------------------------------------------------------
    @pytest.fixture(scope="session")
    def student(self) -> StudentCode:
        return self.student_code

    @pytest.fixture(scope="session")
    def device(self) -> str:
        return self.device_name

    @pytest.fixture
    def rng(self) -> torch.Generator:
        """A generator seeded from the run's seed and the test's id: order-independent. (The id
        comes from `pytest_runtest_protocol`, not from pytest's `request`: a fixture that asks for
        `request` makes pytest build a fixture definition for it at every test.)"""
        return seeded_generator(self.seed, self.current_nodeid)

    # -- counterexamples, after every test of a submission ran ------------------------------
    def find_counterexamples(self, items) -> None:
        """For each exercise that lost points on a hidden test drawing random inputs (its general tests,
        and the others that take `rng`): the smallest failing input found (grader.host.counterexample),
        into `self.counterexamples`. The property is those failed tests' failed parameter cases, in the
        order collected (float32 before float64), with fresh inputs."""
        if not self.counterexamples_on:
            return
        failed = {nodeid: o.spec.exercise for nodeid, o in self.outcomes.items()
                  if o.status != TestStatus.PASSED and o.spec.folder == "hidden" and not self._failed_in_a_probe(nodeid)}
        for exercise in sorted(set(failed.values())):
            if exercise in self.student_code.tampered_exercises or self._not_started(exercise):
                continue
            cases = [c for c in (self._case(i) for i in items if failed.get(i.nodeid) == exercise) if c]
            if not cases:
                continue
            try:
                found = counterexample.search(self.student_code, exercise, cases, self.catalog.counterexamples,
                                              self.seed, self.catalog)
            except Exception as exc:  # noqa: BLE001  (a search never changes what was graded)
                found = None
                self.search_errors.append(f"{exercise}: {type(exc).__name__}: {exc}"[:300])
            if found is not None:
                self.counterexamples[exercise] = found

    def _will_search(self, item, outcome) -> bool:
        """A failed hidden test that `find_counterexamples` will search inputs for (as far as one test says)."""
        if not self.counterexamples_on or outcome.spec.folder != "hidden" or outcome.status == TestStatus.PASSED:
            return False
        exercise = outcome.spec.exercise
        return (not self._failed_in_a_probe(item.nodeid) and exercise not in self.student_code.tampered_exercises
                and (outcome.mistake or {}).get("id") != f"{exercise}.not_implemented" and self._case(item) is not None)

    def _failed_in_a_probe(self, nodeid: str) -> bool:
        """The test's check failed after a call that ran a probe (course code working on the student's result
        within the call: a later backward, a double backward): a snippet calling the student's function shows
        nothing there, so the test is no case of the search (and no worker is started for it alone)."""
        return self.outcomes[nodeid].status == TestStatus.FAILED and self.student_code.probed.get(nodeid, False)

    def _fixed_checks_passed(self, exercise: str) -> bool:
        """Every fixed public check of the exercise (its tests and docstring examples) passed: its property
        runs only then, to find what the fixed inputs miss (the properties are collected last)."""
        fixed = [o for nodeid, o in self.outcomes.items() if o.spec.exercise == exercise and o.spec.folder == "public"
                 and o.spec.name != self.catalog.exercise(exercise).property_name]
        return all(o.status == TestStatus.PASSED for o in fixed)

    def _not_started(self, exercise: str) -> bool:
        """Every failed test of the exercise says it is not written yet: no input shows more than that."""
        failed = [o for o in self.outcomes.values() if o.spec.exercise == exercise and o.status != TestStatus.PASSED]
        return all((o.mistake or {}).get("id") == f"{exercise}.not_implemented" for o in failed)

    def _case(self, item) -> counterexample.Case | None:
        """A general test's parameter case as a property case: its test function with the student and the
        draws the search hands it, and its own parameters."""
        params = dict(getattr(getattr(item, "callspec", None), "params", {}))
        names = list(inspect.signature(item.function).parameters)
        if "rng" not in names or not set(names) <= {"student", "rng", "device", *params}:
            return None  # fixed inputs: nothing to draw

        def run(student, rng, function=item.function):
            fixtures = {"student": student, "rng": rng, "device": self.device_name}
            function(**{n: params[n] if n in params else fixtures[n] for n in names})

        return counterexample.Case(item.nodeid, run)

    # -- collection ------------------------------------------------------------------------
    def pytest_collection_modifyitems(self, session, config, items):
        selected, deselected, counts = [], [], {}
        for item in items:
            folder = self.folder_of.get(item.path.parent.resolve())
            if folder not in self.folders:
                deselected.append(item)
                continue
            prop = self.catalog.property_test(item.originalname) if folder == "public" else None
            if prop is not None and not self.properties_on:  # a property never runs when grading: no points
                deselected.append(item)
                continue
            try:
                spec = prop or self.catalog.test(folder, item.originalname)
            except CatalogError as exc:
                self.errors.append(str(exc))
                deselected.append(item)
                continue
            if prop is not None:
                item.stash[_PROPERTY] = True
            item.stash[_PLAIN] = _plain(item)
            if self.only and spec.exercise not in self.only:
                deselected.append(item)
                continue
            item.stash[_SPEC] = spec
            counts[spec] = counts.get(spec, 0) + 1
            selected.append(item)
        shares = {spec: split_points(spec.points, n) for spec, n in counts.items()}
        for item in selected:
            spec = item.stash[_SPEC]
            self.collected[item.nodeid] = TestOutcome(item.name, spec, shares[spec].pop(), hint=_docstring(item))
        listed = {(t.folder, t.name) for e in self.catalog.exercises for t in e.tests
                  if t.folder in self.folders and (not self.only or e.name in self.only)}
        for folder, name in sorted(listed - {(s.folder, s.name) for s in counts}):
            self.errors.append(f"test {folder}/{name} is listed in {self.catalog.path.name} but was not collected")
        if self.properties_on:
            named = {e.property_name for e in self.catalog.exercises if e.property_name and (not self.only or e.name in self.only)}
            for name in sorted(named - {s.name for s in counts}):
                self.errors.append(f"property public/{name} is named in {self.catalog.path.name} but was not collected")
        first_of = {}
        for i, item in enumerate(selected):
            first_of.setdefault(item.path, i)
        selected.sort(key=lambda item: (first_of[item.path], is_property(item)))  # a module's properties last
        if self.errors:  # the cases are wrong: run none of them, so the engine says so at once (no table of zeros)
            deselected, selected = deselected + selected, []
        if deselected:
            config.hook.pytest_deselected(items=deselected)
        items[:] = selected

    def pytest_collectreport(self, report):
        if report.failed:
            self.errors.append(f"could not collect {report.nodeid}: {str(report.longrepr)[-2000:]}")

    # -- running ---------------------------------------------------------------------------
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        """Setup, call and teardown of one test, all within its exercise (`StudentCode.working_on`)."""
        spec = item.stash[_SPEC]
        self.current_nodeid = item.nodeid
        with self.student_code.working_on(spec.exercise, capture=self.show_output and spec.folder == "public",
                                          test=item.nodeid):
            yield

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        """A property test runs on fresh inputs drawn by Hypothesis, not once (grader.host.properties)."""
        if not is_property(pyfuncitem):
            return None
        spec = pyfuncitem.stash[_SPEC]
        if not self._fixed_checks_passed(spec.exercise):  # they show a mistake already: fresh inputs add nothing
            del self.outcomes[pyfuncitem.nodeid]  # not run, so not listed: no row, no seed, no cost
            return True
        properties.run(self.student_code, spec.exercise, pyfuncitem.obj, self.catalog.properties, self.seed,
                       self.catalog)
        return True

    @pytest.hookimpl(tryfirst=True, specname="pytest_runtest_protocol")
    def pytest_runtest_protocol_direct(self, item, nextitem):
        """A plain test runs without pytest's setup, call and teardown phases and their three reports:
        its function gets its parameters and the plugin's fixtures (`fixture_values`), through pytest's
        own call hook (`item.runtest`), and its outcome is recorded as the makereport hook records a
        call's. pytest's phases cost more than most tests' bodies (their fixture definitions, a pseudo
        fixture per parameter, a report per phase), and a plain test needs none of what they do.
        Plain: every test of the submission takes only the plugin's fixtures and its parameters, has
        no mark but `parametrize` and no xunit set-up (`direct` in `GradingSession`); otherwise (a
        course with fixtures of its own) every test runs pytest's protocol. The hook wrappers
        (`pytest_runtest_protocol` above, pytest's warnings) still wrap it."""
        if not self.direct:
            return None
        item.funcargs = fixture_values(item, self, self.student_code)
        start = time.perf_counter()
        excinfo = None
        try:
            item.runtest()
        except (KeyboardInterrupt, pytest.exit.Exception):
            raise
        except BaseException as exc:  # noqa: BLE001  (as pytest's call phase: the test failed)
            excinfo = pytest.ExceptionInfo.from_exception(exc)
        finally:
            item.funcargs = {}
        self._record(item, "call", excinfo, time.perf_counter() - start)
        return True

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        """Let pytest build its report, then record the test's outcome and put our short text in
        the report. A failure's traceback runs through the grader's own code and is never shown:
        it is dropped before pytest sees it, so pytest renders the exception line only instead of
        the test's source (about 25 ms a failure)."""
        excinfo = call.excinfo
        skipped = excinfo is not None and excinfo.errisinstance(pytest.skip.Exception)
        if excinfo is not None and not skipped:  # a skip's report needs where it was raised
            excinfo.traceback = excinfo.traceback[:0]
        report = (yield).get_result()
        self._record(item, call.when, excinfo, call.duration)
        if excinfo is not None and not skipped:
            report.longrepr = f"{excinfo.typename}: {excinfo.value}"[:MAX_MESSAGE]

    def _record(self, item, when: str, excinfo, duration: float) -> None:
        """The test's outcome after one phase (`when`: setup, call or teardown) ended with `excinfo`
        (None: it passed)."""
        outcome = self.outcomes.get(item.nodeid)
        if outcome is None:
            return
        skipped = excinfo is not None and excinfo.errisinstance(pytest.skip.Exception)
        passed, failed = excinfo is None, excinfo is not None and not skipped
        if when == "call":
            outcome.duration_s = round(duration, 4)
            if self.student_code.capture:
                outcome.output = _clip_output("".join(self.student_code.printed))
        if passed and when == "call":
            outcome.status, outcome.message = TestStatus.PASSED, ""
        elif failed and (when == "call" or outcome.status in (TestStatus.PASSED, TestStatus.ERROR)):
            try:
                outcome.status, outcome.message, outcome.mistake = classify(
                    excinfo, outcome.spec.visibility == "visible", outcome.spec.exercise, self.catalog)
            except CatalogError as exc:  # a test names a mistake the course file lacks: the cases are wrong
                self.errors.append(str(exc))
                outcome.status, outcome.message = TestStatus.ERROR, str(exc)
        elif skipped:
            outcome.status, outcome.message = TestStatus.ERROR, f"skipped: {excinfo.value}"
        if when == "call" and self._will_search(item, outcome):
            self.student_code.spare_ahead()  # the search's fresh worker starts while grading goes on


_SPEC = pytest.StashKey[TestSpec]()
_PROPERTY = pytest.StashKey[bool]()
_PLAIN = pytest.StashKey[bool]()


def is_property(item) -> bool:
    """Whether a collected test is an exercise's property (`grader check` only, worth no points)."""
    return item.stash.get(_PROPERTY, False)


def spec_of(item) -> TestSpec:
    """The course's entry for a collected test."""
    return item.stash[_SPEC]


PLUGIN_FIXTURES = frozenset({"student", "rng", "device"})
_XUNIT = ("setup_module", "setUpModule", "teardown_module", "tearDownModule", "setup_function", "teardown_function")


def plain(item) -> bool:
    """Whether a collected test is plain (`_plain`, decided when it was collected)."""
    return item.stash.get(_PLAIN, False)


def _plain(item) -> bool:
    """A test that takes only the plugin's fixtures and its parameters, with no mark but `parametrize`,
    a function of a module without xunit set-up: `fixture_values` gives it everything it needs."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    return (isinstance(item, pytest.Function) and getattr(item, "cls", None) is None
            and set(item.fixturenames) <= PLUGIN_FIXTURES | set(params)
            and all(m.name == "parametrize" for m in item.iter_markers())
            and not any(hasattr(item.module, name) for name in _XUNIT))


def fixture_values(item, plugin: GradingPlugin, student: StudentCode) -> dict | None:
    """The arguments a test function gets from the plugin's fixtures and its parameters, or None
    when it asks for anything else."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    values = {}
    for name in item.fixturenames:
        if name in params:
            values[name] = params[name]
        elif name == "student":
            values[name] = student
        elif name == "rng":
            values[name] = seeded_generator(plugin.seed, item.nodeid)
        elif name == "device":
            values[name] = plugin.device_name
        else:
            return None
    return values


def seeded_generator(seed: int, nodeid: str) -> torch.Generator:
    """The `rng` fixture's generator for one test: seeded from the run's seed and the test's id."""
    digest = hashlib.sha256(f"{seed}:{nodeid}".encode()).digest()
    return torch.Generator().manual_seed(int.from_bytes(digest[:8], "little"))


def split_points(points: float, n: int) -> list[float]:
    """Share a test's points among its n parameter cases, in 4-decimal steps that add up exactly."""
    units = round(points * 10_000)
    base, extra = divmod(units, n)
    return [(base + (1 if i < extra else 0)) / 10_000 for i in range(n)]


def classify(excinfo, visible: bool, exercise: str, course: Catalog) -> tuple[TestStatus, str, dict | None]:
    """Status, message and known mistake ({id, en, zh} or None, from `course`) for a test that did
    not pass. Hidden tests show no values."""
    exc = excinfo.value if excinfo is not None else None
    if isinstance(exc, CallTimeout):  # bilingual already, as every message of grader.host.student_code
        return TestStatus.TIMEOUT, _clip(str(exc)), None
    if isinstance(exc, (Tampered, CodeUnavailable, WorkerFault)):
        return TestStatus.ERROR, _clip(str(exc)), None
    reason = getattr(exc, "reason", None)
    if reason is not None:  # grader.cases.kit.Fail: a reason always, the details only when visible
        detail = getattr(exc, "detail", "")
        mistake = None
        raised = getattr(exc, "raised", None)
        key = getattr(exc, "mistake", None) or (course.error_mistake(*raised) if raised else None)
        if key:
            mistake = course.mistake(exercise, key).described(exercise, **exc.fill)
            reason += f"\n{mistake['en']} / {mistake['zh']}"
        return TestStatus.FAILED, _clip(reason + (f"\n{detail}" if visible and detail else "")), mistake
    if isinstance(exc, AssertionError):
        return TestStatus.FAILED, (_clip(str(exc)) if visible else "a hidden check failed / 一项隐藏检查未通过"), None
    name = type(exc).__name__ if exc is not None else "unknown"
    return TestStatus.ERROR, (_clip(f"the test itself failed ({name}: {exc})") if visible else
                              f"the test could not check the result ({name}) / 测试无法检查结果"), None


MAX_OUTPUT = 4000  # characters of a test's prints and warnings kept


def _clip_output(text: str) -> str:
    if len(text) <= MAX_OUTPUT:
        return text
    return text[:MAX_OUTPUT] + f"\n[... {len(text) - MAX_OUTPUT} more characters / 另有 {len(text) - MAX_OUTPUT} 个字符]\n"


def _clip(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 20] + " [...]"


def _docstring(item) -> str:
    return _hint(getattr(getattr(item, "function", None), "__doc__", None) or "")


@lru_cache(maxsize=None)
def _hint(doc: str) -> str:
    """A test's docstring as a hint: its English lines joined, then its Chinese lines joined.
    Cached: every submission's session collects the same tests again."""
    english, chinese = [], []
    for line in (line.strip() for line in doc.strip().splitlines()):
        (chinese if chinese or _has_cjk(line) else english).append(line)
    return "\n".join(p for p in (" ".join(english), "".join(chinese)) if p)


def _has_cjk(text: str) -> bool:
    """Chinese characters or full-width punctuation (a Chinese line may open with a formula and a "，")."""
    return any("\u4e00" <= ch <= "\u9fff" or "\u3000" <= ch <= "\u303f" or "\uff00" <= ch <= "\uffef" for ch in text)
