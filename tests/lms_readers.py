"""Readers that behave like the programs that consume our exports, for the LMS tests.

Written here from the consumers' documented and observed behaviour, not copied from them: the
tests read every export back with these, not with Python's own csv module, because the
importers do not parse the way Python writes.

- `php_fgetcsv`: PHP's fgetcsv with its default escape character `\\` (php.net, fgetcsv: "the
  escape character can be used as an alternative [to doubling the enclosure] ... it isn't even
  meant to escape itself"; inside an enclosure the escape character and the character after it
  are kept as they are, so a backslash before a quote keeps the field open). `moodle_import`
  adds what Moodle does around it (lib/csvlib.class.php `load_csv_content`, grade/import/csv/
  classes/load_data.php `prepare_import_grade_data`).
- `ruby_csv`: Ruby's CSV with its defaults (RFC 4180, no escape character, `liberal_parsing`
  off: a quote inside an unquoted field or text after a closing quote is a MalformedCSVError).
  `canvas_import` adds GradebookImporter's rules (app/models/gradebook_importer.rb).
- `classroom_reporter`: the GitHub Classroom reporter v1 (classroom-resources/
  autograding-grading-reporter@d13b5912: main.js, console-results.js, notify-classroom.js),
  what it prints and the float sums it records; `workflow_commands`: the lines of that output
  that GitHub's runner executes (actions/runner ActionCommand.cs: TryParseV2, TryParse).
- `prairielearn_host`: what PrairieLearn's grader host and PostgreSQL's jsonb accept.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from grader.lms.github_classroom import js_number

# ============================================================================= PHP / Moodle


def php_fgetcsv(text: str, delimiter: str = ",", enclosure: str = '"', escape: str = "\\") -> list[list[str] | None]:
    """Every record fgetcsv returns for `text`, in order; a blank line is None (PHP: [null])."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the last line's "\n" ends it; it does not start another
    records: list[list[str] | None] = []
    index = 0
    while index < len(lines):
        record, index = _fgetcsv_record(lines, index, delimiter, enclosure, escape)
        records.append(record)
    return records


def _fgetcsv_record(lines: list[str], index: int, delimiter: str, enclosure: str, escape: str):
    line = lines[index]
    index += 1
    if line.strip("\r") == "":
        return None, index
    fields: list[str] = []
    pos = 0
    while True:
        probe = pos  # white space before an enclosure is skipped
        while probe < len(line) and line[probe] != delimiter and line[probe] in " \t\r\v\f":
            probe += 1
        if probe < len(line) and line[probe] == enclosure:
            value, line, pos, index = _enclosed_field(lines, line, probe + 1, index, enclosure, escape)
            end = line.find(delimiter, pos)
            end = len(line) if end < 0 else end
            value += line[pos:end]  # text after the closing enclosure is kept
        else:
            end = line.find(delimiter, pos)
            end = len(line) if end < 0 else end
            value = line[pos:end].rstrip("\r\n")
        fields.append(value)
        if end >= len(line):
            return fields, index
        pos = end + 1


def _enclosed_field(lines, line, pos, index, enclosure, escape):
    """From just after an opening enclosure to just after its closing one (which may be lines later)."""
    value, start, state = "", pos, 0  # state 1: after the escape character; 2: after an enclosure
    while True:
        if pos >= len(line):
            if state == 2:  # the enclosure ended the line: it closed the field
                return value + line[start:pos - 1], line, pos, index
            value += line[start:pos] + "\n"  # the field goes on over the line end
            if index >= len(lines):  # unterminated: the rest of the data is the field
                return value[:-1], "", 0, index
            line, pos, start, state = lines[index], 0, 0, 0
            index += 1
            continue
        char = line[pos]
        if state == 1:  # escaped: kept as it is, with the escape character before it
            state = 0
        elif state == 2:
            if char != enclosure:  # a real closing enclosure
                return value + line[start:pos - 1], line, pos, index
            value += line[start:pos]  # a doubled enclosure: one is kept
            start, state = pos + 1, 0
        elif char == enclosure:
            state = 2
        elif char == escape:
            state = 1
        pos += 1


