"""`grader gradebook`: a folder of score files through the course policy into FINAL.

Everything is read and checked before anything is written: the policy, the score files, the
extensions and overrides (one for a submission that has no score file is an error: a typo would
otherwise give nobody the extension), the hand-in times. Then FINAL gets one adjusted score file
per submission that has a hand-in time, `summary.csv` with one row per submission (those left out
too, with the reason), and `.gradebook.json`, which marks the folder as ours: a rerun replaces the
score files of the last run and keeps dot files such as the LTI ledger.

Left out of FINAL, and listed: submissions without a hand-in time (so no export grades them as on
time) and score files that are not valid.
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from grader.lms import LmsError
from grader.lms.roster import read_roster, submission_key
from grader.policy import PolicyError
from grader.policy.adjust import LATE, OVERRIDE, Deadline, Override, apply_policy, raw_view, started_days_late
from grader.policy.config import Policy, load_policy
from grader.policy.handin import hand_in_times
from grader.policy.tables import Row, read_table
from grader.policy.timeutil import iso, parse_time
from grader.score_files import GRADEBOOK_MARKER

MARKER = GRADEBOOK_MARKER  # read back by grader.score_files: the exports name whom it left out
SUMMARY_COLUMNS = ["submission", "status", "submitted_at", "due", "extended", "days_late", "raw_score",
                   "late_points", "override_points", "score", "max_score", "adjustments"]


@dataclass
class Gradebook:
    policy: Policy
    written: list[dict] = field(default_factory=list)  # the adjusted score files
    left_out: dict[str, str] = field(default_factory=dict)  # submission -> why it is not in FINAL
    warnings: list[str] = field(default_factory=list)
    summary: list[dict] = field(default_factory=list)  # rows of summary.csv


def run_gradebook(scores_dir: Path, policy_path: Path, out: Path) -> Gradebook:
    """Read everything, check everything, then write FINAL. PolicyError: nothing was written."""
    policy = load_policy(policy_path)
    _check_out(Path(scores_dir), Path(out))
    files, invalid = _load_scores(Path(scores_dir))
    known = {submission_key(name): name for name in [*files, *invalid]}
    extensions = read_extensions(policy, known)
    overrides = read_overrides(policy, known, files)
    handins = hand_in_times(policy, sorted([*files, *invalid]))
    book = Gradebook(policy, warnings=list(handins.warnings) + _future_times(handins.times))
    for name, reason in invalid.items():
        book.left_out[name] = reason
    for name in sorted(files):
        deadline = Deadline(extensions.get(name, policy.due), name in extensions)
        if name not in handins.times:
            book.left_out[name] = f"no hand-in time ({handins.missing.get(name, 'not found')})"
            book.summary.append(_summary_row(raw_view(files[name]), "left out: " + book.left_out[name], deadline))
            continue
        final = apply_policy(files[name], handins.times[name], deadline, policy.late, overrides.get(name, []))
        book.written.append(final)
        book.summary.append(_summary_row(final, "", deadline, handins.times[name], policy))
    for name in sorted(invalid):
        book.summary.append({"submission": name, "status": "left out: " + book.left_out[name]})
    _write(book, Path(scores_dir), Path(out))
    return book


# ----------------------------------------------------------------------------- inputs

def _check_out(scores_dir: Path, out: Path) -> None:
    if out.resolve() == scores_dir.resolve():
        raise PolicyError(f"--out {out} is the score folder itself: write the grades to a folder of their own, "
                          "so that the raw scores stay as graded")
    if out.exists() and not out.is_dir():
        raise PolicyError(f"--out {out} exists and is not a folder")
    if out.is_dir() and not (out / MARKER).exists() and any(not p.name.startswith(".") for p in out.iterdir()):
        raise PolicyError(f"--out {out} holds files that `grader gradebook` did not write; give an empty or new folder")


def _load_scores(scores_dir: Path) -> tuple[dict[str, dict], dict[str, str]]:
    """The valid score files (submission -> data) and the ones left out (submission -> why: an invalid
    file, or an ungradable one, whose zeros are no grade)."""
    from grader import score_files

    if not scores_dir.is_dir():
        raise PolicyError(f"{scores_dir}: not a folder of score files (expected the --out folder of `grader grade`)")
    try:
        loaded = score_files.load([scores_dir])
    except score_files.ScoreFileError as exc:
        raise PolicyError(str(exc)) from None
    files = {f.submission: f.data for f in loaded.files if not score_files.is_ungradable(f.data)}
    invalid = {u.submission: f"invalid score file: {u.path.name} {u.reason}" for u in loaded.unusable}
    invalid.update({f.submission: f"{f.path.name} {score_files.ungradable_reason(f.data)}"
                    for f in loaded.files if score_files.is_ungradable(f.data)})
    return files, invalid


def _submission(row: Row, value: str, known: dict[str, str], what: str) -> str:
    """The score file's submission name for a CSV row; an unknown one is an error."""
    key = submission_key(value)
    if key not in known:
        close = difflib.get_close_matches(key, list(known), n=1)
        raise row.error(f"submission {key!r} has no score file" + (f" (did you mean {close[0]!r}?)" if close else "")
                        + f": {what} for an unknown submission is an error")
    return known[key]


