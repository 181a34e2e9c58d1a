"""Load the score files of a grading run, validate them, and summarise scores.

`grader grade --out DIR` writes `DIR/<submission>.json` (one per submission) and
`DIR/summary.csv`. `load_score_dir(DIR)` reads every `*.json` there (files whose name starts
with a dot, such as the LTI ledger, are not score files) and returns the valid ones together
with a list of the files it could not use and why: an unreadable or invalid file is reported,
never skipped in silence and never scored.

Files are validated against `grader/schema/score.schema.json` with jsonschema when it is
installed, and against a smaller built-in check of the fields this package uses otherwise.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from grader.lms import LmsError

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schema" / "score.schema.json"
TEST_STATUSES = ("passed", "failed", "error", "timeout")


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
class SubmissionScore:
    """One valid score file."""

    submission: str
    score: float
    max_score: float
    exercises: tuple[ExerciseScore, ...]
    submission_errors: tuple[str, ...]
    path: Path

    @property
    def fraction(self) -> float:
        """The score as a fraction of the maximum, clamped to [0, 1]."""
        return min(1.0, max(0.0, self.score / self.max_score))


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


def load_score_file(path: Path, validate=None) -> SubmissionScore | ScoreProblem:
    """Parse and validate one file; a problem is returned, not raised."""
    fallback_name = path.stem
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        return ScoreProblem(path, f"cannot be read: {exc.strerror or exc}", fallback_name)
    except UnicodeDecodeError:
        return ScoreProblem(path, "is not UTF-8 text", fallback_name)
    except json.JSONDecodeError as exc:
        return ScoreProblem(path, f"is not valid JSON (line {exc.lineno}: {exc.msg})", fallback_name)
    name = data.get("submission") if isinstance(data, dict) else None
    submission = name if isinstance(name, str) and name.strip() else fallback_name
    errors = (validate or _schema_validator())(data)
    if not errors:
        errors = _consistency_errors(data)
    if errors:
        shown = "; ".join(_shorten(e) for e in errors[:3]) + (f"; and {len(errors) - 3} more" if len(errors) > 3 else "")
        return ScoreProblem(path, f"does not match the score file schema: {shown}", submission)
    return _to_submission_score(data, path)


def _to_submission_score(data: dict[str, Any], path: Path) -> SubmissionScore:
    exercises = tuple(
        ExerciseScore(
            name=ex["name"], module=ex["module"], score=float(ex["score"]), max_score=float(ex["max_score"]),
            tests=tuple(
                TestResult(
                    name=t["name"], status=t["status"], score=float(t["score"]), max_score=float(t["max_score"]),
                    visibility=t["visibility"], message=t["message"], duration_s=float(t.get("duration_s", 0.0)),
                )
                for t in ex["tests"]
            ),
        )
        for ex in data["exercises"]
    )
    return SubmissionScore(
        submission=data["submission"].strip(), score=float(data["score"]), max_score=float(data["max_score"]),
        exercises=exercises, submission_errors=tuple(data.get("submission_errors", ())), path=path,
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
    if data.get("schema_version") != "1.0":
        errors.append("$.schema_version: must be '1.0'")
    if not isinstance(data.get("submission"), str) or not data["submission"].strip():
        errors.append("$.submission: missing or empty")
    for key, positive in (("score", False), ("max_score", True)):
        if not _is_number(data.get(key)) or data[key] < 0 or (positive and data[key] == 0):
            errors.append(f"$.{key}: must be a number {'> 0' if positive else '>= 0'}")
    if "adjustments" in data and (not _is_number(data.get("raw_score")) or not isinstance(data["adjustments"], list)
                                  or not all(isinstance(a, dict) and _is_number(a.get("points"))
                                             for a in data["adjustments"])):
        errors.append("$.adjustments: must be a list of {kind, points, reason}, with a number raw_score")
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

    A file from `grader gradebook` (grader/policy) adds up through its `raw_score`s: the tests to
    the exercise's raw score, those to the file's `raw_score`, and that plus the `adjustments` to
    `score`, kept within [0, max_score]."""
    errors = []
    raw_total = data.get("raw_score", data["score"])
    exercise_total = sum(ex.get("raw_score", ex["score"]) for ex in data["exercises"])
    exercise_max = sum(ex["max_score"] for ex in data["exercises"])
    if not _close(exercise_total, raw_total):
        errors.append(f"$.{'raw_score' if 'raw_score' in data else 'score'} is {raw_total} but the exercise "
                      f"scores add up to {exercise_total:g}")
    if "adjustments" in data:
        adjusted = min(data["max_score"], max(0.0, raw_total + sum(a["points"] for a in data["adjustments"])))
        if not _close(adjusted, data["score"]):
            errors.append(f"$.score is {data['score']} but raw_score and the adjustments give {adjusted:g}")
    if not _close(exercise_max, data["max_score"]):
        errors.append(f"$.max_score is {data['max_score']} but the exercise maxima add up to {exercise_max:g}")
    for ex in data["exercises"]:
        tests_total = sum(t["score"] for t in ex["tests"])
        if not _close(tests_total, ex.get("raw_score", ex["score"])):
            errors.append(f"exercise {ex['name']}: score is {ex.get('raw_score', ex['score'])} but its tests add up "
                          f"to {tests_total:g}")
    return errors


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))


# ----------------------------------------------------------------------------- summaries


def format_points(value: float) -> str:
    """A score as LMSs read it: '.' decimal point, at most 2 decimals, no exponent, no '-0'.

    Two decimals is the precision Canvas compares and shows (gradebook_importer.rb,
    no_change_to_value?); Moodle grade items show 2 decimals by default.
    """
    text = f"{round(value + 0.0, 2):.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def exercise_summary(score: SubmissionScore) -> str:
    """The short per-exercise feedback, one line: 'graph_node_counts 5/5; make_leaf 0/5; ...'."""
    parts = [f"{ex.name} {format_points(ex.score)}/{format_points(ex.max_score)}" for ex in score.exercises]
    text = "; ".join(parts)
    if score.submission_errors:
        text += ". Problems with the submission: " + " | ".join(" ".join(e.split()) for e in score.submission_errors)
    return text


def common_max_scores(scores: list[SubmissionScore]) -> tuple[float, list[tuple[str, float]]]:
    """The total and per-exercise maxima shared by all score files.

    A gradebook column has one 'points possible', so files graded with different maxima
    (a different grader version or case file) cannot share one; raise, naming the odd files.
    """
    signatures: dict[tuple, list[SubmissionScore]] = {}
    for s in scores:
        key = (s.max_score, tuple((ex.name, ex.max_score) for ex in s.exercises))
        signatures.setdefault(key, []).append(s)
    if len(signatures) > 1:
        ranked = sorted(signatures.items(), key=lambda item: -len(item[1]))
        lines = [
            f"  max {format_points(key[0])} over {len(key[1])} exercises: {len(files)} file(s), e.g. "
            + ", ".join(f.path.name for f in files[:5])
            for key, files in ranked
        ]
        raise LmsError("the score files do not share the same exercises and maximum scores, so one gradebook "
                       "column cannot hold them all; regrade the odd ones or export them separately:\n"
                       + "\n".join(lines))
    (total, per_exercise), = signatures.keys()
    return total, list(per_exercise)
