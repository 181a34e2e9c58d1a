"""PrairieLearn external-grader `results.json`, from a score file.

The format and the checks PrairieLearn applies are from `PrairieLearn/PrairieLearn:
docs/externalGrading.md` and `apps/prairielearn/src/lib/externalGraderCommon.ts`
(`makeGradingResult`), docs/lms-formats.md, PrairieLearn:

- P1 `score` is a number in [0, 1] (the only required field when gradable; the job fails if it
  is not a number);
- P2 `gradable` is a boolean (false: not graded, no attempt used); we write true for a score
  file, false (with the reason as the message, no score) for an ungradable one (the grader failed);
- P3 `format_errors`, if present, is a string or a list of strings; we write none (format errors
  make the submission invalid, while a student's import error is graded as 0 for that module);
- P4 `message` and `output` are strings; `tests` is a list of
  `{name, description?, points, max_points, message?, output?}` with numbers for the points;
- P5 the file is at most 1 MB, and NUL bytes are replaced (Postgres refuses them): we write none,
  and no lone surrogate either (PostgreSQL's jsonb refuses `\\ud800` as it refuses `\\u0000`);
- P6 (display) `points` never above `max_points`: a score above its maximum is clamped when the
  score file is read (grader.lms.scores), with a warning.

Messages of hidden tests are replaced by their status unless `show_hidden=True`, because
students see this page.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from grader.lms import LmsError
from grader.lms.scores import ScoreProblem, SubmissionScore, format_points
from grader.safetext import clean_text

MAX_BYTES = 1_000_000
MAX_MESSAGE_CHARS = 2_000


def test_message(test, show_hidden: bool) -> str:
    if test.hidden and not show_hidden:
        return f"hidden test: {test.status}"
    return clean_text(test.message, MAX_MESSAGE_CHARS)


def build_results(score: SubmissionScore, show_hidden: bool = False) -> dict[str, Any]:
    tests = []
    for exercise in score.exercises:
        for test in exercise.tests:
            tests.append({
                "name": clean_text(f"{exercise.name}: {test.name}", 200),
                "description": f"{exercise.module} ({test.visibility} test)",
                "points": test.score,
                "max_points": test.max_score,
                "message": test_message(test, show_hidden),
            })
    summary = ", ".join(f"{ex.name} {format_points(ex.score)}/{format_points(ex.max_score)}" for ex in score.exercises)
    message = f"Score {format_points(score.score)}/{format_points(score.max_score)}. {summary}"
    if score.adjustments:
        message += "\nAdjusted: " + "; ".join(f"{a.kind} {a.points:+g} ({a.reason})" for a in score.adjustments)
    if score.submission_errors:
        message += "\nProblems with the submission:\n" + "\n".join(clean_text(e, MAX_MESSAGE_CHARS)
                                                                  for e in score.submission_errors)
    results = {"gradable": True, "score": round(score.fraction, 6), "message": message, "tests": tests}
    return _fit_in_limit(results)


def ungradable_results(reason: str) -> dict[str, Any]:
    """P2: a file the grader could not grade honestly: not graded, no attempt used, the reason said."""
    return {"gradable": False, "message": clean_text(reason, MAX_MESSAGE_CHARS)}


def _fit_in_limit(results: dict[str, Any]) -> dict[str, Any]:
    """P5: shorten the per-test messages until the file is under 1 MB."""
    limit = MAX_MESSAGE_CHARS
    while len(to_json(results).encode("utf-8")) >= MAX_BYTES and limit > 20:
        limit //= 2
        for test in results["tests"]:
            test["message"] = clean_text(test["message"], limit)
        results["message"] = clean_text(results["message"], limit * 4)
    return results


def to_json(results: dict[str, Any]) -> str:
    return json.dumps(results, indent=1, ensure_ascii=False)


def validate_results(results: Any, raw: bytes | None = None) -> list[str]:
    """P1-P5 on a parsed results.json (and its bytes, for the size and NUL rules)."""
    problems = []
    if not isinstance(results, dict):
        return ["results must be a JSON object"]
    if not isinstance(results.get("gradable", True), bool):
        problems.append("P2: gradable must be a boolean")
    if results.get("gradable", True):
        score = results.get("score")
        if not isinstance(score, (int, float)) or isinstance(score, bool) or not 0.0 <= score <= 1.0:
            problems.append(f"P1: score must be a number in [0, 1], got {score!r}")
    errors = results.get("format_errors")
    if errors is not None and not isinstance(errors, str) and not (
            isinstance(errors, list) and all(isinstance(e, str) for e in errors)):
        problems.append("P3: format_errors must be a string or a list of strings")
    for key in ("message", "output"):
        if key in results and not isinstance(results[key], str):
            problems.append(f"P4: {key} must be a string")
    tests = results.get("tests", [])
    if not isinstance(tests, list):
        problems.append("P4: tests must be a list")
        tests = []
    for i, test in enumerate(tests):
        if not isinstance(test, dict) or not isinstance(test.get("name"), str):
            problems.append(f"P4: tests[{i}] needs a name")
            continue
        for key in ("points", "max_points"):
            value = test.get(key)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                problems.append(f"P4: tests[{i}].{key} must be a number >= 0")
        for key in ("description", "message", "output"):
            if key in test and not isinstance(test[key], str):
                problems.append(f"P4: tests[{i}].{key} must be a string")
        if _is_number(test.get("points")) and _is_number(test.get("max_points")) \
                and test["points"] > test["max_points"]:
            problems.append(f"P6: tests[{i}] has {test['points']} points of {test['max_points']}")
    if raw is not None:
        if len(raw) >= MAX_BYTES:
            problems.append(f"P5: {len(raw)} bytes, the limit is 1 MB")
        if b"\0" in raw or b"\\u0000" in raw:
            problems.append("P5: contains NUL characters")
        if re.search(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}", raw) or _not_utf8(raw):
            problems.append("P5: contains lone surrogates or is not UTF-8; PostgreSQL's jsonb refuses them")
    return problems


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _not_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def safe_dir_name(submission: str) -> str:
    """A submission name usable as one directory name (no path separators, no dot-only names)."""
    name = re.sub(r"[^A-Za-z0-9._@+-]", "_", submission).strip(".") or "submission"
    return name


def write_results(score: SubmissionScore | ScoreProblem, path: Path, show_hidden: bool = False) -> None:
    """results.json for a score, or `gradable: false` for an ungradable file (a ScoreProblem)."""
    results = ungradable_results(score.reason) if isinstance(score, ScoreProblem) else build_results(score, show_hidden)
    text = to_json(results)
    problems = validate_results(results, text.encode("utf-8"))
    if problems:
        raise LmsError(f"{score.path.name}: the PrairieLearn results would be invalid: " + "; ".join(problems))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n", encoding="utf-8")


def output_paths(scores: list[SubmissionScore | ScoreProblem], out: Path) -> dict[str, Path]:
    """`out/<submission>/results.json` each; `out` itself when it ends in .json and there is one score."""
    if out.suffix == ".json":
        if len(scores) != 1:
            raise LmsError(f"--out {out} names one file but there are {len(scores)} score files; "
                           "give a directory to get <dir>/<submission>/results.json for each")
        return {scores[0].submission: out}
    paths: dict[str, Path] = {}
    used: dict[str, str] = {}
    for score in scores:
        name = safe_dir_name(score.submission)
        if name in used:
            raise LmsError(f"submissions {used[name]!r} and {score.submission!r} would share the folder {name!r}")
        used[name] = score.submission
        paths[score.submission] = out / name / "results.json"
    return paths