def read_extensions(policy: Policy, known: dict[str, str]) -> dict[str, datetime]:
    """submission -> its new due time, from the extensions file (rows name a submission or a login)."""
    if policy.extensions is None:
        return {}
    rows = read_table(policy.extensions, "the extensions file", ("due",), ("submission", "login"))
    logins = _logins(policy) if any(row.get("login") for row in rows) else {}
    extensions: dict[str, datetime] = {}
    lines: dict[str, int] = {}
    for row in rows:
        by_login = logins.get(row.get("login").casefold()) if row.get("login") else None
        if row.get("login") and not by_login:
            raise row.error(f"login {row.get('login')!r} is not in the roster {policy.roster}" if by_login is None
                            else f"login {row.get('login')!r} has no submission in the roster {policy.roster}")
        if by_login is not None and row.get("submission") and submission_key(row.get("submission")) != by_login:
            raise row.error(f"login {row.get('login')!r} has submission {by_login!r} in the roster, "
                            f"not {row.get('submission')!r}")
        named = row.get("submission") or by_login
        if not named:
            raise row.error("give a submission or a login")
        name = _submission(row, named, known, "an extension")
        if name in lines:
            raise row.error(f"a second extension for {name!r} (the first is on line {lines[name]})")
        try:
            due = parse_time(row.get("due"))
        except ValueError as exc:
            raise row.error(f"due: {exc}") from None
        if due < policy.due:
            raise row.error(f"due {iso(due)} is before the course's due time {iso(policy.due)}: an extension "
                            "can only move it later")
        extensions[name], lines[name] = due, row.line
    return extensions


def _logins(policy: Policy) -> dict[str, str]:
    """login (case-folded) -> submission, from the roster the policy names."""
    if policy.roster is None:
        raise PolicyError(f"{policy.extensions}: extensions name logins; add `roster: roster.csv` to {policy.path} "
                          "(the roster of the LMS exports, with columns submission and login)")
    try:
        roster = read_roster(policy.roster)
        roster.require_columns(["login"], "an extension by login")
    except LmsError as exc:
        raise PolicyError(str(exc)) from None
    return {row.get("login").casefold(): submission_key(row.submission) if row.submission else ""
            for row in roster.rows if row.get("login")}


def read_overrides(policy: Policy, known: dict[str, str], files: dict[str, dict]) -> dict[str, list[Override]]:
    """submission -> its overrides (exercise empty: the total), each checked against the score file."""
    if policy.overrides is None:
        return {}
    overrides: dict[str, list[Override]] = {}
    lines: dict[tuple[str, str], int] = {}
    for row in read_table(policy.overrides, "the overrides file", ("submission", "exercise", "score", "reason")):
        name = _submission(row, row.get("submission"), known, "an override")
        exercise = row.get("exercise") or None
        if (name, exercise or "") in lines:
            raise row.error(f"a second override of {exercise or 'the total'} for {name!r} "
                            f"(the first is on line {lines[name, exercise or '']})")
        lines[name, exercise or ""] = row.line
        if not row.get("reason"):
            raise row.error("an override needs a reason (it is listed in the grade's adjustments)")
        if name not in files:
            continue  # an invalid score file: left out of FINAL anyway, and listed
        maximum = _maximum(row, files[name], exercise)
        try:
            score = float(row.get("score"))
        except ValueError:
            raise row.error(f"score {row.get('score')!r} is not a number") from None
        if not (math.isfinite(score) and 0 <= score <= maximum):
            raise row.error(f"score {row.get('score')} is outside 0..{maximum:g} for {exercise or 'the total'}")
        overrides.setdefault(name, []).append(Override(exercise, score, row.get("reason")))
    return overrides


