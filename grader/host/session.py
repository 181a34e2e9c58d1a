"""One pytest session per engine, which grades submission after submission: the cases are collected once.

Starting pytest and collecting the test cases cost about a tenth of a submission's grading, and
they are the same for every submission an engine grades. So an `Engine` keeps one `GradingSession`:
pytest runs in a thread of its own, collects once, and its run-test loop (`pytest_runtestloop`) then
takes one submission at a time and runs every collected test against it. Each submission gets a
run of its own as far as the tests can tell: the last test of a submission is run with
`nextitem=None`, so every fixture, the session-scoped `student` included, is torn down and is
set up afresh for the next one; the plugin's outcomes are new for each (`GradingPlugin.begin`).

Only our plugin and pytest's own are loaded, whatever is installed: third-party plugins neither
slow grading down nor touch it. Collecting leaves nothing of the course in the process's import
state (`CaseImports`): the sandboxes of later engines are bound from `sys.path`
(`grader.host.launcher.readonly_paths`), and another course may name its case packages the same.
"""

from __future__ import annotations

import gc
import os
import queue
import re
import sys
import threading
from collections import Counter
from itertools import count
from pathlib import Path
from concurrent.futures import Future

import pytest

from grader import catalog as catalog_module
from grader.host.pipeline import PlannedCall
from grader.host.plugin import GradingPlugin, TestOutcome, fixture_values, is_property, plain, spec_of
from grader.host.student_code import StudentCode

PYTEST_ARGS = [
    "-c", str(catalog_module.CASES_DIR / "pytest.ini"),
    "-p", "no:cacheprovider", "-p", "no:terminal", "-p", "no:stepwise", "-p", "no:logging",
    "-p", "no:unraisableexception", "-p", "no:threadexception",  # each ends with a slow gc.collect()
    "--noconftest", "--capture=no", "-W", "ignore",
]


def test_paths(course: catalog_module.Catalog, folders: tuple[str, ...], only: set[str] | None) -> list[str]:
    """What pytest collects: each test folder, or with `only` just the files that define a test of
    those exercises (a check of one exercise need not import every module's cases)."""
    every = [str(course.folder(f)) for f in folders if course.folder(f).is_dir()]
    if not only:
        return every
    paths = []
    for folder in map(Path, every):
        names = {t.name for e in course.exercises if e.name in only for t in [*e.tests, e.property_spec] if t}
        defines = re.compile(r"^(?:async )?def (%s)\b" % "|".join(map(re.escape, sorted(names))), re.M)
        paths += [str(f) for f in sorted(folder.glob("test_*.py")) if names and defines.search(f.read_text("utf-8"))]
    return paths or every  # never no path at all: pytest would collect the current folder


class CaseImports:
    """What running a course's cases adds to the process's import state, put back after collection
    and after each submission.

    pytest (its default `prepend` import mode) puts the folder above each case package on `sys.path`
    (a course's own folder, when its `public/` and `hidden/` are top-level packages) when it imports
    the package, at collection and again at each submission's set-up, and leaves it there: every
    later engine of the process would bind it into its workers' sandboxes
    (`grader.host.launcher.readonly_paths`), the hidden tests with it. The modules stay in
    `sys.modules` under bare names (`hidden.test_derivatives`), where a second course laid out the
    same could not be collected ("import file mismatch"). `put_back` removes what pytest added of
    the folders above this course's case folders (it inserts one at the front even where it stands
    later already), and files the case packages that became top-level modules under this session's
    private prefix: the collected tests keep their modules, no other course finds them by name, and
    `grader.host.launcher.may_fork_zygote` still sees that they were loaded."""

    _numbers = count(1)

    def __init__(self, course: catalog_module.Catalog):
        self.path = Counter(sys.path)
        self.modules = set(sys.modules)
        self.cases = {str(p) for f in ("public", "hidden") for p in (course.folder(f), course.folder(f).resolve())}
        self.prefix = f"_autograd_lab_cases_{next(self._numbers)}."

    def put_back(self) -> None:
        extra = Counter(sys.path) - self.path
        for root in [p for p in extra if p and any(_inside(c, p) for c in self.cases)]:
            for _ in range(extra[root]):
                sys.path.remove(root)  # the first: pytest's, at the front
        new = [name for name in list(sys.modules) if name not in self.modules]
        tops = {name for name in new if "." not in name and self._holds_cases(sys.modules.get(name))}
        for name in new:
            if name.split(".")[0] in tops and name in sys.modules:
                sys.modules[self.prefix + name] = sys.modules.pop(name)

    def _holds_cases(self, module) -> bool:
        """A module of a case folder, or a package that holds one."""
        path = getattr(module, "__file__", None)
        if not path:
            return False
        path = os.path.abspath(path)
        package = os.path.dirname(path) if os.path.basename(path) == "__init__.py" else None
        return any(_inside(path, c) or (package is not None and _inside(c, package)) for c in self.cases)


def _inside(path: str, parent: str) -> bool:
    parent = os.path.abspath(parent)
    return path == parent or path.startswith(parent.rstrip(os.sep) + os.sep)


class SessionEnded(RuntimeError):
    """The pytest session stopped (an error inside pytest or the grader's plugin); an engine starts another."""


