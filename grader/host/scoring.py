"""The rules of scoring that look at a submission's tests together (docs/scoring.md).

Tampering costs the exercise (`zero_tampered`): when a call of an exercise changed what the worker
relies on, none of its tests counts, those that ran before included.

No points without work: a test that is not one of its exercise's `general` tests (the course file)
earns its points only when every general test of that exercise earned points in the same run, that
is passed on at least one of its random inputs. Otherwise it is reported `failed`, with a message
that says which general test it waits for; a test of zero points is left as it is. A general test
that did not run (`grader check` runs the public tests only) withholds nothing.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from grader.catalog import Catalog
from grader.display import withheld_message
from grader.protocol.messages import TestStatus


def withhold_points_without_work(outcomes: Iterable, catalog: Catalog) -> None:
    """Apply the rule to a run's test outcomes (grader.host.plugin.TestOutcome), in place."""
    by_exercise: dict[str, list] = defaultdict(list)
    for outcome in outcomes:
        by_exercise[outcome.spec.exercise].append(outcome)
    for name, tests in by_exercise.items():
        general = catalog.exercise(name).general
        ran = {o.spec.name for o in tests}
        waiting_for = [g for g in general if g in ran
                       and not any(o.status == TestStatus.PASSED for o in tests if o.spec.name == g)]
        if not waiting_for:
            continue
        for o in tests:
            if o.spec.name not in general and o.status == TestStatus.PASSED and o.points > 0:
                o.status, o.message = TestStatus.FAILED, withheld_message(waiting_for)


def zero_tampered(outcomes: Iterable, tampered_exercises: dict[str, str]) -> None:
    """Every test of an exercise one of whose calls tampered (exercise -> the message) scores 0, in place."""
    for o in outcomes:
        message = tampered_exercises.get(o.spec.exercise)
        if message is not None and o.status != TestStatus.ERROR:
            o.status, o.message, o.mistake = TestStatus.ERROR, f"{message}; the exercise scores 0 / 本题记 0 分", None
