"""The roster: which student each submission belongs to.

A CSV file (UTF-8; comma, semicolon or tab separated; a header row) with these columns.
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

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

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


def normalise_header(name: str) -> str:
    return name.strip().lower().replace(" ", "_").replace("-", "_")


def read_roster(path: str | Path) -> Roster:
    """Parse and check the roster; raise LmsError naming the lines at fault."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise LmsError(f"{path}: roster file not found") from None
    except UnicodeDecodeError:
        raise LmsError(f"{path}: the roster is not UTF-8 text; save it as 'CSV UTF-8'") from None
    except OSError as exc:
        raise LmsError(f"{path}: cannot read the roster: {exc.strerror or exc}") from None
    if not text.strip():
        raise LmsError(f"{path}: the roster is empty; it needs a header row with at least 'submission'")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=_guess_delimiter(text))
    try:
        header = [normalise_header(h) for h in next(reader)]
        records = [(reader.line_num, cells) for cells in reader]
    except csv.Error as exc:
        raise LmsError(f"{path}: not a readable CSV file (line {reader.line_num}: {exc})") from None
    _check_header(path, header)
    rows = []
    for line, cells in records:
        if not any(c.strip() for c in cells):
            continue  # blank line
        if len(cells) > len(header):
            raise LmsError(f"{path}: line {line} has {len(cells)} fields but the header has {len(header)}; "
                           "quote values that contain the separator")
        cells = cells + [""] * (len(header) - len(cells))
        rows.append(RosterRow(line, {h: c.strip() for h, c in zip(header, cells) if h}))
    roster = Roster(path, tuple(h for h in header if h), rows)
    _check_submissions_unique(roster)
    return roster


def _guess_delimiter(text: str) -> str:
    first_line = text.splitlines()[0]
    return max((",", ";", "\t"), key=first_line.count)


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
