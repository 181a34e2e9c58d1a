"""One score file through the policy: the grade, and every point of difference from the raw score
listed with its reason.

In this order:
1. exercise overrides: the exercise's `score` becomes the override, its tests' total is kept as the
   exercise's `raw_score`, and an adjustment `{kind: override, exercise, points, reason}` adds the
   difference;
2. the late penalty on that total: `percent_per_day` of it per started day after due + grace (the
   student's extended due time if any), all of it after `max_days` days: `{kind: late, ...}`, listed
   only when it takes points (how late each submission was is in summary.csv);
3. an override of the total, the instructor's last word: it sets the grade, whatever came before;
4. `score` = `raw_score` + the adjustments' points, kept within [0, max_score].

The tests are never changed: they say what the code did. `raw_score` is the total `grader grade`
gave. A file that already went through `grader gradebook` is taken back to its raw scores first,
so applying a policy twice gives the same file, and a late penalty is never applied twice.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from grader.policy.config import LateRule
from grader.policy.timeutil import in_words, iso

OVERRIDE, LATE = "override", "late"
ADDED_KEYS = ("raw_score", "adjustments", "submitted_at")  # what this module adds to a score file


@dataclass(frozen=True)
class Override:
    exercise: str | None  # None: the total
    score: float
    reason: str


@dataclass(frozen=True)
class Deadline:
    due: datetime
    extended: bool  # an extension moved it for this student


def points(value: float) -> float:
    """Points as score files hold them: 4 decimals, a whole number as an int."""
    value = round(float(value), 4) + 0.0
    return int(value) if value == int(value) else value


def raw_view(data: dict) -> dict:
    """The score file as `grader grade` wrote it: what an earlier `grader gradebook` added is undone."""
    raw = copy.deepcopy(data)
    for exercise in raw["exercises"]:
        if "raw_score" in exercise:
            exercise["score"] = exercise.pop("raw_score")
    if "raw_score" in raw:
        raw["score"] = raw["raw_score"]
    for key in ADDED_KEYS:
        raw.pop(key, None)
    return raw


def started_days_late(submitted_at: datetime, due: datetime, grace: timedelta) -> int:
    """0 when handed in by due + grace; else the days begun since then (1 minute late is 1 day)."""
    late = submitted_at - (due + grace)
    return math.ceil(late / timedelta(days=1)) if late > timedelta(0) else 0


def late_fraction(days: int, rule: LateRule) -> float:
    """The share of the score a late hand-in loses."""
    if days == 0 or rule.max_days is None:
        return 0.0
    return 1.0 if days > rule.max_days else min(1.0, days * rule.percent_per_day / 100)


def late_adjustment(base: float, submitted_at: datetime, deadline: Deadline, rule: LateRule) -> dict | None:
    """The late penalty, or None when nothing is taken (on time, `late: none`, 0%, or nothing to take)."""
    days = started_days_late(submitted_at, deadline.due, rule.grace)
    fraction = late_fraction(days, rule)
    if fraction == 0 or base <= 0:
        return None
    due = f"the {'extended ' if deadline.extended else ''}due time {iso(deadline.due)}"
    grace = f" and {in_words(rule.grace)} of grace" if rule.grace else ""
    after = in_words(submitted_at - deadline.due - rule.grace)
    if days > rule.max_days:
        cost = f"{days} started days, more than the {rule.max_days} accepted: no points"
    else:
        cost = f"{days} started day{'s' if days > 1 else ''} x {rule.percent_per_day:g}% of {points(base):g}"
    return {"kind": LATE, "points": points(-base * fraction),
            "reason": f"handed in {iso(submitted_at)}, {after} after {due}{grace}: {cost}"}


def apply_policy(data: dict, submitted_at: datetime, deadline: Deadline, rule: LateRule,
                 overrides: list[Override]) -> dict:
    """The adjusted score file (a new dict); `data` is a valid score file, adjusted before or not."""
    final = raw_view(data)
    raw_score = final["score"]
    adjustments = []
    exercises = {exercise["name"]: exercise for exercise in final["exercises"]}
    for override in (o for o in overrides if o.exercise is not None):
        exercise = exercises[override.exercise]
        adjustments.append({"kind": OVERRIDE, "exercise": override.exercise,
                            "points": points(override.score - exercise["score"]), "reason": override.reason})
        exercise["raw_score"], exercise["score"] = exercise["score"], points(override.score)
    late = late_adjustment(raw_score + _sum(adjustments), submitted_at, deadline, rule)
    if late:
        adjustments.append(late)
    for override in (o for o in overrides if o.exercise is None):
        adjustments.append({"kind": OVERRIDE, "points": points(override.score - raw_score - _sum(adjustments)),
                            "reason": override.reason})
    score = points(min(final["max_score"], max(0.0, raw_score + _sum(adjustments))))
    return _with_adjustments(final, score, raw_score, adjustments, iso(submitted_at))


def _sum(adjustments: list[dict]) -> float:
    return sum(a["points"] for a in adjustments)


def _with_adjustments(final: dict, score: float, raw_score: float, adjustments: list[dict], submitted_at: str) -> dict:
    """The score file with the grade in `score` and the added keys right after it, for a reader's eye."""
    out = {}
    for key, value in final.items():
        out[key] = value
        if key == "score":
            out.update(score=score, raw_score=raw_score, adjustments=adjustments, submitted_at=submitted_at)
    return out
