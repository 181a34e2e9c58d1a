"""Property checks for students: `grader check` runs each exercise's property on fresh random inputs.

An exercise's property is a public test function the course file names (`property:`), written like any
test (`student`, `rng`, the kit's checks) against a public oracle (grader/cases/public/finite_differences.py).
`grader check` runs it here instead of once: its draws (`kit.draw`, `randint`, `pick`) come from Hypothesis
(`counterexample.Draws`), from a seed the check prints (`grader check --seed N` repeats it), for the
course's budget (`properties:`). The student's function is called through the worker exactly as the
public checks call it (`StudentCode.call`, within the exercise's budget), and the test's own checks decide.
The first failure is shrunk as a counterexample is (the simplest parameters first, the smallest shapes,
small integers), and the test fails with it: what was wrong, the call to run in the exercises folder, what
came back and what the oracle expected. Worth no points: `grader grade` never runs a property.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from grader.catalog import Course, PropertyChecks
from grader.host.counterexample import Draws, Recorded, SearchOver, came_back, drawn, shown, snippet
from grader.host.student_code import CallTimeout, CodeUnavailable, StudentCode, Tampered, WorkerFault

HEADER = ("smallest failing input found (run it in your exercises folder) / "
          "找到的最小反例（在 exercises 文件夹中运行）:")
PROBE_HEADER = "smallest failing input found / 找到的最小反例:"


def property_seed(seed: int, exercise: str) -> int:
    """Hypothesis's seed for one exercise's property: from the check's seed and the exercise."""
    return int.from_bytes(hashlib.sha256(f"property:{seed}:{exercise}".encode()).digest()[:8], "little")


@dataclass
class _State:
    budget: PropertyChecks
    started: float = field(default_factory=time.monotonic)
    calls: int = 0
    found: tuple | None = None  # (the failing call, the failure) of the smallest failing input so far
    fault: BaseException | None = None  # a hang or crash of the student's code: the property stops on it

    def over(self) -> bool:
        return (self.fault is not None or self.calls >= self.budget.calls
                or time.monotonic() - self.started >= self.budget.seconds)


class _Student:
    """The `student` the property gets: counts each call against the budget and keeps the last one."""

    def __init__(self, student: StudentCode, state: _State):
        self.student, self.state, self.last = student, state, None
        self.course = student.course

    def call(self, function: str, *args, probe: str | None = None, **kwargs):
        if self.state.over():
            raise SearchOver()
        self.state.calls += 1
        self.last = Recorded(function, args, kwargs, probe)
        self.last.result = self.student.call(function, *args, probe=probe, **kwargs)
        return self.last.result


def run(student: StudentCode, exercise: str, test: Callable[..., Any], budget: PropertyChecks, seed: int,
        course: Course) -> None:
    """Run `test(student, rng)` on fresh inputs; raise the shrunk failure (an AssertionError, the kit's
    `Fail` with the call to run in its detail), or a hang or crash of the student's code as it came."""
    from hypothesis.errors import UnsatisfiedAssumption

    state = _State(budget)

    @drawn(property_seed(seed, exercise), budget.examples)
    def prop(data):
        if state.over():
            return
        recorder = _Student(student, state)
        try:
            test(student=recorder, rng=Draws(data))
        except (SearchOver, UnsatisfiedAssumption):
            raise
        except (CallTimeout, WorkerFault, CodeUnavailable, Tampered) as fault:
            state.fault = fault
            return
        except AssertionError as failure:
            if recorder.last is not None and recorder.last.result is not None:
                state.found = (recorder.last, failure)
                if getattr(failure, "mistake", None) == "not_implemented" or _not_written(failure):
                    state.fault = failure  # not written yet: no input shows more than that
            raise

    try:
        prop()
    except SearchOver:
        pass
    except Exception:  # noqa: BLE001  (the failure found, or Hypothesis giving up: `state.found` says)
        pass
    if state.found is not None:
        raise shrunk_failure(course, exercise, *state.found, seed=seed)
    if state.fault is not None:
        raise state.fault


def _not_written(failure: AssertionError) -> bool:
    raised = getattr(failure, "raised", None)
    return bool(raised) and "NotImplementedError" in str(raised[1])


def shrunk_failure(course: Course, exercise: str, recorded: Recorded, failure: AssertionError, seed: int):
    """The failure of the smallest input, with the call that shows it first in its detail (the kit's `Fail`
    keeps its reason, mistake and where the code raised; the plugin shows the detail of a public test)."""
    lines = [f"property check, seed {seed} (grader check --seed {seed} repeats it) / 性质检查，随机种子 {seed}"
             f"（grader check --seed {seed} 可重现）", HEADER if recorded.probe is None else PROBE_HEADER]
    if recorded.probe is None:
        module = course.exercise(exercise).module_name
        names = [f"arg{i}" for i in range(len(recorded.args))]
        lines += ["    " + line for line in snippet(course, module, recorded.function, recorded.args,
                                                      recorded.kwargs, names).splitlines()]
        lines.append(f"  got / 实际得到: {came_back(recorded.result)}")
    else:  # a probe runs more than the call (SmoothAbs's backward): its arguments, as the check drew them
        lines.append(f"    {recorded.function}: the check's arguments / 检查所用的参数: "
                     + ", ".join(shown(a) for a in recorded.args))
    reason = getattr(failure, "reason", None)
    if reason is None:  # a plain assert of the test: its text, then the input
        return AssertionError("\n".join([str(failure), *lines]))
    detail = getattr(failure, "detail", "")
    failure.detail = "\n".join(lines + ([detail] if detail else []))
    failure.args = (f"{reason}\n{failure.detail}",)
    return failure
