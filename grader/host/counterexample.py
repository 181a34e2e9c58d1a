"""The smallest input that shows a failed exercise's mistake, found and shrunk on the trusted side.

When an exercise loses points on a general test, its general tests become a property: the same test
functions, with the inputs they draw (`grader.cases.kit.draw`, `randint`) drawn by Hypothesis from a
`Draws` instead of the run's seeded generator, and their parameter cases (the named f, the dtype)
drawn too. The student's function is called through the worker exactly as the hidden tests call it
(`StudentCode.call`: the sandbox, the limits, every check), and the test's own checks decide. The first
failing input is shrunk by Hypothesis towards the first parameter case (float32 before float64), the
smallest shapes (each `randint` towards its low end) and the simplest values (small integers first).
The simplest input of all, which Hypothesis would try first, is tried before Hypothesis starts: most
searches end there, with nothing simpler to find, and without Hypothesis's own cost.

The search has its own random stream (seeded from the run's seed and the exercise, never the hidden
tests' generator), a budget of calls and seconds per exercise (the course file's `counterexamples:`),
and runs after every test of the submission ran: a call that hangs, crashes or tampers ends the search
and changes nothing that was graded. The result is a call the student can run against their own
module (`snippet`), the reference's answer on it and what the student's code gave (`shown`).
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import importlib.util
import inspect
import math
import sys
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import torch

from grader import catalog as catalog_module
from grader.catalog import CounterexampleSearch, Course
from grader.host.student_code import Budget, CallTimeout, CodeUnavailable, StudentCode, WorkerFault
from grader.protocol.markers import Arg, Fn, Graph, _SessionDevice
from grader.protocol.messages import Outcome
from grader.protocol.wire import RemoteObject, RemoteTensor

SHOWN_CHARS = 600  # at most this much of a value or an exception in a score file
SMALL = 4  # elements: a counterexample this small in every tensor (issue 24's target) stops shrinking
STALLED = 20  # runs: ... once this many runs of the shrinker in a row failed to make it smaller,
STALLED_LARGER = 30  # and a larger one after this many (in the bench class, no shrink found a smaller failure
#                      after more than 30 runs without one; one went on for 148 runs and 18 calls for nothing)


# ----------------------------------------------------------------------------- drawing through Hypothesis

class Draws:
    """Stands for a test's `rng` during a search: kit.draw and kit.randint draw through Hypothesis; without
    `data`, they give what Hypothesis draws first, its simplest choice for each (`SIMPLEST`)."""

    def __init__(self, data=None, small_first: bool = False):
        self.data, self.small_first = data, small_first

    def integer(self, low: int, high: int) -> int:
        """With `small_first` (the counterexample search): `low` or `low + 1` in two draws of three, so that
        a failure is mostly found on small shapes already, and shrinking it makes few calls."""
        if self.data is None:  # the first of one_of's strategies (just(low)), or the integer nearest 0
            return low if _low_first(low, high, self.small_first) else min(max(0, low), high)
        return self.data.draw(_integers(low, high, self.small_first))

    def reject(self) -> None:
        """The test cannot use what was drawn: Hypothesis draws another input instead."""
        if self.data is None:
            raise NotSimplest()
        from hypothesis import assume

        assume(False)

    def tensor(self, shape: tuple[int, ...], dtype: torch.dtype, low: float, high: float,
               avoid: float | None = None, margin: float = 0.0) -> torch.Tensor:
        n = math.prod(shape)
        if self.data is None:
            values = [_simplest_value(low, high, avoid, margin)] * n
        else:
            from hypothesis import strategies as st

            values = self.data.draw(st.lists(_value(low, high, avoid, margin), min_size=n, max_size=n))
        values = [v + 0.0 for v in values]  # -0.0 reads as 0.
        return torch.tensor(values, dtype=torch.float64).reshape(shape).to(dtype)


SIMPLEST = Draws(small_first=True)


class NotSimplest(Exception):
    """The simplest input cannot be drawn without Hypothesis (no integer in a value's range) or the test
    rejected it: Hypothesis's own first input is tried instead."""


def _low_first(low: int, high: int, small_first: bool) -> bool:
    """Whether `_integers` puts `low` and `low + 1` first (else it draws any integer alike)."""
    return small_first and high - low >= 2


@lru_cache(maxsize=256)
def _integers(low: int, high: int, small_first: bool):
    from hypothesis import strategies as st

    if not _low_first(low, high, small_first):
        return st.integers(low, high)
    return st.one_of(st.just(low), st.just(low + 1), st.integers(low, high))


def _small_integers(low: float, high: float, avoid: float | None, margin: float) -> list[int]:
    """The integers in [low, high) a value may be, smallest magnitude first."""
    ints = [i for i in range(math.ceil(low), math.ceil(high)) if low <= i < high and _kept(i, avoid, margin)]
    return sorted(ints, key=abs)


def _simplest_value(low: float, high: float, avoid: float | None, margin: float) -> float:
    """What `_value` draws first: its first small integer."""
    ints = _small_integers(low, high, avoid, margin)
    if not ints:
        raise NotSimplest()
    return float(ints[0])


@lru_cache(maxsize=256)
def _value(low: float, high: float, avoid: float | None, margin: float):
    """One value in [low, high): a small integer where one fits (what shrinking tries first), else a float
    exact in float32, so that a counterexample reads the same in both dtypes."""
    from hypothesis import strategies as st

    ints = _small_integers(low, high, avoid, margin)
    floats = st.floats(_float32_inside(low, high), _float32_inside(high, low), exclude_max=True, allow_nan=False,
                       allow_infinity=False, width=32)
    if avoid is not None:
        floats = floats.filter(lambda v: _kept(v, avoid, margin))
    return st.one_of(st.sampled_from([float(i) for i in ints]), floats) if ints else floats


def _float32_inside(bound: float, other: float) -> float:
    """The float32 nearest `bound` on the side of `other` (Hypothesis's width=32 wants float32 bounds)."""
    b = torch.tensor(bound, dtype=torch.float32)
    if float(b) != bound and (float(b) - bound) * (other - bound) < 0:
        b = torch.nextafter(b, torch.tensor(other, dtype=torch.float32))
    return float(b)


def _kept(v: float, avoid: float | None, margin: float) -> bool:
    return avoid is None or abs(v - avoid) >= margin


# ----------------------------------------------------------------------------- the search

@dataclass
class Case:
    """One parameter case of a general test: calling `run(student, rng)` runs the test on those inputs."""

    test: str  # the test's node id
    run: Callable[[Any, Any], None]


@dataclass
class Recorded:
    function: str
    args: tuple
    kwargs: dict
    probe: str | None
    result: Any = None  # the CallResult


class SearchOver(Exception):
    """The search's budget is spent: no further call is made."""


class _SearchDone(BaseException):
    """Nothing more to search for: out of Hypothesis, whose runner lets a BaseException through (the budget
    spent, a call that hung or crashed, or the first input failing: Hypothesis's simplest, which no shrinking
    makes simpler). Hypothesis would otherwise go on running the test, each run ending before any call."""


@dataclass
class _State:
    budget: CounterexampleSearch
    started: float = field(default_factory=time.monotonic)
    calls: int = 0
    stopped: bool = False
    found: tuple | None = None  # (case, recorded call, failure) of the last failing input
    probe_judged: set = field(default_factory=set)  # the cases whose failure showed only through a probe
    runs: int = 0  # the property's runs so far (a run may end before any call)
    found_on_first_run: bool = False
    simplest_tried: bool = False  # the simplest input ran before Hypothesis (`_try_simplest`)
    found_at_run: int = 0  # the run that found `found`

    def over(self) -> bool:
        return (self.stopped or self.calls >= self.budget.calls
                or time.monotonic() - self.started >= self.budget.seconds)


class _Recorder:
    """The `student` a test gets during the search: counts and records each call, then makes it."""

    def __init__(self, student: StudentCode, state: _State, skip: bool = False):
        self.student, self.state, self.last, self.skip = student, state, None, skip

    def call(self, function: str, *args, probe: str | None = None, **kwargs):
        if self.skip or self.state.over():  # skip: the inputs are drawn as before (Hypothesis replays them
            raise SearchOver()              # alike), and no call is made
        self.state.calls += 1
        self.last = Recorded(function, args, kwargs, probe)
        self.last.result = self.student.call(function, *args, probe=probe, **kwargs)
        if self.state.calls == 1:  # the seconds count from here: starting the fresh worker is not the search's
            self.state.started = time.monotonic()
        return self.last.result


def search_seed(seed: int, exercise: str) -> int:
    """The search's own stream: from the run's seed and the exercise, apart from every test's generator."""
    return int.from_bytes(hashlib.sha256(f"counterexample:{seed}:{exercise}".encode()).digest()[:8], "little")


def drawn(seed: int, examples: int):
    """The Hypothesis decorators the search and the property checks (grader.host.properties) share: the
    decorated `test(data)` runs on up to `examples` inputs drawn from `seed`, then shrinks its first failure,
    with nothing saved or printed."""
    from hypothesis import HealthCheck, Phase, Verbosity, given, settings, strategies as st
    from hypothesis import seed as hypothesis_seed

    def decorate(test):
        return hypothesis_seed(seed)(settings(
            max_examples=max(1, int(examples)), deadline=None, database=None, derandomize=False,
            suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet, report_multiple_bugs=False,
            print_blob=False, phases=(Phase.generate, Phase.shrink))(given(st.data())(test)))

    return decorate


def search(student: StudentCode, exercise: str, cases: list[Case], budget: CounterexampleSearch, seed: int,
           course: Course) -> dict | None:
    """The smallest failing input found for `exercise`'s general tests, as the score file's `counterexample`,
    or None (none found within the budget, or the search stopped on a call that hung or crashed). The simplest
    input is tried first without Hypothesis (most searches end there: nothing is simpler); Hypothesis searches
    and shrinks only when it passes."""
    state = _State(budget)
    left = student.budget.limits.submission_budget_s - student.budget.student_time
    if left <= 0:
        return None  # the submission's time is spent: a search never runs past it
    saved = _guarded(student, min(budget.seconds, left))
    try:
        with student.working_on(exercise):
            if not _try_simplest(state, student, cases):
                _hypothesis_search(state, student, exercise, cases, budget, seed)
    finally:
        _restore(student, saved)
    if state.found is None:
        return None
    case, recorded, failure = state.found
    return describe(course, exercise, case.test, recorded, failure, state.calls)


def _try_simplest(state: _State, student: StudentCode, cases: list[Case]) -> bool:
    """Run the first case on the simplest input, as Hypothesis's first run would (its first choice for each
    draw): whether the search is over (it failed there, or a call hung or crashed)."""
    recorder = _Recorder(student, state)
    try:
        failure = _judge(state, cases[0], recorder, SIMPLEST, cases)
    except NotSimplest:
        return False
    state.simplest_tried = recorder.last is not None
    return failure is not None or state.stopped


def _hypothesis_search(state: _State, student: StudentCode, exercise: str, cases: list[Case],
                       budget: CounterexampleSearch, seed: int) -> None:
    """Draw inputs through Hypothesis, from the search's own stream, and shrink the first failure into
    `state.found`. Its first run is the simplest input again: tried already, it makes no call."""
    from hypothesis import strategies as st
    from hypothesis.control import current_build_context

    @drawn(search_seed(seed, exercise), budget.examples)
    def prop(data):
        if state.over() or state.found_on_first_run or current_build_context().is_final or _stalled(state):
            raise _SearchDone()  # is_final: Hypothesis replaying its smallest failure, which `state.found` holds
        state.runs += 1
        case = data.draw(st.sampled_from(cases))
        skip = case.test in state.probe_judged or (state.runs == 1 and state.simplest_tried)
        failure = _judge(state, case, _Recorder(student, state, skip=skip), Draws(data, small_first=True), cases)
        if failure is not None:
            state.found_on_first_run = state.runs == 1
            state.found_at_run = state.runs
            raise failure

    try:
        prop()
    except (Exception, _SearchDone):  # noqa: BLE001  (the failure found, or Hypothesis giving up: `state.found` says)
        pass


def _judge(state: _State, case: Case, recorder: _Recorder, draws: Draws, cases: list[Case]) -> AssertionError | None:
    """Run `case` on what `draws` gives: the failure, when it is a counterexample (kept in `state.found`).
    A call that hangs or crashes stops the search; a test that rejects its input (Hypothesis's, or
    NotSimplest) draws another."""
    try:
        case.run(recorder, draws)
    except SearchOver:
        return None
    except (CallTimeout, WorkerFault, CodeUnavailable):  # a hang or crash: the search ends here
        state.stopped = True
        return None
    except AssertionError as failure:
        if recorder.last is not None and recorder.last.result is not None and recorder.last.probe is None:
            state.found = (case, recorder.last, failure)
            return failure
        if recorder.last is not None and recorder.last.probe is not None:
            _judged_by_a_probe(state, case, cases)
        return None
    except NotSimplest:
        raise
    except Exception as exc:  # noqa: BLE001  (a test that cannot judge an input is no counterexample)
        if _rejected(exc):
            raise
        return None
    return None


def _rejected(exc: BaseException) -> bool:
    """Hypothesis's rejection of an input (assume(False)): it draws another one. (Not imported for this: an
    exception of Hypothesis's comes only once it is.)"""
    errors = sys.modules.get("hypothesis.errors")
    return errors is not None and isinstance(exc, errors.UnsatisfiedAssumption)


def _stalled(state: _State) -> bool:
    """The shrinker's last runs found no smaller failure: STALLED runs where the failure found is small (at most
    SMALL elements in every tensor), STALLED_LARGER where it is larger. What it would still try costs runs (each
    a call, or inputs drawn to no end) for at most simpler values."""
    if state.found is None:
        return False
    patience = STALLED if max_elements(state.found[1].args) <= SMALL else STALLED_LARGER
    return state.runs - state.found_at_run >= patience


def _judged_by_a_probe(state: _State, case: Case, cases: list[Case]) -> None:
    """The case failed in a probe (course code working on the student's result within the call: a later
    backward, a double backward): a call of the student's function alone shows nothing there, so its test
    is not run again; once every case is so, the search ends."""
    state.probe_judged.add(case.test)
    if len(state.probe_judged) == len({c.test for c in cases}):
        state.stopped = True


def _guarded(student: StudentCode, seconds: float) -> tuple:
    """Give the search fresh workers (none that held a hidden test's inputs, so that nothing the student's code
    returns to the search can carry them) and a time budget of its own (`seconds`: the course's, or what the
    submission's budget has left, whichever is less); keep what grading recorded, to put it back after."""
    student.end_workers()
    saved = (student.budget, dict(student.tampered_exercises), dict(student.module_fates), len(student.output))
    limits = dataclasses.replace(student.limits, exercise_budget_s=seconds, submission_budget_s=seconds)
    student.budget = Budget(limits)
    return saved


def _restore(student: StudentCode, saved: tuple) -> None:
    student.end_workers(keep_output=False)  # the search's workers end too: what they printed is no part of the grading's output
    searched = student.budget.student_time
    student.budget, tampered, fates, printed = saved
    # Grading is over, so no score changes; the next exercise's search gets only what is left of the
    # submission's budget: grading and searches together stay within it.
    student.budget.student_time += searched
    del student.output[printed:]
    student.tampered_exercises.clear()
    student.tampered_exercises.update(tampered)
    student.module_fates.clear()
    student.module_fates.update(fates)


# ----------------------------------------------------------------------------- what the score file holds

def describe(course: Course, exercise: str, test: str, recorded: Recorded, failure: BaseException,
             calls: int) -> dict:
    """The score file's `counterexample` of one exercise."""
    entry = course.exercise(exercise)
    reference = reference_function(course, entry.module, recorded.function)
    names = _parameter_names(reference, len(recorded.args))
    out: dict = {
        "snippet": snippet(course, entry.module_name, recorded.function, recorded.args, recorded.kwargs, names),
        "expected": expected(course, reference, recorded.args, recorded.kwargs),
        "got": came_back(recorded.result),
        "reason": _reason(failure),
        "test": test,
        "elements": max_elements(recorded.args),
        "calls": calls,
    }
    raised = getattr(failure, "raised", None)  # an exception the test names by the course file (as plugin.classify)
    key = getattr(failure, "mistake", None) or (course.error_mistake(*raised) if raised else None)
    if key:
        try:
            out["mistake"] = course.mistake(exercise, key).described(exercise, **getattr(failure, "fill", {}))
        except catalog_module.CatalogError:
            pass
    return out


def _reason(failure: BaseException) -> str:
    """What the test found wrong (bilingual, no input values), without the numbers of its detail."""
    reason = getattr(failure, "reason", None)
    if not reason:
        lines = str(failure).splitlines()
        reason = lines[0] if lines else type(failure).__name__
    return str(reason)[:SHOWN_CHARS]


def max_elements(value: Any) -> int:
    """The most elements of any tensor in the arguments (lists, leaves and graphs' arguments included)."""
    t = type(value)
    if t is torch.Tensor:
        return value.numel()
    if t is Arg:
        return value.tensor.numel()
    if t is Graph:
        return max_elements(value.args)
    if t in (tuple, list):
        return max((max_elements(v) for v in value), default=0)
    return 0


def came_back(result) -> str:
    """What the student's call gave: the value, or the exception it raised."""
    if result.outcome == Outcome.RAISED:
        exc = result.exception or {}
        return f"raised {exc.get('type')}: {exc.get('message', '')}"[:SHOWN_CHARS]
    return shown(result.value)[:SHOWN_CHARS]


def shown(value: Any) -> str:
    """A value as Python code that builds it (tensors as torch.tensor literals, values exact in their
    dtype): the same text for a reply's RemoteTensor and for the tensor a snippet returns."""
    t = type(value)
    if t is RemoteTensor:
        value = value.data.to(value.dtype)
        t = torch.Tensor
    if t is torch.Tensor or isinstance(value, torch.Tensor):
        return _tensor_literal(value.detach().cpu())
    if t is RemoteObject:
        return f"<{value.type_name} object>"
    if t is tuple:
        return "(" + ", ".join(shown(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if t is list:
        return "[" + ", ".join(shown(v) for v in value) + "]"
    if t is dict:
        return "{" + ", ".join(f"{k!r}: {shown(v)}" for k, v in value.items()) + "}"
    if t is float:
        return _number(value, torch.float64)
    return repr(value)


def _tensor_literal(t: torch.Tensor) -> str:
    dtype = t.dtype
    if dtype.is_floating_point:
        body = _nested(t.to(torch.float64).tolist(), dtype)
    else:
        body = repr(t.tolist())
    extra = "" if dtype in (torch.float32, torch.int64, torch.bool) else f", dtype=torch.{str(dtype).split('.')[-1]}"
    if t.numel() == 0:
        extra += "" if t.dim() == 1 else f").reshape({tuple(t.shape)}"
    return f"torch.tensor({body}{extra})"


def _nested(values, dtype) -> str:
    if type(values) is list:
        return "[" + ", ".join(_nested(v, dtype) for v in values) + "]"
    return _number(values, dtype)


def _number(v: float, dtype: torch.dtype) -> str:
    """The shortest decimal that gives `v` back in `dtype` (1., 0.5, 0.30000001 for float32's 0.3)."""
    if math.isnan(v) or math.isinf(v):
        return f"float('{v}')"
    v += 0.0  # -0.0 reads as 0.
    for digits in range(1, 18):
        text = f"{v:.{digits}g}"
        if torch.tensor(float(text), dtype=dtype).item() == torch.tensor(v, dtype=dtype).item():
            break
    if "e" not in text and "." not in text and "n" not in text:
        text += "."
    return text


# ----------------------------------------------------------------------------- the student's snippet

def snippet(course: Course, module: str, function: str, args: tuple, kwargs: dict, names: list[str]) -> str:
    """Lines the student runs in their exercises folder: imports, the arguments with their autograd state,
    then the call, last, as an expression."""
    prelude: list[str] = []
    rendered = [_argument(course, a, names[i] if i < len(names) else f"arg{i}", prelude) for i, a in enumerate(args)]
    rendered += [f"{k}={_argument(course, v, k, prelude)}" for k, v in kwargs.items()]
    imports = ["import torch", f"from {module} import {function}"]
    if any("GRAPHS[" in line for line in [*prelude, *rendered]):
        imports.append("from grader.cases.public.helpers import GRAPHS")
    return "\n".join([*imports, *prelude, f"{function}({', '.join(rendered)})"])


def _argument(course: Course, value: Any, name: str, prelude: list[str]) -> str:
    t = type(value)
    if t is Fn:
        return function_source(course, value.name)
    if t is Arg:
        line = f"{name} = {shown(value.tensor)}"
        if value.requires_grad:
            line += ".requires_grad_()"
        prelude.append(line)
        if value.grad is not None:
            prelude.append(f"{name}.grad = {shown(value.grad.to(value.tensor.dtype))}")
        return name
    if t is Graph:
        return f"GRAPHS[{value.name!r}]({', '.join(shown(a) for a in value.args)})"
    if isinstance(value, _SessionDevice):
        return repr("cpu")
    if t in (tuple, list):
        inner = ", ".join(_argument(course, v, f"{name}{i}", prelude) for i, v in enumerate(value))
        return f"[{inner}]" if t is list else f"({inner}{',' if len(value) == 1 else ''})"
    return shown(value)


def function_source(course: Course, name: str) -> str:
    """A named function of the course's helpers as the source it is written with (`lambda x: (x ** 3).sum()`)."""
    for path in course.helpers:
        sources = _function_sources(str(path))
        if name in sources:
            return sources[name]
    return f"FUNCTIONS[{name!r}]"


@lru_cache(maxsize=8)
def _function_sources(path: str) -> dict[str, str]:
    text = Path(path).read_text("utf-8")
    lines = [line.encode() for line in text.splitlines(keepends=True)]  # once: not at every node (_segment)
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "FUNCTIONS" for t in node.targets) \
                and isinstance(node.value, ast.Dict):
            return {k.value: _segment(lines, v) for k, v in zip(node.value.keys, node.value.values)
                    if isinstance(k, ast.Constant)}
    return {}


def _segment(lines: list[bytes], node: ast.AST) -> str:
    """The source of `node`, as ast.get_source_segment gives it (the offsets count UTF-8 bytes), from lines
    split once (ast.get_source_segment splits the whole file again at each call)."""
    first, last = node.lineno - 1, node.end_lineno - 1
    if first == last:
        return lines[first][node.col_offset:node.end_col_offset].decode()
    return b"".join([lines[first][node.col_offset:], *lines[first + 1:last], lines[last][:node.end_col_offset]]).decode()


# ----------------------------------------------------------------------------- the reference's answer

@lru_cache(maxsize=32)
def _reference_module(path: str):
    """A module of the reference solutions, run in this trusted process (the instructor's code, never a
    student's), under a private name and kept out of sys.modules."""
    spec = importlib.util.spec_from_file_location(f"_reference_{Path(path).stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def reference_function(course: Course, module_file: str, function: str):
    folder = course.place("solutions")
    if folder is None or not (folder / module_file).is_file():
        return None
    return getattr(_reference_module(str(folder / module_file)), function, None)


def _parameter_names(function, count: int) -> list[str]:
    try:
        names = list(inspect.signature(function).parameters)[:count]
    except (TypeError, ValueError):
        names = []
    return names + [f"arg{i}" for i in range(len(names), count)]


def expected(course: Course, reference, args: tuple, kwargs: dict) -> str | None:
    """The reference's answer on the counterexample, as `shown` writes it (None without a reference)."""
    if reference is None:
        return None
    try:
        built = [_built(course, a) for a in args]
        value = reference(*built, **{k: _built(course, v) for k, v in kwargs.items()})
    except Exception as exc:  # noqa: BLE001
        return f"raised {type(exc).__name__}: {exc}"[:SHOWN_CHARS]
    return shown(value)[:SHOWN_CHARS]


def _built(course: Course, value: Any) -> Any:
    t = type(value)
    if t is Fn:
        return _helpers(course).FUNCTIONS[value.name]
    if t is Graph:
        return _helpers(course).GRAPHS[value.name](*value.args)
    if t is Arg:
        tensor = value.tensor.clone().requires_grad_(value.requires_grad)
        if value.grad is not None:
            tensor.grad = value.grad.to(tensor.dtype).clone()
        return tensor
    if t is torch.Tensor:
        return value.clone()
    if isinstance(value, _SessionDevice):
        return "cpu"
    if t in (tuple, list):
        return t(_built(course, v) for v in value)
    return value


def _helpers(course: Course):
    for path in course.helpers:
        module = _reference_module(str(path))
        if hasattr(module, "FUNCTIONS"):
            return module
    raise LookupError("the course has no helpers with FUNCTIONS")
