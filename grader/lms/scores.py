"""The score files of a grading run as the exports see them (typed, cleaned, clamped), and score summaries.

`grader grade --out DIR` writes `DIR/<submission>.json` (one per submission) and
`DIR/summary.csv`. `load_score_dir(DIR)` reads them through `grader.score_files`, the one reader
and validator of score files, and returns the valid ones together with the files it could not
use and why: an unreadable or invalid file is reported, never skipped in silence and never scored.

Files written by `grader gradebook` (`raw_score`, `adjustments`, `submitted_at`) are read like
raw ones: `score` is then the adjusted total, `raw_score` plus the adjustments' points, clamped
to [0, max_score].

Every string a submission could control goes through `grader.safetext.clean_text`
(lone surrogates, control characters, workflow commands) before an exporter sees it; a score
above its maximum (a test, an exercise or the total) is clamped, with a warning that names it.
An ungradable file (the grader failed: schema 1.4's `status`) is no score: it is a problem every
export lists and skips, and `ScoreSet.ungradable` names it apart.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from grader import score_files
from grader.lms import LmsError
from grader.safetext import clean_text
from grader.score_files import NAME_LIMIT
from grader.score_files import Unusable as ScoreProblem  # a file that could not be used, and why

SCHEMA_PATH = score_files.SCHEMA_FILE
MESSAGE_LIMIT = 5_000  # characters of a message; each exporter cuts further to its own limit


@dataclass(frozen=True)
class TestResult:
    name: str
    status: str  # passed | failed | error | timeout
    score: float
    max_score: float
    visibility: str  # visible | hidden
    message: str
    duration_s: float = 0.0

    @property
    def hidden(self) -> bool:
        return self.visibility == "hidden"


@dataclass(frozen=True)
class ExerciseScore:
    name: str
    module: str
    score: float
    max_score: float
    tests: tuple[TestResult, ...]


@dataclass(frozen=True)
class Adjustment:
    """One change `grader gradebook` made to the raw score: kind 'late', 'override', ..."""

    kind: str
    points: float
    reason: str


@dataclass(frozen=True)
class SubmissionScore:
    """One valid score file, its text cleaned and its scores clamped to their maxima."""

    submission: str
    score: float  # the total every export uses: adjusted when the file is adjusted
    max_score: float
    exercises: tuple[ExerciseScore, ...]
    submission_errors: tuple[str, ...]
    path: Path
    raw_score: float | None = None
    adjustments: tuple[Adjustment, ...] = ()
    submitted_at: datetime | None = None  # when the student handed in, if the file says
    warnings: tuple[str, ...] = ()  # what was changed on the way in (clamped scores)

    @property
    def fraction(self) -> float:
        """The score as a fraction of the maximum, in [0, 1]."""
        return min(1.0, max(0.0, self.score / self.max_score))

    @property
    def late_adjustments(self) -> tuple[Adjustment, ...]:
        return tuple(a for a in self.adjustments if a.kind == "late")


@dataclass
class ScoreSet:
    directory: Path
    scores: list[SubmissionScore] = field(default_factory=list)
    problems: list[ScoreProblem] = field(default_factory=list)  # every file not exported, the ungradable included
    ungradable: list[ScoreProblem] = field(default_factory=list)  # valid files the grader could not grade

    @property
    def warnings(self) -> list[str]:
        return [w for s in self.scores for w in s.warnings]


# ----------------------------------------------------------------------------- loading


def load_score_dir(directory: str | Path) -> ScoreSet:
    """Read every score file of `directory`. Raises LmsError only if there is nothing to read."""
    directory = Path(directory)
    if not directory.is_dir():
        raise LmsError(f"{directory}: not a directory of score files (expected the --out DIR of `grader grade`)")
    return _score_set(directory, [directory])


def load_score_path(path: str | Path) -> ScoreSet:
    """A single score file, or a directory of them (for the per-submission exports)."""
    path = Path(path)
    return _score_set(path if path.is_dir() else path.parent, [path])


def _score_set(directory: Path, paths: list[Path]) -> ScoreSet:
    try:
        loaded = score_files.load(paths)
    except score_files.ScoreFileError as exc:
        raise LmsError(str(exc)) from None
    result = ScoreSet(directory)
    result.problems = loaded.unusable
    for found in loaded.files:
        if score_files.is_ungradable(found.data):  # listed and skipped by every export: its zeros are no grade
            problem = ScoreProblem(found.path, score_files.ungradable_reason(found.data), found.submission)
            result.ungradable.append(problem)
            result.problems.append(problem)
        else:
            result.scores.append(_to_submission_score(found))
    return result


class _Clamp:
    """Scores above their maximum, clamped and remembered, so the instructor is told which."""

    def __init__(self) -> None:
        self.found: list[str] = []

    def __call__(self, value: Any, maximum: float, what: str) -> float:
        value = float(value)
        if value > maximum:
            self.found.append(f"{what} {value:g}/{maximum:g}")
            return maximum
        return value


def _to_submission_score(found: score_files.ScoreFile) -> SubmissionScore:
    data, path, submission, submitted_at = found.data, found.path, found.submission, found.submitted_at
    clamp = _Clamp()
    exercises = []
    for ex in data["exercises"]:
        name = clean_text(ex["name"], NAME_LIMIT, one_line=True)
        tests = tuple(
            TestResult(
                name=(test_name := clean_text(t["name"], NAME_LIMIT, one_line=True)), status=t["status"],
                score=clamp(t["score"], float(t["max_score"]), f"test {name}::{test_name}"),
                max_score=float(t["max_score"]), visibility=t["visibility"],
                message=clean_text(t["message"], MESSAGE_LIMIT), duration_s=float(t.get("duration_s", 0.0)),
            )
            for t in ex["tests"]
        )
        exercises.append(ExerciseScore(name=name, module=clean_text(ex["module"], NAME_LIMIT, one_line=True),
                                       score=clamp(ex["score"], float(ex["max_score"]), f"exercise {name}"),
                                       max_score=float(ex["max_score"]), tests=tests))
    max_score = float(data["max_score"])
    score = clamp(data["score"], max_score, "total")
    warnings = ()
    if clamp.found:
        warnings = (f"{clean_text(path.name, one_line=True)}: score above its maximum ({'; '.join(clamp.found[:5])}"
                    f"{'; ...' if len(clamp.found) > 5 else ''}): exported at the maximum",)
    adjustments = tuple(Adjustment(clean_text(a["kind"], NAME_LIMIT, one_line=True), float(a["points"]),
                                   clean_text(a["reason"], 500, one_line=True))
                        for a in data.get("adjustments", ()))
    return SubmissionScore(
        submission=submission, score=score, max_score=max_score, exercises=tuple(exercises),
        submission_errors=tuple(clean_text(e, MESSAGE_LIMIT) for e in data.get("submission_errors", ())),
        path=path, raw_score=float(data["raw_score"]) if "raw_score" in data else None,
        adjustments=adjustments, submitted_at=submitted_at, warnings=warnings,
    )


# ----------------------------------------------------------------------------- summaries


def format_points(value: float) -> str:
    """A score as LMSs read it: '.' decimal point, at most 2 decimals, no exponent, no '-0'.

    Two decimals is the precision Canvas compares and shows (gradebook_importer.rb,
    no_change_to_value?); Moodle grade items show 2 decimals by default.
    """
    text = f"{round(value + 0.0, 2):.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


SUMMARY_LIMIT = 1_000  # characters of the one-line feedback (a gradebook comment)


def exercise_summary(score: SubmissionScore) -> str:
    """The short per-exercise feedback, one line: 'graph_node_counts 5/5; make_leaf 0/5; ...'."""
    parts = [f"{ex.name} {format_points(ex.score)}/{format_points(ex.max_score)}" for ex in score.exercises]
    text = "; ".join(parts)
    if score.adjustments:
        text += ". Adjusted: " + "; ".join(f"{a.kind} {a.points:+g} ({a.reason})" for a in score.adjustments)
        text += f"; total {format_points(score.score)}/{format_points(score.max_score)}"
    if score.submission_errors:
        text += ". Problems with the submission: " + " | ".join(score.submission_errors)
    return clean_text(text, SUMMARY_LIMIT, one_line=True)


Signature = tuple[float, tuple[tuple[str, float], ...]]


def _signature(score: SubmissionScore) -> Signature:
    return score.max_score, tuple((ex.name, ex.max_score) for ex in score.exercises)


def common_max_scores(scores: list[SubmissionScore]) -> tuple[float, list[tuple[str, float]], list[SubmissionScore]]:
    """The total and per-exercise maxima of most score files, and the files that differ.

    A gradebook column has one 'points possible', so files graded with other maxima (another
    grader version or case file) cannot share it: when more than half of the files agree, the
    others are returned to be reported and left out; with no such majority, raise, naming them.
    """
    signatures = Counter(_signature(s) for s in scores)
    (common, count), = signatures.most_common(1)
    if len(signatures) > 1 and count * 2 <= len(scores):
        lines = [f"  max {format_points(key[0])} over {len(key[1])} exercises: {n} file(s), e.g. "
                 + ", ".join([s.path.name for s in scores if _signature(s) == key][:5])
                 for key, n in signatures.most_common()]
        raise LmsError("the score files do not share the same exercises and maximum scores, so one gradebook "
                       "column cannot hold them all; regrade the odd ones or export them separately:\n"
                       + "\n".join(lines))
    odd = [s for s in scores if _signature(s) != common]
    return common[0], list(common[1]), odd


def odd_maxima_reason(total: float, exercises: int) -> str:
    return (f"graded with other exercises or maxima than the other score files (max {format_points(total)} over "
            f"{exercises} exercises); regrade it, or export it separately")