def _maximum(row: Row, data: dict, exercise: str | None) -> float:
    if exercise is None:
        return data["max_score"]
    names = {e["name"]: e["max_score"] for e in data["exercises"]}
    if exercise not in names:
        close = difflib.get_close_matches(exercise, list(names), n=1)
        raise row.error(f"exercise {exercise!r} is not in {data['submission']}'s score file"
                        + (f" (did you mean {close[0]!r}?)" if close else ""))
    return names[exercise]


def _future_times(times: dict[str, datetime]) -> list[str]:
    """A hand-in time after now is a wrong time zone or a wrong date (an LMS refuses it too)."""
    now = datetime.now(timezone.utc)
    return [f"{name}: hand-in time {iso(moment)} is in the future; check its date and time zone"
            for name, moment in sorted(times.items()) if moment > now]


# ----------------------------------------------------------------------------- FINAL

def _late_points(final: dict) -> float:
    return sum(a["points"] for a in final["adjustments"] if a["kind"] == LATE)


def _summary_row(data: dict, status: str, deadline: Deadline, submitted_at: datetime | None = None,
                 policy: Policy | None = None) -> dict:
    """One row of summary.csv; `status` empty: on time or late, from the times."""
    adjustments = data.get("adjustments", [])
    days_late = started_days_late(submitted_at, deadline.due, policy.late.grace) if submitted_at else ""
    return {
        "submission": data["submission"], "status": status or ("late" if days_late else "on time"),
        "submitted_at": iso(submitted_at) if submitted_at else "", "due": iso(deadline.due),
        "extended": "yes" if deadline.extended else "",
        "days_late": days_late,
        "raw_score": data.get("raw_score", data["score"]),
        "late_points": _late_points(data) if adjustments else "",
        "override_points": sum(a["points"] for a in adjustments if a["kind"] == OVERRIDE) if adjustments else "",
        "score": data["score"] if submitted_at else "", "max_score": data["max_score"],
        "adjustments": " | ".join(f"{a['kind']} {a['points']:+g}: {a['reason']}" for a in adjustments),
    }


def summary_csv(rows: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, SUMMARY_COLUMNS, lineterminator="\n", restval="")
    writer.writeheader()
    writer.writerows(sorted(rows, key=lambda r: r["submission"]))
    return out.getvalue()


def _write(book: Gradebook, scores_dir: Path, out: Path) -> None:
    from grader.host.results import score_file_name, validate_if_possible, write_atomic, write_report

    for final in book.written:
        errors = validate_if_possible(final)
        if errors:  # a bug of ours, never the instructor's input: stop before FINAL is half replaced
            raise RuntimeError(f"the adjusted score file of {final['submission']} does not match the schema: {errors[:3]}")
    out.mkdir(parents=True, exist_ok=True)
    keep = {score_file_name(final["submission"]) for final in book.written}
    for stale in out.glob("*.json"):
        if not stale.name.startswith(".") and stale.name not in keep:
            stale.unlink()
    for final in book.written:
        write_report(out, final)
    write_atomic(out / "summary.csv", summary_csv(book.summary))
    write_atomic(out / MARKER, json.dumps({
        "written_by": "grader gradebook", "scores": str(scores_dir.resolve()), "policy": str(book.policy.path.resolve()),
        "written_at": iso(datetime.now(timezone.utc).replace(microsecond=0)), "score_files": len(book.written),
        "left_out": book.left_out}, indent=2, ensure_ascii=False) + "\n")
