"""Moodle grade import CSV (Grades > Import > CSV file), and the rules Moodle applies to it.

Moodle has no fixed header: after the upload the teacher maps one column to a user field and
the others to grade items or feedback. The rules below are those of
`moodle/moodle: grade/import/csv/classes/load_data.php` and `lib/csvlib.class.php`
(docs/lms-formats.md, Moodle):

- M0 csvlib reads the file with PHP's `fgetcsv($fp, 0, $delimiter, $enclosure)`, whose escape
  character is `\\` by default: inside quotes, a backslash makes the next character literal, so
  a backslash before a quote (ours, or the one that closes the cell) runs the cell on into the
  next rows. No cell we write holds a backslash: feedback writes it as `/`, and ids or an item
  name that hold one are refused. csvlib also trims the whole text and skips empty lines;
- M1 at least 2 columns; headers are trimmed and must be non-empty and distinct
  (`trim_headers`; csvlib's `csvfewcolumns`, `csvcolumnduplicates`);
- M2 every row has as many fields as the header, or the whole file is refused (`csvweirdcolumns`);
- M3 the user column is mapped to `userid`, `username`, `useridnumber` or `useremail`
  (`map_user_data_with_value`); a value that matches no user makes the whole import fail
  (`check_user_exists`), and a row whose value is PHP-`empty` ('' or '0') does not change the
  student: its grade goes to the student of the row before (`$this->studentid` is kept);
- M4 a grade is '' or '-' (no grade) or a number (`unformat_float($value, true)`; PHP reads
  ASCII digits only); anything else fails the import (`badgrade`); we write '.' decimals;
- M5 a grade above 100 fails the import unless the site allows unlimited grades
  (`insert_grade_record`, `gradepointmax`);
- M6 feedback can be mapped only to the feedback of an existing grade item (`feedback_<itemid>`;
  a new item's feedback has no id yet), and a new grade item created by the import has a
  maximum of 100. So the grade item must exist before the import, with its maximum grade;
  feedback imported alone changes the feedback only (`importonlyfeedback`, Moodle 3.1+);
- M7 (spreadsheets, not Moodle) no text cell starts like a formula (`=`, `+`, `-`, `@`).

Our file: `<user field>,<item>,<item> feedback`, one row per roster student with a score, in
roster order. Students without a submission get no row (their Moodle grade is left as it is),
or 0 with `--missing-as-zero`.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

from grader.lms import LmsError
from grader.lms.matching import Reconciliation
from grader.lms.roster import Roster, RosterRow
from grader.lms.scores import SubmissionScore, common_max_scores, exercise_summary, format_points, odd_maxima_reason
from grader.safetext import csv_text, looks_like_formula

MOODLE_GRADE_LIMIT = 100.0  # without $CFG->unlimitedgrades
NO_SUBMISSION_FEEDBACK = "No submission received."


@dataclass(frozen=True)
class UserField:
    header: str  # our column header
    roster_column: str
    moodle_choice: str  # what to pick under "Map to" in Moodle's import form


USER_FIELDS = {
    "email": UserField("email", "email", "Email address (useremail)"),
    "username": UserField("username", "login", "Username (username)"),
    "idnumber": UserField("idnumber", "sis_user_id", "ID number (useridnumber)"),
    "userid": UserField("userid", "lms_user_id", "User ID (userid)"),
}


def feedback_header(item: str) -> str:
    return f"{item} feedback"


def check_roster_for_moodle(roster: Roster, field: UserField, rows: list[RosterRow]) -> None:
    purpose = f"the Moodle export (users matched by {field.header})"
    roster.require_values(field.roster_column, purpose, rows)
    roster.require_unique(field.roster_column, purpose)
    if field.header == "email":
        bad = [r for r in rows if "@" not in r.get("email")]
        if bad:
            raise LmsError(f"{roster.path}: {purpose}: not an e-mail address at " + ", ".join(r.label() for r in bad))
    if field.header == "userid":
        bad = [r for r in rows if not re.fullmatch(r"[0-9]+", r.get("lms_user_id"))]
        if bad:
            raise LmsError(f"{roster.path}: {purpose}: lms_user_id must be Moodle's numeric user id in ASCII "
                           "digits 0-9 (PHP's is_numeric refuses others, and with them the whole import), not "
                           + ", ".join(f"{r.get('lms_user_id')!r} at {r.label()}" for r in bad))
    unsafe = [r for r in rows if "\\" in r.get(field.roster_column) or looks_like_formula(r.get(field.roster_column))]
    if unsafe:  # M0, M7: rewriting an id would make it match no user
        raise LmsError(f"{roster.path}: {purpose}: a user value with a backslash (Moodle's CSV reader takes it as an "
                       "escape character) or that starts like a spreadsheet formula (=, +, -, @) cannot be written "
                       "safely: " + ", ".join(f"{r.get(field.roster_column)!r} at {r.label()}" for r in unsafe))
    zero = [r for r in rows if r.get(field.roster_column) == "0"]
    if zero:  # M3: PHP's empty('0') is true: Moodle would give the row's grade to the student before
        raise LmsError(f"{roster.path}: {purpose}: Moodle reads a user value of '0' as no user and gives that "
                       "row's grade to the student of the row before, at " + ", ".join(r.label() for r in zero))


def build_rows(roster: Roster, rec: Reconciliation, item: str, user_field: str = "email",
               grade_max: float | None = None, unlimited_grades: bool = False,
               missing_as_zero: bool = False) -> list[list[str]]:
    field = USER_FIELDS[user_field]
    item = item.strip()
    if not item or "\n" in item or "\r" in item or item == field.header:
        raise LmsError("--item must be a non-empty, single-line grade item name, different from the user column")
    if "\\" in item or looks_like_formula(item):
        raise LmsError(f"--item {item!r}: a backslash (Moodle's CSV reader takes it as an escape character) or a "
                       "start like a spreadsheet formula (=, +, -, @) cannot be written safely; choose another name")
    if grade_max is not None and not grade_max > 0:
        raise LmsError("--grade-max must be greater than 0")
    if grade_max is None and rec.matched:  # raw points: the grade item has one maximum for all
        total, exercises, odd = common_max_scores([score for _, score in rec.matched])
        rec.set_aside(odd, odd_maxima_reason(total, len(exercises)))
    missing_rows = rec.without_submission if missing_as_zero else []
    check_roster_for_moodle(roster, field, [row for row, _ in rec.matched] + missing_rows)

    def grade(score: SubmissionScore) -> float:
        return score.score if grade_max is None else score.fraction * grade_max

    _check_grade_limit(rec, grade, unlimited_grades)
    order = {id(r): i for i, r in enumerate(roster.rows)}
    lines: list[tuple[int, list[str]]] = [
        (order[id(row)], [row.get(field.roster_column), format_points(grade(score)), feedback(score)])
        for row, score in rec.matched
    ]
    lines += [(order[id(row)], [row.get(field.roster_column), "0", NO_SUBMISSION_FEEDBACK]) for row in missing_rows]
    return [[field.header, item, feedback_header(item)]] + [cells for _, cells in sorted(lines, key=lambda x: x[0])]


def feedback(score: SubmissionScore) -> str:
    """The exercise summary as a feedback cell: no backslash (M0), formula-safe (M7)."""
    return csv_text(exercise_summary(score), backslash_escapes=True)


def _check_grade_limit(rec: Reconciliation, grade, unlimited_grades: bool) -> None:
    """M5: one grade over 100 makes Moodle refuse the whole file."""
    if unlimited_grades:
        return
    over = [(row, grade(score)) for row, score in rec.matched if round(grade(score), 2) > MOODLE_GRADE_LIMIT]
    if over:
        raise LmsError("Moodle refuses grades above 100 unless the site allows unlimited grades; "
                       f"{len(over)} student(s) would get more (e.g. {over[0][0].label()}: {format_points(over[0][1])}). "
                       "Rescale with --grade-max (the grade item's maximum in Moodle), or pass "
                       "--unlimited-grades if your site has 'Unlimited grades' enabled")


def to_csv_text(table: list[list[str]]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(table)
    return buffer.getvalue()


def write_import_file(path: str | Path, table: list[list[str]], unlimited_grades: bool = False) -> None:
    text = to_csv_text(table)
    problems = check_import_csv(text, grade_limit=None if unlimited_grades else MOODLE_GRADE_LIMIT)
    if problems:
        raise LmsError("the Moodle file would break Moodle's import rules:\n  " + "\n  ".join(problems))
    path = Path(path)
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_text(text, encoding="utf-8", newline="")
    temp.replace(path)


# ----------------------------------------------------------------------------- Moodle's rules

NUMBER_RE = re.compile(r"\A[0-9]+(\.[0-9]+)?\Z")


def check_import_csv(text: str, grade_limit: float | None = MOODLE_GRADE_LIMIT) -> list[str]:
    """M1-M6 applied to our layout (user, grade, feedback); returns the problems found."""
    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error as exc:
        return [f"not well-formed CSV: {exc}"]
    if not rows:
        return ["M1: the file is empty"]
    header = [h.strip() for h in rows[0]]
    problems = []
    if len(header) < 2:
        problems.append("M1: fewer than 2 columns")
    if any(not h for h in header) or len(set(header)) != len(header):
        problems.append(f"M1: empty or repeated column headers {header}")
    if len(header) != 3 or header[0] not in {f.header for f in USER_FIELDS.values()} \
            or header[2] != feedback_header(header[1]):
        problems.append(f"M6: expected '<user field>,<item>,<item> feedback', got {header}")
        return problems
    seen: set[str] = set()
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            problems.append(f"M2: row {number} has {len(row)} fields, the header {len(header)}")
            continue
        user, grade = row[0].strip(), row[1].strip()
        if user in ("", "0"):
            problems.append(f"M3: row {number}: user value {user!r} is skipped by Moodle")
        if user in seen:
            problems.append(f"M3: row {number}: user {user!r} appears twice")
        seen.add(user)
        if grade not in ("", "-") and not NUMBER_RE.match(grade):
            problems.append(f"M4: row {number}: grade {grade!r} is not a number")
        elif grade_limit is not None and NUMBER_RE.match(grade) and float(grade) > grade_limit:
            problems.append(f"M5: row {number}: grade {grade} is above {format_points(grade_limit)}")
        if any("\\" in cell for cell in row):
            problems.append(f"M0: row {number}: a backslash, which PHP's fgetcsv reads as an escape character")
        if any(looks_like_formula(cell) for cell in row):
            problems.append(f"M7: row {number}: a cell starts like a spreadsheet formula")
    return problems
