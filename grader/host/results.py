"""Score files: building them, writing them atomically, and summary.csv (`grader.score_files` reads them).

Only the trusted process writes here, and only after the submission's worker is gone.
A score file is written to a temporary name in the same folder and renamed into place, so
a reader never sees half a file and nothing a student printed can pass for one.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import tempfile
from pathlib import Path

from grader import score_files
from grader.protocol.messages import TestStatus
from grader.safetext import clean_text, formula_safe, replace_lone_surrogates



def build_report(*, submission: str, exercises: list, outcomes: list, device: str, torch_version: str,
                 duration_s: float, **extra) -> dict:
    """Assemble a score file from the course's exercises and the test outcomes.

    Every exercise of the course file is listed, with every one of its tests, whatever ran.
    """
    by_exercise: dict[str, list] = {e.name: [] for e in exercises}
    for o in outcomes:
        by_exercise.setdefault(o.spec.exercise, []).append(o)
    entries = []
    for e in exercises:
        ran = by_exercise[e.name]
        if not ran:
            continue
        entries.append({
            "name": e.name,
            "module": e.module,
            "score": _round(sum(o.score for o in ran)),
            "max_score": _round(sum(o.points for o in ran)),
            "tests": [test_entry(o) for o in ran],
        })
    everything = [o for e in exercises for o in by_exercise[e.name]]
    report = {
        "schema_version": SCHEMA_VERSION,
        "submission": submission,
        "score": _round(sum(o.score for o in everything)),
        "max_score": _round(sum(o.points for o in everything)),
        "device": device,
        "torch_version": torch_version,
        "duration_s": round(duration_s, 3),
        "exercises": entries,
    }
    report.update({k: v for k, v in extra.items() if v is not None})
    return report


def test_entry(o) -> dict:
    entry = {
        "name": o.name,
        "status": str(o.status),  # a plain string in the report, whatever the enum
        "score": _round(o.score),
        "max_score": _round(o.points),
        "visibility": o.spec.visibility,
        "message": o.message,
        "duration_s": o.duration_s,
    }
    if o.status != TestStatus.PASSED and o.hint:
        entry["hint"] = o.hint
    if o.status != TestStatus.PASSED and o.mistake:
        entry["mistake"] = o.mistake
    if o.output:  # only a public check of `grader check` has any (grader.host.plugin)
        entry["output"] = clean_text(o.output)
    return entry


def _round(x: float) -> float:
    r = round(float(x), 4)
    return int(r) if r == int(r) else r


# ----------------------------------------------------------------------------- validation

SCHEMA_VERSION = score_files.SCHEMA_VERSION
READABLE_SCHEMA_VERSIONS = score_files.READABLE_SCHEMA_VERSIONS
SCHEMA_FILE = score_files.SCHEMA_FILE


def validate(report: dict) -> list[str]:
    """Schema errors of a score file; [] when valid (jsonschema, or the readers' built-in check)."""
    return score_files.schema_errors(report)


def validate_if_possible(report: dict) -> list[str]:
    """The writer's check: schema errors of a report about to be written, when jsonschema is installed."""
    return score_files.schema_errors(report, fallback=False)


# ----------------------------------------------------------------------------- writing

TEMPORARY = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")  # write_atomic's names: .NAME.XXXXXXXX.tmp (mkstemp's 8)


def write_atomic(path: Path, text: str) -> None:
    text = replace_lone_surrogates(text)  # a student's "\ud800" would make the UTF-8 write raise
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def remove_temporaries(folder: Path) -> list[str]:
    """Remove what a run killed in the middle of `write_atomic` left in `folder` (call it only while
    no other run writes there: `lifecycle.claim_out`); returns the names removed."""
    removed = []
    for entry in os.scandir(folder):
        if TEMPORARY.match(entry.name) and entry.is_file(follow_symlinks=False):
            os.unlink(entry.path)
            removed.append(entry.name)
    return removed


def score_file_name(submission: str) -> str:
    safe = "".join(c if c.isalnum() or c in "-_.@+" else "_" for c in submission).strip(".") or "submission"
    return f"{safe}.json"


def write_report(out_dir: Path, report: dict) -> Path:
    path = Path(out_dir) / score_file_name(report["submission"])
    write_atomic(path, json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    return path


def outline(report: dict) -> dict:
    """A score file without its tests: what summary.csv and the end of a run need. A run holds these,
    not whole score files (a few hundred KiB of messages and hints each), so that a class of
    thousands fits in memory."""
    return {
        "submission": report["submission"],
        "score": report["score"],
        "max_score": report["max_score"],
        "submission_errors": report.get("submission_errors", []),
        "exercises": [{"name": e["name"], "score": e["score"], "max_score": e["max_score"]}
                      for e in report["exercises"]],
        "tests_not_passed": sum(1 for e in report["exercises"] for t in e["tests"] if t["status"] != TestStatus.PASSED),
    }


def summary_csv(outlines: list[dict]) -> str:
    """One row per submission (its `outline`): total, one column per exercise, and the tests that did not pass."""
    exercises = list(dict.fromkeys(e["name"] for r in outlines for e in r["exercises"]))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["submission", "score", "max_score", "percent", *exercises, "problems"])
    for r in sorted(outlines, key=lambda r: r["submission"]):
        scores = {e["name"]: e["score"] for e in r["exercises"]}
        not_passed = r["tests_not_passed"]
        problems = clean_text("; ".join(r.get("submission_errors", [])), limit=1000, one_line=True)
        writer.writerow([formula_safe(clean_text(r["submission"], one_line=True)), r["score"], r["max_score"],
                         round(100 * r["score"] / r["max_score"], 2) if r["max_score"] else 0,
                         *[scores.get(name, "") for name in exercises],
                         formula_safe(problems) or (f"{not_passed} tests did not pass" if not_passed else "")])
    return out.getvalue()