class MoodleImportError(Exception):
    pass


def moodle_import(text: str, users: dict[str, str], existing: dict[str, tuple] | None = None,
                  unlimited_grades: bool = False) -> dict[str, tuple[float | None, str]]:
    """What Moodle's CSV grade import stores, per Moodle user id: (grade, feedback).

    The file is `<user field>,<item>,<item> feedback`, mapped as docs/lms.md says: the first
    column to the user field (`users` maps its values to user ids), the second to an existing
    grade item, the third to that item's feedback. Raises MoodleImportError where Moodle
    refuses the whole import.
    """
    content = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n").strip()  # csvlib
    records = [r for r in php_fgetcsv(content) if r is not None]  # empty lines are skipped
    if not records:
        raise MoodleImportError("csvemptyfile")
    columns = len(records[0])
    if any(len(r) != columns for r in records):
        raise MoodleImportError("csvweirdcolumns")
    stored = dict(existing or {})
    student = None  # load_data.php keeps $this->studentid from row to row
    for line in records[1:]:
        if len(line) <= 1:
            continue
        user, grade, feedback = (value.strip() for value in line[:3])
        if user not in ("", "0"):  # PHP's empty(): such a row keeps the previous student
            if user not in users:
                raise MoodleImportError(f"usermappingerror: {user!r}")
            student = users[user]
        if student is None:
            raise MoodleImportError("usermappingerrorusernotfound")
        if grade in ("", "-"):
            value = None
        elif re.fullmatch(r"\s*[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?", grade):  # is_numeric
            value = float(grade)
        else:
            raise MoodleImportError(f"badgrade: {grade!r}")
        if value is not None and value > 100 and not unlimited_grades:
            raise MoodleImportError("gradevaluetoobig")
        stored[student] = (value, feedback)
    return stored


# ============================================================================= Ruby / Canvas


class MalformedCSVError(Exception):
    pass


def ruby_csv(text: str, col_sep: str = ",") -> list[list[str | None]]:
    """Ruby's CSV.parse with its defaults; an empty unquoted field is nil (None)."""
    rows: list[list[str | None]] = []
    pos, length = 0, len(text)
    line = 1
    while pos < length:
        row: list[str | None] = []
        while True:
            if pos < length and text[pos] == '"':
                pos += 1
                value = []
                while True:
                    if pos >= length:
                        raise MalformedCSVError(f"Unclosed quoted field in line {line}")
                    if text[pos] == '"':
                        if pos + 1 < length and text[pos + 1] == '"':
                            value.append('"')
                            pos += 2
                            continue
                        pos += 1
                        break
                    if text[pos] == "\n":
                        line += 1
                    value.append(text[pos])
                    pos += 1
                if pos < length and text[pos] not in (col_sep, "\r", "\n"):
                    raise MalformedCSVError(f"Any value after quoted field isn't allowed in line {line}")
                row.append("".join(value))
            else:
                end = pos
                while end < length and text[end] not in (col_sep, "\r", "\n"):
                    if text[end] == '"':
                        raise MalformedCSVError(f"Illegal quoting in line {line}")
                    end += 1
                row.append(text[pos:end] or None)
                pos = end
            if pos < length and text[pos] == col_sep:
                pos += 1
                continue
            break
        if text.startswith("\r\n", pos):
            pos += 2
        elif pos < length and text[pos] in "\r\n":
            if text[pos] == "\r":
                raise MalformedCSVError(f"Unquoted fields do not allow new line <\"\\r\"> in line {line}")
            pos += 1
        line += 1
        rows.append(row)
    return rows


def ruby_to_i(text: str | None) -> int:
    """Ruby's String#to_i: leading white space, a sign, then ASCII digits (underscores between)."""
    match = re.match(r"\s*([+-]?[0-9]+(?:_[0-9]+)*)", text or "")
    return int(match.group(1).replace("_", "")) if match else 0


TITLE_AND_ID = re.compile(r"\A([^\n]*)[ \t\r\n\f\v]\(([0-9]+)\)\Z")  # Ruby: \s and \d are ASCII


