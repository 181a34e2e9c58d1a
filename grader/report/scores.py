"""Finding and reading the score files of a graded class, and listing the ones that cannot be used.

`grader grade --out DIR` writes `DIR/<submission>.json`. A folder is read as every `*.json` in it
whose name does not start with a dot (ledgers and temporary files do); a file given by name is
read as it is. Every file is checked for the fields the report, the feedback pages and the diff
read (the engine validated the whole file against the JSON Schema when it wrote it); a file that
cannot be read or lacks them is listed with the reason, never skipped in silence and never
counted. Two files for one submission are both set aside: which one is the student's is unknown.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from grader.host.results import score_file_name
from grader.protocol.messages import TestStatus
from grader.report import ReportError

STATUSES = tuple(TestStatus)  # declared once, in grader.protocol.messages
VISIBILITIES = ("visible", "hidden")


@dataclass
class Unusable:
    path: Path
    reason: str


@dataclass
class ScoreFiles:
    """The usable score files (parsed JSON, sorted by submission) and the ones set aside."""

    reports: list[dict] = field(default_factory=list)
    unusable: list[Unusable] = field(default_factory=list)
    paths: dict[str, Path] = field(default_factory=dict)  # submission -> its file


def load(paths: list[str | Path]) -> ScoreFiles:
    """Read score folders and files. Raises ReportError when there is nothing to read at all."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            found = sorted(f for f in p.glob("*.json") if not f.name.startswith("."))
            if not found:
                raise ReportError(f"{p}: no score files (*.json) in this folder; give the --out folder of `grader grade`")
            files += found
        elif p.is_file():
            files.append(p)
        else:
            raise ReportError(f"{p}: no such score file or folder")
    result = ScoreFiles()
    by_name: dict[str, list[tuple[Path, dict]]] = {}
    for path in files:
        report, reason = read(path)
        if reason:
            result.unusable.append(Unusable(path, reason))
        else:
            by_name.setdefault(report["submission"], []).append((path, report))
    for name, found in sorted(by_name.items()):
        if len(found) > 1:
            others = ", ".join(p.name for p, _ in found)
            result.unusable += [Unusable(p, f"submission {name!r} has several score files ({others}); "
                                            "none is used until the extra ones are removed") for p, _ in found]
            continue
        path, report = found[0]
        result.reports.append(report)
        result.paths[name] = path
    if not result.reports:
        reasons = "; ".join(f"{u.path.name}: {u.reason}" for u in result.unusable[:3])
        raise ReportError(f"no usable score file among {len(files)} ({reasons})")
    return result


def read(path: Path) -> tuple[dict, str]:
    """(the parsed file, "") or ({}, why it cannot be used)."""
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        return {}, f"cannot be read: {exc.strerror or exc}"
    except UnicodeDecodeError:
        return {}, "is not UTF-8 text"
    except ValueError as exc:
        return {}, f"is not JSON ({exc})"
    problem = shape_problem(report)
    return ({}, f"is not a score file: {problem}") if problem else (report, "")


def shape_problem(report) -> str:
    """The first field the commands need that is missing or of the wrong type; "" when all are there."""
    if not isinstance(report, dict):
        return "not a JSON object"
    if not isinstance(report.get("submission"), str) or not report["submission"]:
        return "no submission name"
    for key in ("score", "max_score"):
        if not _number(report.get(key)):
            return f"{key} is not a number"
    if report["max_score"] <= 0:
        return "max_score is not positive"
    exercises = report.get("exercises")
    if not isinstance(exercises, list) or not exercises:
        return "no exercises"
    for e in exercises:
        if not (isinstance(e, dict) and isinstance(e.get("name"), str) and _number(e.get("score"))
                and _number(e.get("max_score")) and isinstance(e.get("tests"), list)):
            return "an exercise without name, score, max_score or tests"
        for t in e["tests"]:
            if not (isinstance(t, dict) and isinstance(t.get("name"), str) and t.get("status") in STATUSES
                    and t.get("visibility") in VISIBILITIES and isinstance(t.get("message", ""), str)
                    and _number(t.get("score")) and _number(t.get("max_score"))):
                return f"a test of {e['name']} without name, status, visibility, score or max_score"
    if not all(isinstance(x, str) for x in report.get("submission_errors", [])):
        return "submission_errors is not a list of strings"
    return ""


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def page_name(submission: str) -> str:
    """The file name (without suffix) of a submission's feedback page: its score file's name."""
    return score_file_name(submission).removesuffix(".json")
