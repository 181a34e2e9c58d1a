"""Load the score files of a grading run, validate them, and summarise scores.

`grader grade --out DIR` writes `DIR/<submission>.json` (one per submission) and
`DIR/summary.csv`. `load_score_dir(DIR)` reads every `*.json` there (files whose name starts
with a dot, such as the LTI ledger, are not score files) and returns the valid ones together
with a list of the files it could not use and why: an unreadable or invalid file is reported,
never skipped in silence and never scored.

Files are validated against `grader/schema/score.schema.json` with jsonschema when it is
installed, and against a smaller built-in check of the fields this package uses otherwise.
Files written by `grader gradebook` (`raw_score`, `adjustments`, `submitted_at`) are read like
raw ones: `score` is then the adjusted total, `raw_score` plus the adjustments' points, clamped
to [0, max_score].

Any valid JSON is survived: NaN and Infinity (not JSON) and nesting too deep to parse are
reported; every string a submission could control goes through `grader.safetext.clean_text`
(lone surrogates, control characters, workflow commands) before an exporter sees it; a score
above its maximum (a test, an exercise or the total) is clamped, with a warning that names it.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable

from grader.host.results import READABLE_SCHEMA_VERSIONS
from grader.lms import LmsError
from grader.protocol.messages import TestStatus
from grader.safetext import clean_text

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schema" / "score.schema.json"
TEST_STATUSES = tuple(TestStatus)  # declared once, in grader.protocol.messages
NAME_LIMIT = 200  # characters of a submission, exercise or test name
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


@dataclass(frozen=True)
class ScoreProblem:
    """A score file that could not be used, with the reason in plain words."""

    path: Path
    reason: str
    submission: str  # from the file when it could be read, else the file name without .json

    def as_dict(self) -> dict[str, str]:
        return {"file": str(self.path), "submission": self.submission, "reason": self.reason}


@dataclass
class ScoreSet:
    directory: Path
    scores: list[SubmissionScore] = field(default_factory=list)
    problems: list[ScoreProblem] = field(default_factory=list)

    @property
    def warnings(self) -> list[str]:
        return [w for s in self.scores for w in s.warnings]


# ----------------------------------------------------------------------------- loading


def load_score_dir(directory: str | Path) -> ScoreSet:
    """Read every score file of `directory`. Raises LmsError only if there is nothing to read."""
    directory = Path(directory)
    if not directory.is_dir():
        raise LmsError(f"{directory}: not a directory of score files (expected the --out DIR of `grader grade`)")
    files = sorted(p for p in directory.glob("*.json") if not p.name.startswith("."))
    if not files:
        raise LmsError(f"{directory}: no score files (*.json) found")
    validate = _schema_validator()
    loaded = [load_score_file(path, validate) for path in files]
    files_per_submission: dict[str, list[str]] = {}
    for item in loaded:
        if isinstance(item, SubmissionScore):
            files_per_submission.setdefault(item.submission, []).append(item.path.name)
    result = ScoreSet(directory)
    for item in loaded:
        if isinstance(item, ScoreProblem):
            result.problems.append(item)
        elif len(files_per_submission[item.submission]) > 1:
            # Ambiguous: which one is the student's score? Report all, export none.
            others = ", ".join(files_per_submission[item.submission])
            result.problems.append(ScoreProblem(
                item.path, f"submission {item.submission!r} is scored in several files ({others}); "
                "none of them is used until the extra ones are removed", item.submission))
        else:
            result.scores.append(item)
    return result


def load_score_path(path: str | Path) -> ScoreSet:
    """A single score file, or a directory of them (for the per-submission exports)."""
    path = Path(path)
    if path.is_dir():
        return load_score_dir(path)
    if not path.is_file():
        raise LmsError(f"{path}: no such score file or directory")
    result = ScoreSet(path.parent)
    loaded = load_score_file(path, _schema_validator())
    (result.problems if isinstance(loaded, ScoreProblem) else result.scores).append(loaded)
    return result


def _not_json(constant: str) -> None:
    raise ValueError(f"{constant} is not a JSON number")


def load_score_file(path: Path, validate=None) -> SubmissionScore | ScoreProblem:
    """Parse and validate one file; a problem is returned, not raised."""
    fallback_name = clean_text(path.stem, NAME_LIMIT, one_line=True)
    try:
        data = json.loads(path.read_text(encoding="utf-8"), parse_constant=_not_json)
    except OSError as exc:
        return ScoreProblem(path, f"cannot be read: {exc.strerror or exc}", fallback_name)
    except UnicodeDecodeError:
        return ScoreProblem(path, "is not UTF-8 text", fallback_name)
    except json.JSONDecodeError as exc:
        return ScoreProblem(path, f"is not valid JSON (line {exc.lineno}: {exc.msg})", fallback_name)
    except ValueError as exc:  # NaN, Infinity
        return ScoreProblem(path, f"is not valid JSON ({exc})", fallback_name)
    except RecursionError:
        return ScoreProblem(path, "is nested too deeply to be a score file", fallback_name)
    name = data.get("submission") if isinstance(data, dict) else None
    submission = clean_text(name, NAME_LIMIT, one_line=True) if isinstance(name, str) else ""
    submission = submission or fallback_name
    errors = (validate or _schema_validator())(data)
    if not errors:
        errors = _consistency_errors(data)
    if errors:
        shown = "; ".join(_shorten(clean_text(e, one_line=True)) for e in errors[:3])
        shown += f"; and {len(errors) - 3} more" if len(errors) > 3 else ""
        return ScoreProblem(path, f"does not match the score file schema: {shown}", submission)
    submitted_at = _parse_time(data.get("submitted_at"))
    if "submitted_at" in data and submitted_at is None:
        return ScoreProblem(path, f"submitted_at {clean_text(str(data['submitted_at']), 60)!r} is not an ISO 8601 "
                                  "time with a time zone (e.g. 2026-12-01T23:59:00+08:00)", submission)
    return _to_submission_score(data, path, submission, submitted_at)


def _parse_time(text: Any) -> datetime | None:
    """An ISO 8601 time with a time zone, or None."""
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text.strip().replace("z", "Z"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


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


def _to_submission_score(data: dict[str, Any], path: Path, submission: str,
                         submitted_at: datetime | None) -> SubmissionScore:
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


# ----------------------------------------------------------------------------- validation


def _shorten(text: str, limit: int = 240) -> str:
    """jsonschema quotes the offending value, which may be a whole test log: keep both ends."""
    if len(text) <= limit:
        return text
    half = (limit - 5) // 2
    return f"{text[:half]} ... {text[-half:]}"


def _schema_validator():
    """A function data -> list of error strings: jsonschema if installed, else a built-in check."""
    try:
        import jsonschema
    except ImportError:
        return _minimal_errors
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema)

    def errors(data: Any) -> list[str]:
        found = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
        return [f"{_json_path(e.absolute_path)}: {e.message}" for e in found]

    return errors


def _json_path(parts: Iterable[Any]) -> str:
    text = "$"
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _minimal_errors(data: Any) -> list[str]:
    """The fields this package reads, checked without jsonschema."""
    if not isinstance(data, dict):
        return ["$: not a JSON object"]
    errors = []
    if data.get("schema_version") not in READABLE_SCHEMA_VERSIONS:
        errors.append(f"$.schema_version: must be one of {', '.join(READABLE_SCHEMA_VERSIONS)}")
    if not isinstance(data.get("submission"), str) or not data["submission"].strip():
        errors.append("$.submission: missing or empty")
    for key, positive in (("score", False), ("max_score", True)):
        if not _is_number(data.get(key)) or data[key] < 0 or (positive and data[key] == 0):
            errors.append(f"$.{key}: must be a number {'> 0' if positive else '>= 0'}")
    exercises = data.get("exercises")
    if not isinstance(exercises, list) or not exercises:
        return errors + ["$.exercises: must be a non-empty list"]
    for i, ex in enumerate(exercises):
        where = f"$.exercises[{i}]"
        if not isinstance(ex, dict):
            errors.append(f"{where}: not an object")
            continue
        for key in ("name", "module"):
            if not isinstance(ex.get(key), str):
                errors.append(f"{where}.{key}: missing")
        if not _is_number(ex.get("score")) or not _is_number(ex.get("max_score")) or ex["max_score"] <= 0:
            errors.append(f"{where}: score and max_score must be numbers, max_score > 0")
        tests = ex.get("tests")
        if not isinstance(tests, list) or not tests:
            errors.append(f"{where}.tests: must be a non-empty list")
            continue
        for j, t in enumerate(tests):
            if not isinstance(t, dict) or t.get("status") not in TEST_STATUSES \
                    or t.get("visibility") not in ("visible", "hidden") or not isinstance(t.get("name"), str) \
                    or not isinstance(t.get("message"), str) \
                    or not _is_number(t.get("score")) or not _is_number(t.get("max_score")):
                errors.append(f"{where}.tests[{j}]: needs name, status, score, max_score, visibility, message")
    return errors


def _consistency_errors(data: dict[str, Any]) -> list[str]:
    """Totals that must add up, or the LMS would show a different score than the grader.

    In a file adjusted by `grader gradebook`, `score` is `raw_score` plus the adjustments'
    points, clamped to [0, max_score]; an override may have changed an exercise's score, so the
    tests of an exercise need not add up to it there.
    """
    errors = []
    exercise_max = sum(ex["max_score"] for ex in data["exercises"])
    if not _close(exercise_max, data["max_score"]):
        errors.append(f"$.max_score is {data['max_score']} but the exercise maxima add up to {exercise_max:g}")
    if "adjustments" in data or "raw_score" in data:
        return errors + _adjustment_errors(data)
    exercise_total = sum(ex["score"] for ex in data["exercises"])
    if not _close(exercise_total, data["score"]):
        errors.append(f"$.score is {data['score']} but the exercise scores add up to {exercise_total:g}")
    for ex in data["exercises"]:
        tests_total = sum(t["score"] for t in ex["tests"])
        if not _close(tests_total, ex["score"]):
            errors.append(f"exercise {ex['name']}: score is {ex['score']} but its tests add up to {tests_total:g}")
    return errors


def _adjustment_errors(data: dict[str, Any]) -> list[str]:
    if not _is_number(data.get("raw_score")) or not isinstance(data.get("adjustments"), list):
        return ["$: a file adjusted by `grader gradebook` needs both raw_score and adjustments"]
    for i, a in enumerate(data["adjustments"]):
        if not (isinstance(a, dict) and isinstance(a.get("kind"), str) and _is_number(a.get("points"))
                and isinstance(a.get("reason"), str)):
            return [f"$.adjustments[{i}]: needs kind (text), points (a number) and reason (text)"]
    points = sum(a["points"] for a in data["adjustments"])
    expected = min(max(data["raw_score"] + points, 0.0), data["max_score"])
    if not _close(expected, min(data["score"], data["max_score"])):
        return [f"$.score is {data['score']} but raw_score {data['raw_score']} with the adjustments' "
                f"{points:+g} points gives {expected:g}"]
    return []


def _close(a: float, b: float) -> bool:
    """Equal up to rounding; sums that overflow to infinity are never equal to anything."""
    return math.isfinite(a) and math.isfinite(b) and abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))


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
