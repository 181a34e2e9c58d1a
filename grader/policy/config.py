"""policy.yaml: the course's deadline, late penalty, and where hand-in times, extensions and
overrides come from. Read strictly: an unknown key, a time without a zone, a negative grace or a
missing file is an error that names the key and its line, before any score is touched.

    due: 2026-12-01T23:59:00+08:00        # required; ISO 8601 with a time zone
    grace_minutes: 15                     # default 0
    late: {percent_per_day: 10, max_days: 3}  # required; % of the score per started day after
                                          #   due + grace; later than max_days: 0. Or `late: none`:
                                          #   no penalty here, the LMS's own late policy applies
    submitted_at: times.csv               # required: a CSV (submission,submitted_at), or
                                          #   gradescope / git (with `submissions`)
    submissions: submissions/             # the folder that was graded: <submission>/ in it
    roster: roster.csv                    # when extensions name logins (the LMS roster)
    extensions: extensions.csv            # submission or login,due
    overrides: overrides.csv              # submission,exercise,score,reason (exercise empty: total)

Relative paths are relative to the policy file's folder. Scalars are read as text (YAML's BaseLoader)
and typed here, so that `no`, `1e3` or an unquoted date mean what the instructor wrote.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import yaml

from grader.instructor_files import read_text
from grader.policy import PolicyError
from grader.policy.timeutil import parse_time

TIME_SOURCES = ("gradescope", "git")
KEYS = ("due", "grace_minutes", "late", "submitted_at", "submissions", "roster", "extensions", "overrides")
LATE_KEYS = ("percent_per_day", "max_days")
FILE_KEYS = ("roster", "extensions", "overrides")


@dataclass(frozen=True)
class LateRule:
    """`percent_per_day` of the score per started day after due + grace; 0 after `max_days` days.
    max_days None: `late: none`, no penalty at all (the LMS's own late policy applies)."""

    percent_per_day: float
    max_days: int | None
    grace: timedelta


@dataclass(frozen=True)
class Policy:
    path: Path
    due: datetime
    late: LateRule
    submitted_at: str  # "csv", "gradescope" or "git"
    times_file: Path | None  # the CSV when submitted_at is "csv"
    submissions: Path | None
    roster: Path | None
    extensions: Path | None
    overrides: Path | None


@dataclass(frozen=True)
class _Entry:
    value: "str | dict[str, _Entry]"
    line: int


class _Reader:
    """Checks values and raises PolicyError naming the file, the line and the key."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, line: int | None, key: str, problem: str):
        where = f"{self.path}, line {line}" if line else str(self.path)
        raise PolicyError(f"{where}: {key}: {problem}")

    def mapping(self, node, context: str) -> dict[str, _Entry]:
        if not isinstance(node, yaml.MappingNode):
            self.fail(node.start_mark.line + 1 if node is not None else None, context,
                      "must be a mapping of `key: value` lines (see docs/lms.md, the policy file)")
        entries: dict[str, _Entry] = {}
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
            name = f"{context}.{key}" if context != "policy" else key
            if key in entries:
                self.fail(line, name, f"given twice (also on line {entries[key].line})")
            if isinstance(value_node, yaml.MappingNode):
                entries[key] = _Entry(self.mapping(value_node, name), line)
            elif isinstance(value_node, yaml.ScalarNode):
                entries[key] = _Entry(value_node.value.strip(), line)
            else:
                self.fail(line, name, "a list is not allowed here")
        return entries

    def only_known(self, entries: dict[str, _Entry], known: tuple[str, ...], context: str) -> None:
        for key, entry in entries.items():
            if key not in known:
                close = difflib.get_close_matches(key, known, n=1)
                hint = f"did you mean `{close[0]}`? " if close else ""
                name = f"{context}.{key}" if context != "policy" else key
                self.fail(entry.line, name, f"unknown key; {hint}the keys are: {', '.join(known)}")

    def text(self, entries: dict[str, _Entry], key: str, name: str, required: bool) -> tuple[str | None, int | None]:
        entry = entries.get(key)
        if entry is None or entry.value == "":
            if required:
                self.fail(entry.line if entry else None, name, "required" + (", but empty" if entry else ", but missing"))
            if entry is not None:
                self.fail(entry.line, name, "empty: give a value or remove the line")
            return None, None
        if isinstance(entry.value, dict):
            self.fail(entry.line, name, "must be a single value, not a mapping")
        return entry.value, entry.line

    def number(self, entries, key: str, name: str, low: float, high: float, default=None, integer=False):
        text, line = self.text(entries, key, name, required=default is None)
        if text is None:
            return default
        try:
            value = int(text) if integer else float(text)
        except ValueError:
            self.fail(line, name, f"{text!r} is not {'a whole number' if integer else 'a number'}")
        if not (math.isfinite(value) and low <= value <= high):
            self.fail(line, name, f"{text} is out of range: it must be between {low:g} and {high:g}")
        return value

    def file(self, entries, key: str, name: str, kind: str = "file", hint: str = "") -> Path | None:
        text, line = self.text(entries, key, name, required=False)
        if text is None:
            return None
        path = (self.path.parent / text).resolve()
        exists = path.is_dir() if kind == "folder" else path.is_file()
        if not exists:
            self.fail(line, name, f"{kind} {text!r} not found (looked for {path}){hint}")
        return path


def load_policy(path: str | Path) -> Policy:
    """Read and check policy.yaml; raise PolicyError naming the key and line at fault."""
    path = Path(path)
    reader = _Reader(path)
    text = read_text(path, "the policy file", PolicyError)
    try:
        root = yaml.compose(text, Loader=yaml.BaseLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise PolicyError(f"{path}{f', line {mark.line + 1}' if mark else ''}: not valid YAML: {problem}") from None
    if root is None:
        raise PolicyError(f"{path}: the policy file is empty; it needs at least `due`, `late` and `submitted_at`")
    entries = reader.mapping(root, "policy")
    reader.only_known(entries, KEYS, "policy")

    due_text, due_line = reader.text(entries, "due", "due", required=True)
    try:
        due = parse_time(due_text)
    except ValueError as exc:
        reader.fail(due_line, "due", str(exc))
    grace = reader.number(entries, "grace_minutes", "grace_minutes", 0, 7 * 24 * 60, default=0.0)

    late_entry = entries.get("late")
    if late_entry is not None and late_entry.value == "none":
        percent, max_days = 0.0, None
    else:
        if late_entry is None or not isinstance(late_entry.value, dict):
            reader.fail(late_entry.line if late_entry else None, "late",
                        "required: a mapping such as {percent_per_day: 10, max_days: 3} ({percent_per_day: 0, "
                        "max_days: 0} accepts no late work), or `none` to leave lateness to the LMS")
        late = late_entry.value
        reader.only_known(late, LATE_KEYS, "late")
        percent = reader.number(late, "percent_per_day", "late.percent_per_day", 0, 100)
        max_days = reader.number(late, "max_days", "late.max_days", 0, 3650, integer=True)

    source, source_line = reader.text(entries, "submitted_at", "submitted_at", required=True)
    submissions = reader.file(entries, "submissions", "submissions", kind="folder")
    times_file = None
    if source in TIME_SOURCES:
        if submissions is None:
            reader.fail(source_line, "submitted_at",
                        f"`{source}` reads each submission's folder: add `submissions: FOLDER` (the folder "
                        "that was graded, one folder per submission)")
    else:
        times_file = reader.file(entries, "submitted_at", "submitted_at",
                                 hint=f"; submitted_at is a CSV file, {' or '.join(TIME_SOURCES)}")
        source = "csv"
    return Policy(path=path, due=due, late=LateRule(percent, max_days, timedelta(minutes=grace)),
                  submitted_at=source, times_file=times_file, submissions=submissions,
                  **{key: reader.file(entries, key, key) for key in FILE_KEYS})