class GradingSession:
    """A pytest session in a thread: `grade(student)` runs every collected test against one submission."""

    def __init__(self, plugin: GradingPlugin, course: catalog_module.Catalog, folders: tuple[str, ...]):
        self.plugin = plugin
        self.course = course
        self.args = [*test_paths(course, folders, plugin.only), "--rootdir", str(course.root), *PYTEST_ARGS]
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.ready = threading.Event()
        self.ended: str | None = None  # why the session is over
        self.most_calls: dict[str, int] = {}  # test -> the most calls it made in a submission graded here
        self.first_calls: dict[str, PlannedCall | None] = {}  # test -> its first call, described once (None: none)
        self.thread = threading.Thread(target=self._main, name="autograd-lab-pytest", daemon=True)
        saved = os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
        os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # read while pytest starts, before collection
        try:
            self.thread.start()
            self.ready.wait()
        finally:
            if saved is None:
                del os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"]
            else:
                os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = saved
        if self.ended is not None:
            raise SessionEnded(f"pytest did not start: {self.ended}")

    def grade(self, student: StudentCode, exercises: set[str] | None = None) -> dict[str, TestOutcome]:
        """The outcome of every collected test for this submission, by node id (`exercises`: only
        the collected tests of these). Tests that did not run (the session ended while grading it,
        and `self.ended` says why) keep the status `error`."""
        if self.ended is not None:
            raise SessionEnded(self.ended)
        job: Future = Future()
        self.jobs.put((student, job, exercises))
        return job.result()

    def close(self) -> None:
        self.jobs.put(None)
        self.thread.join(timeout=10)

    def _main(self) -> None:
        self.imports = CaseImports(self.course)
        try:
            code = pytest.main(self.args, plugins=[self.plugin, self])
            self.ended = self.ended or f"pytest exit code {int(code)}"
        except BaseException as exc:  # noqa: BLE001  (the session thread must always say why it ended)
            self.ended = self.ended or f"{type(exc).__name__}: {exc}"
        finally:
            self.imports.put_back()  # pytest stopped before its run-test loop
            self.ready.set()
            while True:  # whoever is still waiting hears that the session is gone
                try:
                    job = self.jobs.get_nowait()
                except queue.Empty:
                    break
                if job is not None:
                    job[1].set_exception(SessionEnded(self.ended))

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        """Instead of pytest's loop over the items once: the same loop, once per submission.
        (Collection errors are the plugin's to report, for every submission: `plugin.errors`.)"""
        self.imports.put_back()  # collected: nothing of the course stays on sys.path for later engines
        # What is alive now (torch, pytest, the collected cases) lives as long as the session: frozen, it is
        # walked by no later garbage collection (Python's own, and the full ones Hypothesis makes when a
        # counterexample search first starts in this thread: about 0.3 s here otherwise).
        gc.collect()
        gc.freeze()
        self.ready.set()
        while (job := self.jobs.get()) is not None:
            student, future, exercises = job
            outcomes = self.plugin.begin(student)
            if exercises is not None:
                outcomes = {k: o for k, o in outcomes.items() if o.spec.exercise in exercises}
            items = [i for i in session.items if i.nodeid in outcomes]
            self.plugin.direct = all(map(plain, items))
            try:
                self._send_ahead(student, items)
                for i, item in enumerate(items):
                    item.config.hook.pytest_runtest_protocol(item=item, nextitem=items[i + 1] if i + 1 < len(items) else None)
                self.plugin.find_counterexamples(items)
            except BaseException as exc:
                self.imports.put_back()
                self.ended = f"{type(exc).__name__}: {exc}"
                future.set_result(outcomes)  # what ran is graded; the engine marks the rest
                raise
            finally:
                for item in items:
                    self.most_calls[item.nodeid] = max(self.most_calls.get(item.nodeid, 0),
                                                       student.calls_made.get(item.nodeid, 0))
            self.imports.put_back()  # each package's set-up imported it again, through sys.path
            future.set_result(outcomes)
        return True

    def _send_ahead(self, student: StudentCode, items: list) -> None:
        """Describe the tests' first calls and let the submission's worker start on them
        (`grader.host.pipeline`). Only once this engine has seen the tests: a test it has not seen
        make exactly one call is a barrier, and with no such test there is nothing to send ahead.
        A test's first call is described once per session: its arguments come from its own `rng`
        (the run's seed and its node id) and the course's data, never from a submission."""
        if not any(n == 1 for n in self.most_calls.values()):
            return
        new = [item for item in items if item.nodeid not in self.first_calls]
        if new:
            described = {call.test: call for call in describe_calls(new, self.plugin, student)}
            self.first_calls.update({item.nodeid: described.get(item.nodeid) for item in new})
        calls = [call for call in (self.first_calls[item.nodeid] for item in items) if call is not None]
        student.plan_ahead(calls, {c.test for c in calls if self.most_calls.get(c.test) != 1})


def describe_calls(items: list, plugin: GradingPlugin, student: StudentCode) -> list[PlannedCall]:
    """Each test's first call into the student's code, in the order the tests run, made by running
    each test up to that call with the fixtures it would get (its `rng` seeded the same way);
    nothing is sent. A test that asks for another fixture, or that ends before calling, has none."""
    calls: list[PlannedCall] = []
    student.describing = calls
    try:
        for item in items:
            arguments = None if is_property(item) else fixture_values(item, plugin, student)
            if arguments is None:
                continue
            spec = spec_of(item)
            # as the plugin enters it for the test (grader.host.plugin.GradingPlugin.pytest_runtest_protocol)
            with student.working_on(spec.exercise, capture=plugin.show_output and spec.folder == "public",
                                    test=item.nodeid):
                try:
                    item.obj(**arguments)
                except (KeyboardInterrupt, SystemExit):
                    raise
                except BaseException:  # noqa: BLE001  (Described, or a test that ends before its first call)
                    pass
    finally:
        student.describing = None
    return calls
