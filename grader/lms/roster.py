"""The roster: which student each submission belongs to.

A CSV file (UTF-8; comma, semicolon or tab separated; a header row; read by
`grader.instructor_files`, as every instructor's file is) with these columns.
Only `submission` is always required; each export names the other columns it needs.

| column        | meaning                                               | used by                      |
|---------------|-------------------------------------------------------|------------------------------|
| `submission`  | the score file's `submission` (a trailing `.zip` is ignored); blank = has not submitted | all |
| `name`        | the student's name as the LMS shows it                | Canvas `Student`             |
| `lms_user_id` | the LMS's numeric user id                             | Canvas `ID`, Moodle `userid` |
| `sis_user_id` | the student id from the registrar (SIS)               | Canvas `SIS User ID`, Moodle `idnumber` |
| `login`       | the login / username                                  | Canvas `SIS Login ID`, Moodle `username` |
| `email`       | e-mail address                                        | Moodle `email`               |
| `section`     | section or group                                      | Canvas `Section`             |
| `lti_user_id` | the LTI 1.3 user id (`sub` of the student's launch)   | LTI passback                 |

Header names are matched case-insensitively; spaces and dashes count as underscores; other
columns are ignored. Problems are reported with the file's line numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from grader.instructor_files import read_csv
from grader.lms import LmsError
from grader.safetext import clean_text

KNOWN_COLUMNS = ("submission", "name", "lms_user_id", "sis_user_id", "login", "email", "section", "lti_user_id")


def submission_key(name: str) -> str:
    """How submissions are compared: cleaned as score files' names are (grader.safetext), and
    surrounding spaces and a trailing '.zip' do not count."""
    name = clean_text(name, one_line=True)
    return name[:-4] if name.lower().endswith(".zip") else name


@dataclass(frozen=True)
class RosterRow:
    line: int  # line of the CSV file where this row ends; the header is line 1
    values: dict[str, str]

    def get(self, column: str) -> str:
        return self.values.get(column, "").strip()

    @property
    def submission(self) -> str:
        return self.get("submission")

    def label(self) -> str:
        """'line 4 (Doe, Jane; submission jdoe)': how a row is named in messages."""
        who = self.get("name") or self.get("email") or self.get("login") or "no name"
        return f"line {self.line} ({who}; submission {self.submission or '-'})"

    def as_dict(self) -> dict[str, object]:
        return {"line": self.line, **{k: v for k, v in self.values.items() if v}}


@dataclass
class Roster:
    path: Path
    columns: tuple[str, ...]
    rows: list[RosterRow]

    def require_columns(self, columns: Iterable[str], purpose: str) -> None:
        missing = [c for c in columns if c not in self.columns]
        if missing:
            raise LmsError(f"{self.path}: {purpose} needs the column(s) {', '.join(missing)}; "
                           f"the roster has {', '.join(self.columns)}")

    def require_values(self, column: str, purpose: str, rows: Iterable[RosterRow] | None = None) -> None:
        """Every given row (default: all) must have a value in `column`."""
        self.require_columns([column], purpose)
        empty = [r for r in (self.rows if rows is None else rows) if not r.get(column)]
        if empty:
            raise LmsError(f"{self.path}: {purpose} needs a value in column {column!r}, which is empty in "
                           + _list_rows(empty))

    def require_unique(self, column: str, purpose: str) -> None:
        """No two rows may share a (non-empty) value of `column`."""
        by_value: dict[str, list[RosterRow]] = {}
        for row in self.rows:
            if row.get(column):
                by_value.setdefault(row.get(column).casefold(), []).append(row)
        clashes = [rows for rows in by_value.values() if len(rows) > 1]
        if clashes:
            raise LmsError(f"{self.path}: {purpose} needs a different {column!r} for every student; shared by "
                           + "; ".join(f"{rows[0].get(column)!r}: {_list_rows(rows)}" for rows in clashes))


def _list_rows(rows: list[RosterRow], limit: int = 10) -> str:
    shown = ", ".join(r.label() for r in rows[:limit])
    return shown + (f" and {len(rows) - limit} more rows" if len(rows) > limit else "")


def read_roster(path: str | Path) -> Roster:
    """Parse and check the roster; raise LmsError naming the lines at fault."""
    table = read_csv(path, "the roster file", LmsError, "at least 'submission'")
    header = table.header
    _check_header(table.path, header)
    rows = [RosterRow(line, {h: c.strip() for h, c in zip(header, cells) if h}) for line, cells in table.records]
    roster = Roster(table.path, tuple(h for h in header if h), rows)
    _check_submissions_unique(roster)
    return roster


def _check_header(path: Path, header: list[str]) -> None:
    if "submission" not in header:
        raise LmsError(f"{path}: the roster's header must have a 'submission' column (found: {', '.join(header)}); "
                       f"known columns: {', '.join(KNOWN_COLUMNS)}")
    repeated = sorted({h for h in header if h and header.count(h) > 1})
    if repeated:
        raise LmsError(f"{path}: column(s) {', '.join(repeated)} appear more than once in the header")


def _check_submissions_unique(roster: Roster) -> None:
    by_key: dict[str, list[RosterRow]] = {}
    for row in roster.rows:
        if row.submission:
            by_key.setdefault(submission_key(row.submission), []).append(row)
    clashes = [rows for rows in by_key.values() if len(rows) > 1]
    if clashes:
        raise LmsError(f"{roster.path}: each submission may belong to one roster row only; repeated: "
                       + "; ".join(f"{rows[0].submission!r}: {_list_rows(rows)}" for rows in clashes))
