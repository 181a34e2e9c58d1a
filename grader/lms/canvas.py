"""Canvas gradebook CSV: what Canvas's Grades > Import accepts, and the rules it follows.

The rules are those of Canvas's importer, `instructure/canvas-lms:
app/models/gradebook_importer.rb` (GradebookImporter) and `Assignment.title_and_id`
(`app/models/assignment.rb`), as summarised in docs/lms-formats.md, Canvas:

- H1 the delimiter is guessed from the first 3 lines: `;` wins only if it splits every one of
  them into the same, larger number of fields (`identify_delimiter`); we write `,`;
- H2 header: more than 3 columns, `row[0]` contains "Student", `row[1]` contains "ID"
  (`row_has_student_headers?`);
- H3 student columns: `Student, ID`, then `SIS User ID, SIS Login ID` (or `SIS Login ID`
  alone), then the last student column must contain "Section" (`update_column_count`,
  `last_student_info_column`);
- H4 an assignment header `Title (123)` matches the *published* assignment with id 123
  (`/\\A(.*)\\s\\((\\d+)\\)\\z/`, Ruby's `\\d` is ASCII; `parse!` loads
  `@context.assignments.published`); otherwise Canvas matches the exact title of a published
  assignment, and creates a new assignment, worth the `Points Possible` value, when none has it;
- H5 headers containing `Current/Final/Unposted Score|Points|Grade` or
  `Override Score|Grade|Status` are dropped as non-assignment columns (`grep_v`, substring
  match), and the reserved names (`GRADEBOOK_IMPORTER_RESERVED_NAMES`) are not assignments;
- H6 a column is located by the first header equal to its name
  (`calc_assignment_indices`), so headers must be unique;
- R1 a row whose first cell contains "Points Possible" sets the points of the assignments it
  creates (`process_pp`); an existing assignment keeps its own points;
- R2 rows that are blank or only `Muted`/`Manual Posting...` are skipped (`check_for_non_student_row`),
  and lines of only separators and spaces too (`skip_lines`);
- R3 students are found by `ID` (`student_id.to_i`: Ruby reads ASCII digits only, so `"４７１３"`
  is user 0), then `SIS User ID`, then `SIS Login ID`, then by name (`process_student`);
- R4 a grade cell is points or `EX`; a blank or `-` cell is "no score", and a student whose
  grade goes from something to no score has it *removed* on Save (`no_change_to_value?` sees a
  change; the upload page then sends `posted_grade: null`). So a student without a grade is
  left out of the file, never given an empty cell; numbers are compared at 2 decimals, and
  `1,5` would be read as `1.5` (`decimal_comma_to_period`), so we write `.` decimals only;
- R5 (spreadsheets, not Canvas) no text cell starts like a formula (`=`, `+`, `-`, `@`).

Ruby's CSV parser has no escape character (RFC 4180): a backslash is an ordinary character.

Our file: `Student,ID,SIS User ID,SIS Login ID,Section,<Title> (<id>)[,<Title>: <exercise>...]`,
a `Points Possible` row, then one row per roster student with a grade (roster order).
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from grader.lms import LmsError
from grader.lms.matching import Reconciliation
from grader.lms.roster import Roster, RosterRow
from grader.lms.scores import SubmissionScore, common_max_scores, format_points, odd_maxima_reason
from grader.safetext import csv_text, looks_like_formula

STUDENT_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
RESERVED_NAMES = ["Student", "LastName", "FirstName", "ID", "SIS User ID", "SIS Login ID", "Section",
                  "Integration ID", "Root Account"]
NON_ASSIGNMENT_COLUMN_HEADERS = ["Current Score", "Current Points", "Current Grade", "Final Score",
                                 "Final Points", "Final Grade", "Override Score", "Override Grade",
                                 "Override Status"]
NON_ASSIGNMENT_RE = re.compile("|".join(NON_ASSIGNMENT_COLUMN_HEADERS))
TITLE_AND_ID_RE = re.compile(r"\A(.*)\s\((\d+)\)\Z", re.ASCII)  # Ruby: \d and \s are ASCII, '.' not '\n'
SKIPPED_ROW_RE = re.compile(r"^\s*(Muted|Manual Posting.*)?\s*$", re.IGNORECASE)
GRADE_CELL_RE = re.compile(r"\A([0-9]+(\.[0-9]{1,2})?|EX)\Z")
CANVAS_ID_RE = re.compile(r"\A[0-9]+\Z")
ID_COLUMNS = ("lms_user_id", "sis_user_id", "login")  # at least one per student (R3)
NAME_LIMIT = 200


@dataclass(frozen=True)
class GradeColumn:
    header: str
    points_possible: float
    value: Callable[[SubmissionScore], float]


def assignment_header(title: str, assignment_id: str | None) -> str:
    return f"{title} ({assignment_id})" if assignment_id else title


def grade_columns(rec: Reconciliation, title: str, assignment_id: str | None, per_exercise: bool,
                  points_possible: float | None = None) -> list[GradeColumn]:
    """The total column and, optionally, one per exercise (named '<Title>: <exercise>').

    The total is rescaled to `points_possible` (the Canvas assignment's points) when given;
    otherwise it is out of the score files' maximum, which they must share. Score files graded
    with other maxima than most are set aside in `rec` (reported, not exported).
    """
    scores = [score for _, score in rec.matched]
    total, exercises = (scores[0].max_score, []) if scores else (0.0, [])
    if scores and (points_possible is None or per_exercise):
        total, exercises, odd = common_max_scores(scores)
        rec.set_aside(odd, odd_maxima_reason(total, len(exercises)))
    if points_possible is None:
        columns = [GradeColumn(assignment_header(title, assignment_id), total, lambda s: s.score)]
    else:
        columns = [GradeColumn(assignment_header(title, assignment_id), points_possible,
                               lambda s: s.fraction * points_possible)]
    if per_exercise:
        for index, (name, max_score) in enumerate(exercises):
            columns.append(GradeColumn(f"{title}: {name}", max_score,
                                       lambda s, i=index: s.exercises[i].score))
    return columns


def check_titles(title: str, assignment_id: str | None, headers: list[str]) -> None:
    """Refuse titles that Canvas would read as something else (H4, H5, H6, R5)."""
    if assignment_id is not None and not CANVAS_ID_RE.match(assignment_id):
        raise LmsError(f"--assignment-id must be Canvas's numeric assignment id, in ASCII digits 0-9 (the number "
                       f"in the assignment's URL), not {assignment_id!r}")
    if not title.strip() or "\n" in title or "\r" in title:
        raise LmsError("--title must be a non-empty, single-line assignment title")
    if looks_like_formula(title):
        raise LmsError(f"--title {title!r} starts like a spreadsheet formula (=, +, -, @); choose another title")
    if assignment_id is None and TITLE_AND_ID_RE.match(title):
        raise LmsError(f"the title {title!r} ends in '(digits)', which Canvas reads as an assignment id; "
                       "pass the id with --assignment-id and the title without it")
    for header in headers:
        if NON_ASSIGNMENT_RE.search(header):
            raise LmsError(f"Canvas ignores a column named {header!r} (it contains one of "
                           f"{', '.join(NON_ASSIGNMENT_COLUMN_HEADERS)}); choose another --title")
        if header in RESERVED_NAMES:
            raise LmsError(f"{header!r} is a reserved Canvas gradebook column name; choose another --title")
    if len(set(headers)) != len(headers):
        raise LmsError("two grade columns would have the same header; choose another --title")


def check_roster_for_canvas(roster: Roster, rows: list[RosterRow]) -> None:
    """Canvas must be able to find each student (R3): an id, Canvas ids in ASCII digits, no formulas."""
    purpose = "the Canvas export"
    if not any(c in roster.columns for c in ID_COLUMNS):
        raise LmsError(f"{roster.path}: {purpose} needs at least one of the columns {', '.join(ID_COLUMNS)} "
                       "(Canvas finds students by ID, then SIS User ID, then SIS Login ID)")
    no_id = [r for r in rows if not any(r.get(c) for c in ID_COLUMNS)]
    if no_id:
        raise LmsError(f"{roster.path}: {purpose}: no lms_user_id, sis_user_id or login for "
                       + ", ".join(r.label() for r in no_id))
    bad_id = [r for r in rows if r.get("lms_user_id") and not CANVAS_ID_RE.match(r.get("lms_user_id"))]
    if bad_id:
        raise LmsError(f"{roster.path}: {purpose}: lms_user_id must be the numeric Canvas user id in ASCII digits "
                       "0-9 (Canvas reads other characters as user 0), not "
                       + ", ".join(f"{r.get('lms_user_id')!r} at {r.label()}" for r in bad_id))
    formula = [(r, c) for r in rows for c in ("sis_user_id", "login") if looks_like_formula(r.get(c))]
    if formula:
        raise LmsError(f"{roster.path}: {purpose}: an id that starts like a spreadsheet formula (=, +, -, @) "
                       "cannot be written safely: " + ", ".join(f"{c} {r.get(c)!r} at {r.label()}" for r, c in formula))
    for column in ID_COLUMNS:
        if column in roster.columns:
            roster.require_unique(column, purpose)


def build_rows(roster: Roster, rec: Reconciliation, title: str, assignment_id: str | None = None,
               per_exercise: bool = False, points_possible_row: bool = True,
               missing_as_zero: bool = False, points_possible: float | None = None) -> list[list[str]]:
    """Header, optional Points Possible row, and one row per roster student with a grade.

    A student without a grade (no submission, or an invalid score file) is left out: an empty
    cell would remove the grade Canvas has for them (R4). With `missing_as_zero`, students
    without a submission get 0.
    """
    if points_possible is not None and not points_possible > 0:
        raise LmsError("--points-possible must be greater than 0")
    columns = grade_columns(rec, title, assignment_id, per_exercise, points_possible)
    check_titles(title, assignment_id, [c.header for c in columns])
    score_by_row = {id(row): score for row, score in rec.matched}
    zero_rows = {id(row) for row in rec.without_submission} if missing_as_zero else set()
    rows = [row for row in roster.rows if id(row) in score_by_row or id(row) in zero_rows]
    check_roster_for_canvas(roster, rows)
    table = [STUDENT_COLUMNS + [c.header for c in columns]]
    if points_possible_row:
        table.append(["Points Possible", "", "", "", ""] + [format_points(c.points_possible) for c in columns])
    for row in rows:
        identity = [csv_text(row.get("name"), NAME_LIMIT), row.get("lms_user_id"), row.get("sis_user_id"),
                    row.get("login"), csv_text(row.get("section"), NAME_LIMIT)]
        score = score_by_row.get(id(row))
        cells = ["0"] * len(columns) if score is None else [format_points(c.value(score)) for c in columns]
        table.append(identity + cells)
    return table


def to_csv_text(table: list[list[str]]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerows(table)
    return buffer.getvalue()


def write_gradebook(path: str | Path, table: list[list[str]]) -> None:
    """Check the file against the importer rules, then write it (UTF-8, no BOM)."""
    text = to_csv_text(table)
    problems = check_gradebook_csv(text)
    if problems:
        raise LmsError("the Canvas file would break Canvas's import rules:\n  " + "\n  ".join(problems))
    _write_atomically(Path(path), text)


def _write_atomically(path: Path, text: str) -> None:
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_text(text, encoding="utf-8", newline="")
    temp.replace(path)


# ----------------------------------------------------------------------------- the importer's rules


def identify_delimiter(lines: list[str]) -> str:
    """H1: Canvas's identify_delimiter on the first 3 lines."""
    counts = {}
    for separator in (";", ","):
        try:
            sizes = [len(next(csv.reader([line], delimiter=separator), [])) for line in lines]
        except csv.Error:
            sizes = [0, -1]
        counts[separator] = sizes[0] if len(set(sizes)) == 1 else 0
    return ";" if counts[";"] > counts[","] else ","


def has_student_headers(header: list[str]) -> bool:
    """H2: Canvas's row_has_student_headers? (the LastName,FirstName form is behind a feature flag)."""
    return len(header) > 3 and "Student" in header[0] and "ID" in header[1]


def student_column_count(header: list[str]) -> int | None:
    """H3: how many student-info columns Canvas sees, or None if the last one is not 'Section'."""
    if not has_student_headers(header):
        return None
    count = 3
    if re.search(r"SIS\s+Login\s+ID", header[2]):
        count += 1
    elif re.search(r"SIS\s+User\s+ID", header[2]) and len(header) > 3 and re.search(r"SIS\s+Login\s+ID", header[3]):
        has_integration = len(header) > 4 and re.search(r"Integration\s+ID", header[4])
        count += 2 + (1 if has_integration else 0)
        if len(header) > count - 1 and re.search(r"Root\s+Account", header[count - 1]):
            count += 1
    if count > len(header) or "Section" not in header[count - 1]:
        return None
    return count


def check_gradebook_csv(text: str) -> list[str]:
    """Every rule above, applied to a Canvas CSV; returns the problems found (none = importable)."""
    problems: list[str] = []
    lines = text.splitlines()
    if not lines:
        return ["the file is empty"]
    if identify_delimiter(lines[:3]) != ",":
        problems.append("H1: Canvas would guess ';' as the delimiter from the first 3 lines")
    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error as exc:
        return problems + [f"not well-formed CSV: {exc}"]
    header = rows[0]
    if not has_student_headers(header):
        return problems + [f"H2: invalid header row {header[:6]}"]
    count = student_column_count(header)
    if count is None:
        return problems + [f"H3: the student columns do not end with 'Section': {header[:6]}"]
    if header[:count] != STUDENT_COLUMNS:
        problems.append(f"H3: student columns are {header[:count]}, expected {STUDENT_COLUMNS}")
    assignments = header[count:]
    if not assignments:
        problems.append("H2: no assignment column")
    for name in assignments:
        if NON_ASSIGNMENT_RE.search(name):
            problems.append(f"H5: column {name!r} would be dropped as a non-assignment column")
        if name in RESERVED_NAMES:
            problems.append(f"H5: column {name!r} is a reserved name")
        if not name.strip():
            problems.append("H4: an assignment column has an empty header")
        if looks_like_formula(name):
            problems.append(f"R5: header {name!r} starts like a spreadsheet formula")
    if len(set(header)) != len(header):
        problems.append("H6: repeated column headers")
    student_ids: set[str] = set()
    for number, row in enumerate(rows[1:], start=2):
        where = f"row {number}"
        if len(row) != len(header):
            problems.append(f"{where}: {len(row)} cells, the header has {len(header)}")
            continue
        if "Points Possible" in row[0]:
            for cell in row[count:]:
                if not re.fullmatch(r"[0-9]+(\.[0-9]+)?", cell):
                    problems.append(f"R1: {where}: points possible {cell!r} is not a number")
            continue
        if all(SKIPPED_ROW_RE.match(c) for c in row) or re.fullmatch(r"[;, ]+", ",".join(row)):
            problems.append(f"R2: {where} would be skipped as a blank/muted row")
            continue
        canvas_id, sis_id, login = row[1], row[2], row[3]
        if canvas_id and not CANVAS_ID_RE.match(canvas_id):
            problems.append(f"R3: {where}: ID {canvas_id!r} is not a Canvas user id in ASCII digits")
        if not (canvas_id or sis_id or login):
            problems.append(f"R3: {where}: no ID, SIS User ID or SIS Login ID; Canvas would match by name only")
        identity = canvas_id or sis_id or login
        if identity in student_ids:
            problems.append(f"R3: {where}: student {identity!r} appears twice")
        student_ids.add(identity)
        for cell in row[:count]:
            if looks_like_formula(cell):
                problems.append(f"R5: {where}: {cell!r} starts like a spreadsheet formula")
        for name, cell in zip(assignments, row[count:]):
            if not GRADE_CELL_RE.match(cell):
                problems.append(f"R4: {where}: {name!r} = {cell!r} is not points with '.' and at most 2 "
                                "decimals, or EX (a blank or '-' cell removes the student's grade)")
    return problems