def decimal_comma_to_period(cell: str | None) -> str | None:
    """GradebookImporter's CSV converter."""
    if cell is None or not re.fullmatch(r"-?[0-9.,]+%?", cell):
        return cell
    parts = re.split(r"[,.]", cell)
    last = parts.pop()
    return last if not parts else "".join(parts) + "." + last


@dataclass
class CanvasCourse:
    """What the importer looks up: students by Canvas id, SIS id and login; published assignments; grades."""

    students: dict[int, dict[str, str]]  # id -> {"sis": ..., "login": ..., "name": ...}
    assignments: dict[int, dict[str, Any]]  # id -> {"title": ..., "points": ..., "published": bool}
    grades: dict[tuple[int, int], str] = field(default_factory=dict)  # (student, assignment) -> "7.5" or "EX"


@dataclass
class CanvasUpload:
    students: list[int | str]  # Canvas ids, or "unknown: <name>"
    assignments: list[int | str]  # Canvas ids, or "new: <title>"
    new_points: dict[str, str]  # a new assignment's points, from the Points Possible row
    changes: list[tuple[int | str, int | str, str | None, str | None]]  # (student, assignment, old, new)


def canvas_import(text: str, course: CanvasCourse) -> CanvasUpload:
    """The changes Canvas's Grades > Import shows for `text`, and then saves (posted_grade: None removes)."""
    first_lines = text.splitlines(keepends=True)[:3]
    semicolon = _canvas_delimiter(first_lines) == ";"
    rows = [r for r in ruby_csv(text, ";" if semicolon else ",")
            if not re.fullmatch(r"[;, ]+", ",".join(c or "" for c in r))]
    rows = [[decimal_comma_to_period(c) for c in r] for r in rows]
    header = rows[0]
    if not (len(header) > 3 and "Student" in (header[0] or "") and "ID" in (header[1] or "")):
        raise ValueError("Invalid header row")
    student_columns = 5 if "SIS User ID" in (header[2] or "") else 3
    published = {a: v for a, v in course.assignments.items() if v["published"]}
    columns: list[tuple[int, int | str]] = []
    for index, name in enumerate(header[student_columns:], start=student_columns):
        match = TITLE_AND_ID.match(name or "")
        found = int(match.group(2)) if match and int(match.group(2)) in published else None
        if found is None:
            found = next((a for a, v in published.items() if v["title"] == name), None)
        columns.append((index, found if found is not None else f"new: {match.group(1) if match else name}"))
    upload = CanvasUpload([], [a for _, a in columns], {}, [])
    for row in rows[1:]:
        if "Points Possible" in (row[0] or ""):
            upload.new_points = {a: row[i] for i, a in columns if isinstance(a, str)}
            continue
        if all(re.fullmatch(r"\s*(Muted|Manual Posting.*)?\s*", c or "", re.IGNORECASE) for c in row):
            continue
        student = _canvas_student(row, course, student_columns)
        upload.students.append(student)
        for index, assignment in columns:
            new = (row[index] or "").strip()
            old = course.grades.get((student, assignment)) if isinstance(student, int) else None
            if not _no_change(new, old):
                upload.changes.append((student, assignment, old, None if new in ("", "-") else new))
    return upload


def _canvas_delimiter(lines: list[str]) -> str:
    counts = {}
    for separator in (";", ","):
        try:
            sizes = [len(ruby_csv(line.rstrip("\r\n"), separator)[0]) for line in lines]
        except (MalformedCSVError, IndexError):
            sizes = [0, -1]
        counts[separator] = sizes[0] if len(set(sizes)) == 1 else 0
    return ";" if counts[";"] > counts[","] else ","


def _canvas_student(row: list[str | None], course: CanvasCourse, student_columns: int) -> int | str:
    by_id = ruby_to_i(row[1]) if row[1] else None
    if by_id in course.students:
        return by_id
    if student_columns == 5:
        for column, key in ((2, "sis"), (3, "login")):
            found = [s for s, v in course.students.items() if row[column] and v.get(key) == row[column]]
            if found:
                return found[0]
    named = [s for s, v in course.students.items() if v.get("name") == row[0]]
    return named[0] if named else f"unknown: {row[0]}"


