"""Counterexamples: a failed exercise's score file holds the smallest failing input found, as a call the
student can run, and it reproduces.

The corpus of learner mistakes (tests/submissions/wrong/) is graded once, by `grader validate` (the
session's `validated` fixture, which tests/test_wrong_submissions.py reads too): each mistake that loses
points on a hidden test with random inputs gets a counterexample, small, whose snippet gives what the
score file recorded when run against the mistake's own module, and the reference's answer against the
reference. None is a hidden test's input.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from grader import catalog, display
from grader.host import counterexample
from grader.host.student_code import CallResult
from grader.protocol.messages import Outcome
from grader.report import feedback
from grader.student_view import student_view
from grader.validate import mistakes

from conftest import SOLUTIONS, SUBMISSIONS, make_submission

COURSE = catalog.load()
CORPUS = mistakes.read_folder(SUBMISSIONS / "wrong")
ON_CPU = sorted(n for n, e in CORPUS.items() if not mistakes.device_of(e))

# Mistakes that lose points on a hidden test with random inputs but get no counterexample, and why: each of
# these fails only through a probe, worker-side course code that works on the student's result within the
# call (a later backward through it, the second derivative of a custom Function, what f was evaluated on),
# which a one-line call of the student's function cannot show.
NO_COUNTEREXAMPLE = {
    "frozen_predict_grad_disabled_globally": "seen by the then_backward probe (grad mode after the call)",
    "frozen_predict_inference_mode": "seen by the then_backward probe (a later backward through the result)",
    "numerical_gradient_input_dtype": "seen by the recording_f probe (the dtype f was evaluated in)",
    "smooth_abs_detached_output": "SmoothAbs is judged through the smooth_abs probe (apply, backward, double backward)",
    "smooth_abs_eps_squared_backward": "the smooth_abs probe",
    "smooth_abs_no_grad_backward": "the smooth_abs probe",
    "smooth_abs_once_differentiable": "the smooth_abs probe",
    "smooth_abs_own_apply": "the smooth_abs probe",
    "smooth_abs_sign_backward": "the smooth_abs probe",
    "smooth_abs_zero_for_eps": "the smooth_abs probe",
}


def exercise_entry(report: dict, name: str) -> dict:
    return next(e for e in report["exercises"] if e["name"] == name)


def loses_on_a_random_test(report: dict, exercise: str) -> bool:
    """A hidden test of the exercise that draws its inputs (takes `rng`) did not pass."""
    drawing = _drawing_tests()
    return any(t["status"] != "passed" and t["visibility"] == "hidden" and t["name"].split("[")[0] in drawing
               for t in exercise_entry(report, exercise)["tests"])


def _drawing_tests() -> set[str]:
    import inspect

    from grader.cases.hidden import (test_accumulation, test_backward, test_extensions, test_grad, test_graph,
                                     test_inplace)
    return {name for module in (test_accumulation, test_backward, test_extensions, test_grad, test_graph, test_inplace)
            for name, f in vars(module).items() if name.startswith("test_") and callable(f)
            and "rng" in inspect.signature(f).parameters}


@pytest.fixture(scope="module")
def found(validated):
    """mistake name -> (its exercise's score file entry, the counterexample or None)."""
    out = {}
    for name in ON_CPU:
        report = validated.report(f"mistake-{name}")
        entry = exercise_entry(report, CORPUS[name]["EXERCISE"])
        out[name] = (report, entry.get("counterexample"))
    return out


@pytest.mark.parametrize("name", ON_CPU)
def test_a_mistake_that_loses_on_random_inputs_gets_a_counterexample(found, name):
    report, ce = found[name]
    exercise = CORPUS[name]["EXERCISE"]
    if name in NO_COUNTEREXAMPLE:
        assert ce is None, f"{name} has a counterexample now: take it off NO_COUNTEREXAMPLE"
        return
    assert loses_on_a_random_test(report, exercise), f"{name} loses no points on a random-input test"
    assert ce is not None, f"{name}: no counterexample for {exercise}"
    assert ce["snippet"].splitlines()[1] == f"from {COURSE.exercise(exercise).module_name} import {exercise}"
    assert "output" not in ce and report.get("output", "\0") not in ce["got"]


def test_counterexamples_are_small(found):
    """At least 90% have at most 4 elements in every tensor argument; the sizes are listed for the notes."""
    sizes = {n: ce["elements"] for n, (_, ce) in found.items() if ce}
    small = [n for n, size in sizes.items() if size <= 4]
    assert len(small) >= 0.9 * len(sizes), sorted((s, n) for n, s in sizes.items() if s > 4)


def test_the_mistake_id_is_named_where_the_failure_matches_one(found):
    named = [n for n, (_, ce) in found.items() if ce and (ce.get("mistake") or {}).get("id") == CORPUS[n]["MISTAKE"]]
    assert len(named) >= 0.8 * sum(1 for _, ce in found.values() if ce)


RUN_SNIPPETS = r"""
import json, sys, traceback
from grader.host.counterexample import shown
results = []
for folder, snippet in json.load(sys.stdin):
    for name in [m for m in sys.modules if m in {"graph", "backward", "grad", "accumulation", "inplace", "extensions"}]:
        del sys.modules[name]
    sys.path.insert(0, folder)
    *lines, last = snippet.splitlines()
    scope = {}
    try:
        exec("\n".join(lines), scope)
        results.append(shown(eval(last, scope)))
    except Exception as exc:
        results.append(f"raised {type(exc).__name__}: {exc}")
    sys.path.remove(folder)
print(json.dumps(results))
"""


def run_snippets(jobs: list[tuple[str, str]]) -> list[str]:
    """Each (folder, snippet) run as the student runs it, in one fresh interpreter: what the last line gave."""
    done = subprocess.run([sys.executable, "-c", RUN_SNIPPETS], input=json.dumps(jobs), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_every_snippet_reproduces_with_the_mistake_and_the_reference_gives_the_expected_value(found, tmp_path):
    cases = [(n, ce) for n, (_, ce) in found.items() if ce]
    folders = {n: str(make_submission(tmp_path / n, mistakes.submission_modules(CORPUS[n], COURSE))) for n, _ in cases}
    got = run_snippets([(folders[n], ce["snippet"]) for n, ce in cases])
    want = run_snippets([(str(SOLUTIONS), ce["snippet"]) for _, ce in cases])
    wrong_got = [(n, ce["got"], g) for (n, ce), g in zip(cases, got) if not _same(ce["got"], g)]
    wrong_expected = [(n, ce["expected"], w) for (n, ce), w in zip(cases, want) if ce["expected"] != w]
    assert wrong_got == [] and wrong_expected == []


def _same(recorded: str, rerun: str) -> bool:
    """An exception's message may name the object it was raised on; its type and the rest agree."""
    if recorded.startswith("raised "):
        return rerun.split(":")[0] == recorded.split(":")[0]
    return recorded == rerun


def hidden_snippet(test: str, seed: int = 0) -> str | None:
    """The call a hidden test case makes at `seed`, written as a counterexample's snippet: the test run with
    the generator grading seeds it with, against a stand-in that records the first call and stops."""
    from _pytest.python import Function  # noqa: F401  (only to be sure pytest is importable)
    import importlib

    path, _, case = test.partition("::")
    module = importlib.import_module("grader.cases.hidden." + Path(path).stem)
    name, _, params = case.partition("[")
    function = getattr(module, name)

    class Stop(Exception):
        pass

    class Recorder:
        call_args = None

        def call(self, function, *args, probe=None, **kwargs):
            Recorder.call_args = (function, args, kwargs)
            raise Stop()

    from grader.host.plugin import seeded_generator

    return function, params, Recorder, seeded_generator(seed, test), Stop


def test_no_counterexample_is_a_hidden_input(found):
    """The search draws from a stream of its own: no counterexample's call is the one its hidden test makes
    at the grading seed, nor holds any of that call's drawn values."""
    import inspect

    checked = 0
    for name, (_, ce) in found.items():
        if not ce:
            continue
        function, params, Recorder, rng, Stop = hidden_snippet(ce["test"])
        names = list(inspect.signature(function).parameters)
        values = _params(function, params)
        kwargs = {n: values[n] for n in names if n in values}
        try:
            function(student=Recorder(), rng=rng, **{k: v for k, v in kwargs.items() if k not in ("student", "rng")},
                     **({"device": "cpu"} if "device" in names else {}))
        except Stop:
            pass
        except Exception:  # noqa: BLE001  (a test that stops before calling: nothing to compare)
            continue
        if Recorder.call_args is None:
            continue
        fn, args, kwargs = Recorder.call_args
        exercise = COURSE.exercise(fn)
        hidden = counterexample.snippet(COURSE, exercise.module_name, fn, args, kwargs, [f"arg{i}" for i in range(len(args))])
        assert hidden != ce["snippet"], name
        drawn = {round(float(v), 6) for a in args if type(a) is torch.Tensor for v in a.flatten()} - {0.0, 1.0, -1.0}
        shown_values = set(_numbers(ce["snippet"]))
        assert not drawn & shown_values, (name, drawn & shown_values)
        checked += 1
    assert checked >= 40


def _params(function, params: str) -> dict:
    """The parameter case's values, by the ids pytest gave them (its parametrize marks, in order)."""
    import itertools

    marks = [m for m in getattr(function, "pytestmark", []) if m.name == "parametrize"]
    if not marks:
        return {}
    axes = []
    for mark in reversed(marks):  # pytest's ids: the innermost (last applied) mark first
        argnames = [a.strip() for a in mark.args[0].split(",")] if isinstance(mark.args[0], str) else list(mark.args[0])
        values = mark.args[1]
        ids = mark.kwargs.get("ids")
        axes.append([(dict(zip(argnames, v if len(argnames) > 1 else (v,))),
                      ids[i] if ids else "-".join(str(x) for x in (v if len(argnames) > 1 else (v,))))
                     for i, v in enumerate(values)])
    for combo in itertools.product(*axes):
        if "-".join(i for _, i in combo) == params.rstrip("]"):
            return {k: v for d, _ in combo for k, v in d.items()}
    return {}


def _numbers(text: str) -> list[float]:
    import re

    return [round(float(m), 6) for m in re.findall(r"-?\d+\.\d*(?:e[-+]?\d+)?", text)]


def test_grader_check_feedback_and_gradescope_show_it(found):
    name = next(n for n, (_, ce) in found.items() if ce and ce.get("mistake"))
    report, ce = found[name]
    exercise = CORPUS[name]["EXERCISE"]
    text = display.check_table(report, "exercises", width=200)
    assert ce["snippet"].splitlines()[-1] in text and ce["got"] in text and "找到的最小反例" in text
    view = next(e for e in student_view(report)["exercises"] if e["name"] == exercise)
    assert view["counterexample"]["snippet"] == ce["snippet"]
    for fmt in ("html", "md"):
        assert "找到的最小反例" in feedback.page(report, fmt)
    from grader.exports.gradescope import gradescope_results

    outputs = "\n".join(t["output"] for t in gradescope_results(report, 1.0)["tests"])
    assert ce["snippet"].splitlines()[-1] in outputs


def test_old_score_files_still_read():
    from grader.host import results

    assert "1.4" in results.READABLE_SCHEMA_VERSIONS and results.SCHEMA_VERSION == "1.5"


def test_shown_writes_values_exact_in_their_dtype():
    x = torch.tensor([0.3, 1.0, -2.5], dtype=torch.float32)
    assert counterexample.shown(x) == "torch.tensor([0.3, 1., -2.5])"
    assert eval(counterexample.shown(x), {"torch": torch}).equal(x)
    y = torch.tensor([[0.1]], dtype=torch.float64)
    assert counterexample.shown(y) == "torch.tensor([[0.1]], dtype=torch.float64)"
    call = CallResult(function="hvp", args=(), outcome=Outcome.RAISED, exception={"type": "RuntimeError", "message": "m"})
    assert counterexample.came_back(call) == "raised RuntimeError: m"


def test_the_search_has_its_own_seed_stream():
    """Never the generator a hidden test gets (seeded from the run's seed and the test's node id)."""
    seeds = {counterexample.search_seed(0, e.name) for e in COURSE.exercises}
    assert len(seeds) == len(COURSE.exercises)
    hidden = {int.from_bytes(hashlib.sha256(f"0:{t}".encode()).digest()[:8], "little")
              for t in ("grader/cases/hidden/test_grad.py::test_hvp_random[float32-sum_cubes]",)}
    assert not seeds & hidden


def test_the_simplest_input_is_what_hypothesis_draws_first():
    """A search tries the simplest input before Hypothesis starts, and Hypothesis's first run then makes no
    call: both must be the same input, for each kind of draw the tests make (shapes, values with and
    without integers nearest zero, a value kept away from a point)."""
    integers = [(1, 4), (0, 1), (2, 2), (-3, 3), (3, 9)]
    ranges = [(-2.0, 2.0, None, 0.0), (0.5, 3.0, None, 0.0), (-3.0, -0.5, None, 0.0), (-1.0, 1.0, 0.0, 0.5)]
    first = []

    @counterexample.drawn(1, 1)
    def prop(data):
        draws = counterexample.Draws(data, small_first=True)
        first.append(([draws.integer(low, high) for low, high in integers],
                      [draws.tensor((2,), torch.float32, *r).tolist() for r in ranges]))

    prop()
    simplest = counterexample.SIMPLEST
    assert first == [([simplest.integer(low, high) for low, high in integers],
                      [simplest.tensor((2,), torch.float32, *r).tolist() for r in ranges])]
    assert first[0][1][3] == [-1.0, -1.0]  # 0 is kept away from
    with pytest.raises(counterexample.NotSimplest):  # no integer in range: Hypothesis draws the first input
        simplest.tensor((1,), torch.float32, 0.1, 0.9)


HANGS_ON_ZERO = '''
import torch


def hvp(f, x, v):
    if bool((x == 0).any()):  # never on a hidden input (uniform floats); the search's shrinking goes there
        while True:
            pass
    x = x.detach().clone().requires_grad_(True)
    (g,) = torch.autograd.grad(f(x), x, create_graph=True)
    (hv,) = torch.autograd.grad(g.sum(), x)
    return hv
'''


@pytest.mark.slow
def test_a_search_that_hangs_costs_nothing_more_than_the_failed_test(tmp_path):
    """The same submission graded with and without the search: the same statuses and points; the hang
    during the search ends it within its budget (the course file's seconds), and no counterexample is one
    the student's code did not answer."""
    import time

    from grader.host.runner import Engine, Options

    source = (SOLUTIONS / "grad.py").read_text() + "\n" + HANGS_ON_ZERO
    folder = make_submission(tmp_path / "hangs", {"grad.py": source})
    engine = Engine(Options(seed=0, exercises={"hvp"}))
    try:
        engine.plugin.counterexamples_on = False
        start = time.monotonic()
        plain = engine.grade(folder)
        plain_s = time.monotonic() - start
        engine.plugin.counterexamples_on = True
        start = time.monotonic()
        searched = engine.grade(folder)
        searched_s = time.monotonic() - start
    finally:
        engine.close()
    statuses = lambda r: [(t["name"], t["status"], t["score"]) for e in r["exercises"] for t in e["tests"]]  # noqa: E731
    assert statuses(searched) == statuses(plain) and searched["score"] == plain["score"] < plain["max_score"]
    assert searched_s - plain_s < COURSE.counterexamples.seconds + 5
    ce = exercise_entry(searched, "hvp").get("counterexample")
    assert ce is None or not ce["got"].startswith("raised"), ce


# -- the workers a search ends: killed at once, reaped when the submission's code is closed ---------------

class _Ending:
    """A worker handle that records what is done to it (`StudentCode.end_workers`, `close`)."""

    def __init__(self, log: list, name: str, printed: str, peak: float):
        self.log, self.name, self.peak = log, name, peak
        self.conn = type("Conn", (), {"fileno": lambda self: -1, "close": lambda self: None})()
        self.output = type("Out", (), {"text": lambda self: printed})()

    def kill(self) -> None:
        self.log.append(("kill", self.name))

    def close(self, grace: float = 0.0) -> None:
        self.log.append(("close", self.name))

    def peak_memory_mb(self):
        return self.peak

    def end_status(self, timeout: float = 1.0) -> str:
        return "signal 9"

    def tree_memory_kb(self, precise: bool = False):
        return None


def _student_with(mode: str):
    from grader.host.student_code import StudentCode
    from grader.protocol.limits import Limits, SandboxPlan

    launcher = type("L", (), {"plan": SandboxPlan(mode=mode), "spawn": None, "close": lambda self: None})()
    student = StudentCode({"grad.py": b""}, launcher, {"hvp": "grad"}, Limits())
    student._confirm_replies = lambda slot, seconds=1.0: None  # no socket: no ping before a worker ends
    return student


@pytest.mark.parametrize("mode", ["root-namespaces", "user-namespaces", "process"])
def test_ended_workers_are_killed_at_once_and_reaped_by_close(mode):
    """Namespace sandboxes: `end_workers` kills the worker and waits for nothing (a search starts its fresh
    worker meanwhile); `close` reaps every one, so the score file still comes after each is gone, with the
    grading worker's output and every worker's peak memory, and a search worker's output dropped. The
    process sandbox (workers share the user id and the file system) reaps each before the next starts."""
    log: list = []
    student = _student_with(mode)
    student.workers["all"] = _Ending(log, "grading", "graded calls\n", 30.0)
    student.end_workers()
    student.workers["all"] = _Ending(log, "search", "search calls\n", 50.0)
    student.end_workers(keep_output=False)
    if mode == "process":
        assert log == [("close", "grading"), ("close", "search")]
    else:
        assert log == [("kill", "grading"), ("kill", "search")] and student.peak_memory_mb is None
    student.close()
    assert [e for e in log if e[0] == "close"] == [("close", "grading"), ("close", "search")]
    assert student.captured_output() == "--- all modules ---\ngraded calls\n" and student.peak_memory_mb == 50.0
    assert student.workers == {} and student.ending == []


PRINTS_AND_FAILS = '''
import torch


def hvp(f, x, v):
    print("hvp called")
    return v * 0
'''


def test_a_search_keeps_the_graded_output_and_peak_memory(tmp_path):
    """Graded with and without the search: the same output (what the grading's calls printed, none of the
    search's) and a peak memory in both; the search found its counterexample."""
    from grader.host.runner import Engine, Options

    source = (SOLUTIONS / "grad.py").read_text() + "\n" + PRINTS_AND_FAILS
    folder = make_submission(tmp_path / "prints", {"grad.py": source})
    engine = Engine(Options(seed=0, exercises={"hvp"}))
    try:
        engine.plugin.counterexamples_on = False
        plain = engine.grade(folder)
        engine.plugin.counterexamples_on = True
        searched = engine.grade(folder)
    finally:
        engine.close()
    assert "counterexample" in exercise_entry(searched, "hvp") and "counterexample" not in exercise_entry(plain, "hvp")
    assert plain["output"].count("hvp called") > 0 and searched["output"] == plain["output"]
    assert searched["sandbox"]["peak_memory_mb"] and plain["sandbox"]["peak_memory_mb"]


# -- the search's worker started ahead -------------------------------------------------------------------

def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            return "State:\tZ" not in f.read()
    except OSError:
        return False


@pytest.fixture(scope="module")
def plain_engine():
    from grader.host.runner import Engine, Options

    engine = Engine(Options(seed=0, exercises={"hvp"}))
    yield engine
    engine.close()


def test_a_spare_worker_is_the_next_start_and_an_untaken_one_ends_with_close(plain_engine, tmp_path):
    """`spare_ahead` starts a worker that gets nothing until the next start takes it (the search's, after
    `end_workers`); in the process sandbox there is none; one no start took is ended by `close`."""
    from grader.host.student_code import Fn, StudentCode

    files = {"grad.py": (SOLUTIONS / "grad.py").read_bytes()}
    x, v = torch.tensor([1.0, 2.0]), torch.tensor([1.0, 0.0])
    student = StudentCode(files, plain_engine.launcher, {"hvp": "grad"}, plain_engine.options.limits)
    apart = student.workers_apart()
    try:
        student.call("hvp", Fn("sum_cubes"), x, v)
        grading = student.workers["all"]
        student.spare_ahead()
        if not apart:
            assert student.spare is None
            return
        thread, started = student.spare
        thread.join(30)
        spare = started["worker"]
        assert spare.pid != grading.pid and _alive(spare.pid) and student.spares_taken == 0
        student.end_workers()
        assert student.call("hvp", Fn("sum_cubes"), x, v).value is not None
        assert student.workers["all"] is spare and student.spares_taken == 1 and student.workers_started == 2
        student.spare_ahead()  # once a submission: nothing more
        assert student.spare == (thread, started)
    finally:
        student.close()
    assert not _alive(grading.pid) and not _alive(spare.pid) and student.ending == []

    untaken = StudentCode(files, plain_engine.launcher, {"hvp": "grad"}, plain_engine.options.limits)
    untaken.spare_ahead()
    untaken.close()
    worker = untaken.spare[1]["worker"]
    assert not _alive(worker.pid) and untaken.spares_taken == 0 and untaken.workers_started == 0


def test_a_spare_is_started_only_where_a_search_will_run(plain_engine, tmp_path, monkeypatch):
    """Grading starts the spare at a failed hidden test that the search will take (random inputs, not a
    stub's "not written", not judged by a probe): none for the reference, a stub, or with the search off."""
    from grader.host import student_code

    asked: list = []
    monkeypatch.setattr(student_code.StudentCode, "spare_ahead", lambda self: asked.append(1))
    wrong = make_submission(tmp_path / "wrong", {"grad.py": (SOLUTIONS / "grad.py").read_text() + "\n" + PRINTS_AND_FAILS})
    stub = make_submission(tmp_path / "stub", {"grad.py": "def hvp(f, x, v):\n    raise NotImplementedError\n"})
    for folder, search, expected in ((SOLUTIONS, True, 0), (stub, True, 0), (wrong, False, 0), (wrong, True, 1)):
        asked.clear()
        plain_engine.plugin.counterexamples_on = search
        try:
            plain_engine.grade(folder)
        finally:
            plain_engine.plugin.counterexamples_on = True
        assert (len(asked) > 0) == bool(expected), (folder.name, search, asked)