def _no_change(new: str, old: str | None) -> bool:
    """gradebook_importer.rb no_change_to_value?, with consider_excused."""
    def no_score(value):
        return value is None or value.strip() in ("", "-")
    if new == old or (no_score(new) and no_score(old)):
        return True
    if no_score(new) or no_score(old):
        return False
    if new.upper() == "EX" or old.upper() == "EX":
        return False
    return f"{Decimal(old):.2f}" == f"{Decimal(new):.2f}"


# ============================================================================= GitHub Classroom


@dataclass
class ReporterRun:
    console: list[str]  # every line the reporter wrote
    points: str  # the text of the "Autograding complete" notice
    total: float
    maximum: float


def classroom_reporter(output_lines: list[str], runners_input: str) -> ReporterRun:
    """Run the reporter v1 on our `$GITHUB_OUTPUT` lines, as the workflow wires them."""
    if not re.fullmatch(r"([a-zA-Z0-9]+,)*[a-zA-Z0-9]+", runners_input):
        raise ValueError("The runners input must be a comma-separated list of strings.")
    outputs = dict(line.split("=", 1) for line in output_lines)
    env = {f"{rid.upper()}_RESULTS": value for rid, value in outputs.items()}
    runners = [(r, json.loads(base64.b64decode(env[f"{r.strip().upper()}_RESULTS"]).decode("utf-8", "replace")))
               for r in runners_input.split(",")]
    console: list[str] = []
    for index, (runner, results) in enumerate(runners):  # console-results.js
        if index > 0:
            console.append("\x1b[35m" + "\U0001F680" * 24 + "\x1b[0m\n")
        console.append(f"\U0001F504 Processing: {runner}")
        for test in results["tests"]:
            if test["status"] == "pass":
                console.append(f"\x1b[32m\u2705 {test['name']}\x1b[0m")
            elif test["status"] == "error":
                console.append(f"Error: {test.get('message') or 'Failed to run test ' + repr(test['name'])}\n\x1b[0m")
            else:
                console.append(f"\x1b[31m\u274C {test['name']}\x1b[0m")
            if test.get("test_code"):
                console.append(f"Test code:\n{test['test_code']}\n")
    total = maximum = 0  # notify-classroom.js: running sums, in the runners' order
    for _, results in runners:
        if not results.get("max_score"):
            continue
        maximum += results["max_score"]
        for test in results["tests"]:
            total += test["score"]
    points = f"Points {js_number(total)}/{js_number(maximum)}"
    summary = '{"totalPoints":' + js_number(total) + ',"maxPoints":' + js_number(maximum) + "}"
    console.append(f"::notice title=Autograding complete::{points}")  # core.notice
    console.append(f"::notice title=Autograding report::{summary}")
    if any(r["status"] == "fail" for _, r in runners):
        console.append("::error::Some tests failed.")
    elif any(r["status"] == "error" for _, r in runners):
        console.append("::error::Some tests errored.")
    return ReporterRun([line for text in console for line in text.split("\n")], points, total, maximum)


def workflow_commands(lines: list[str]) -> list[str]:
    """The lines GitHub's runner executes as commands: '::name ...::data' after leading white
    space (TryParseV2), or '##[name ...]data' anywhere in the line (TryParse)."""
    commands = []
    for line in lines:
        stripped = line.lstrip()
        if stripped.startswith("::") and stripped.find("::", 2) > 2:
            commands.append(stripped)
        elif re.search(r"##\[[^\]]+\]", line):
            commands.append(line)
    return commands


# ============================================================================= PrairieLearn


def prairielearn_host(raw: bytes) -> dict:
    """results.json as the grader host reads it and PostgreSQL's jsonb stores it."""
    text = raw.decode("utf-8")  # strict: invalid UTF-8 is refused
    if "\\u0000" in text or re.search(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}", text):
        raise ValueError("jsonb: unsupported Unicode escape sequence")
    results = json.loads(text)
    if not isinstance(results.get("score"), (int, float)):
        raise ValueError("results.score is not a number")
    return results
