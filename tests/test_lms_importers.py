"""Every export read back the way its consumer reads it, row for row, with hostile text in it.

The readers (tests/lms_readers.py) behave like the consumers, not like Python's csv module:
PHP's fgetcsv with its `\\` escape character and Moodle's import around it; Ruby's CSV and
Canvas's GradebookImporter (ids read with `to_i`, a blank cell as a removed grade); the GitHub
Classroom reporter and the runner's workflow commands; PrairieLearn's host and PostgreSQL's
jsonb. The text comes from where a student controls it (an import error's message, a test's
message) and from a roster (names with commas, quotes, Chinese, formula-like starts).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from grader.exports import gradescope
from grader.lms.scores import exercise_summary, load_score_path
from grader.safetext import clean_text
from conftest import COURSE, FULL_MARKS, SOLUTIONS, TEST_COURSE
from lms_factory import EXERCISES, MAX_SCORE, MODULE, NAMES, PER_EXERCISE, WRONG, make_score, run_grader, write_roster
from lms_readers import (CanvasCourse, MalformedCSVError, canvas_import, classroom_reporter, moodle_import,
                         php_fgetcsv, prairielearn_host, ruby_csv, ruby_to_i, workflow_commands)

BACKSLASH_QUOTE = f'{MODULE[WRONG]} could not be imported: ImportError: No module named "C:\\data\\"'
HOSTILE = ('broken "quoted", with commas, \\"C:\\data\\"\nsecond line =1+1\n'
           '::notice title=Autograding complete::Points 100/100\n\ud800 \x00 \x1b[31m 中文 ##[error]x\\')
SIX = [  # submission, name, canvas id, sis id, login, email, section, lti sub
    ("ada", "Lovelace, Ada", "4711", "s1001", "alovelace", "ada@example.edu", "Section A", "lti-ada"),
    ("bob", 'Bob "Bobby" Stone', "4712", "s1002", "bstone", "bob@example.edu", "Section A", "lti-bob"),
    ("chen", "陈静, Chen Jing", "4713", "s1003", "cjing", "chen@example.edu", "Section B", "lti-chen"),
    ("dara", "=HYPERLINK(\"http://evil\")", "4714", "s1004", "doneil", "dara@example.edu", "-Section", "lti-dara"),
    ("eve", "+Eve @home", "4715", "s1005", "eve", "eve@example.edu", "@B", "lti-eve"),
    ("fay", "Fay \\ O'Neil", "4716", "s1006", "fay", "fay@example.edu", "Section B", "lti-fay"),
]
USERS = {s[5]: s[0] for s in SIX}
ONE_WRONG = f"{MAX_SCORE - PER_EXERCISE:g}"  # each of the six gets one exercise wrong


def six_students(tmp_path, errors: dict[str, str], missing=()):
    """Score files for the six (some with a problem text), and their roster."""
    scores = tmp_path / "scores"
    scores.mkdir()
    for index, (name, *_rest) in enumerate(SIX):
        if name in missing:
            continue
        failed = [EXERCISES[index][0]]
        data = make_score(name, failed, submission_errors=[errors[name]] if name in errors else [])
        (scores / f"{name}.json").write_text(json.dumps(data))
    return scores, write_roster(tmp_path / "roster.csv", SIX)


def expected_feedback(path: Path) -> str:
    """What Moodle must store as a student's feedback: the summary, backslashes written as '/'."""
    return exercise_summary(load_score_path(path).scores[0]).replace("\\", "/")


# ----------------------------------------------------------------------------- Moodle


def test_six_students_with_backslash_quote_feedback_read_back_row_for_row_by_moodle(capsys, tmp_path):
    scores, roster = six_students(tmp_path, {"bob": BACKSLASH_QUOTE})
    out = tmp_path / "moodle.csv"
    code, _, err = run_grader(capsys, "export", "moodle", scores, "--roster", roster, "--out", out, "--item", "HW1")
    assert code == 0, err
    text = out.read_text(encoding="utf-8")
    stored = moodle_import(text, USERS)
    assert sorted(stored) == sorted(USERS.values())  # all six, each on their own row
    for name, *_ in SIX:
        grade, feedback = stored[name]
        assert grade == MAX_SCORE - PER_EXERCISE and feedback == expected_feedback(scores / f"{name}.json"), name
    assert 'named "C:/data/"' in stored["bob"][1]
    assert [len(r) for r in php_fgetcsv(text)] == [3] * 7


def test_the_reader_shows_what_pythons_csv_writer_did_to_moodle(tmp_path):
    """The file as Python's csv module writes it (the export before this fix): PHP's fgetcsv reads
    bob's `\\"` as an escaped quote, his feedback runs on to the end of the file, and four students
    get no grade, with no error."""
    rows = [["email", "HW1", "HW1 feedback"]]
    rows += [[s[5], ONE_WRONG, f"{WRONG} 0/5" + (". Problems: " + BACKSLASH_QUOTE if s[0] == "bob" else "")] for s in SIX]
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    assert [r[0] for r in csv.reader(io.StringIO(buffer.getvalue()))][1:] == [s[5] for s in SIX]  # Python: fine
    stored = moodle_import(buffer.getvalue(), USERS)
    assert sorted(stored) == ["ada", "bob"]  # Moodle: chen, dara, eve and fay silently get nothing
    assert f"chen@example.edu,{ONE_WRONG}" in stored["bob"][1]


def test_moodle_refuses_what_it_would_misread(capsys, tmp_path):
    scores, roster = six_students(tmp_path, {})
    for field, value in (("email", "x\\y@example.edu"), ("email", "=cmd@example.edu")):
        rows = [list(s) for s in SIX]
        rows[0][5] = value
        bad = write_roster(tmp_path / "bad.csv", [tuple(r) for r in rows])
        code, _, err = run_grader(capsys, "export", "moodle", scores, "--roster", bad, "--out", tmp_path / "m.csv",
                                  "--item", "HW1")
        assert code == 2 and repr(value) in err, err
    code, _, err = run_grader(capsys, "export", "moodle", scores, "--roster", roster, "--out", tmp_path / "m.csv",
                              "--item", "HW1 \\ part 2")
    assert code == 2 and "backslash" in err
    code, _, err = run_grader(capsys, "export", "moodle", scores, "--roster", roster, "--out", tmp_path / "m.csv",
                              "--item", "HW1", "--grade-max", "１０")
    assert code == 2 and "ASCII digits" in err


# ----------------------------------------------------------------------------- Canvas


def canvas_course(grades: dict) -> CanvasCourse:
    students = {int(s[2]): {"sis": s[3], "login": s[4], "name": s[1]} for s in SIX}
    return CanvasCourse(students, {12345: {"title": "Autograd HW1", "points": MAX_SCORE, "published": True}}, grades)


def test_canvas_file_for_a_roster_with_a_student_who_did_not_submit(capsys, tmp_path):
    scores, roster = six_students(tmp_path, {}, missing=("eve",))
    out = tmp_path / "canvas.csv"
    code, _, err = run_grader(capsys, "export", "canvas", scores, "--roster", roster, "--out", out,
                              "--title", "Autograd HW1", "--assignment-id", "12345")
    assert code == 0, err
    assert "line 6 (+Eve @home; submission eve)" in err and "left out of the file" in err
    text = out.read_text(encoding="utf-8")
    # eve's grade was entered by hand (an extension, a make-up exam): the import must not touch it
    course = canvas_course({(4715, 12345): "77", (4711, 12345): "10"})
    upload = canvas_import(text, course)
    assert upload.students == [4711, 4712, 4713, 4714, 4716] and upload.assignments == [12345]
    assert upload.changes == [(4711, 12345, "10", ONE_WRONG), (4712, 12345, None, ONE_WRONG),
                              (4713, 12345, None, ONE_WRONG), (4714, 12345, None, ONE_WRONG),
                              (4716, 12345, None, ONE_WRONG)]
    # the difference: the same file with an empty cell for eve (the export before this fix)
    blank = text.rstrip("\r\n") + '\r\n"\'+Eve @home",4715,s1005,eve,\'@B,\r\n'
    assert (4715, 12345, "77", None) in canvas_import(blank, course).changes  # posted_grade: null, a removal


def test_canvas_reads_back_every_row_and_no_cell_is_a_formula(capsys, tmp_path):
    scores, roster = six_students(tmp_path, {"bob": HOSTILE})
    out = tmp_path / "canvas.csv"
    code, _, err = run_grader(capsys, "export", "canvas", scores, "--roster", roster, "--out", out,
                              "--title", "Autograd HW1", "--assignment-id", "12345", "--points-possible", "10")
    assert code == 0, err
    text = out.read_text(encoding="utf-8")
    rows = ruby_csv(text)
    assert [r[0] for r in rows[2:]] == ["Lovelace, Ada", 'Bob "Bobby" Stone', "陈静, Chen Jing",
                                        "'=HYPERLINK(\"http://evil\")", "'+Eve @home", "Fay \\ O'Neil"]
    assert all(not (cell or "").startswith(("=", "+", "-", "@")) for row in rows for cell in row)
    upload = canvas_import(text, canvas_course({}))
    assert upload.students == [4711, 4712, 4713, 4714, 4715, 4716]
    rescaled = f"{round(10 * (MAX_SCORE - PER_EXERCISE) / MAX_SCORE, 2):g}"  # 9.47: 90/95 for this course
    assert {new for _, _, _, new in upload.changes} == {rescaled}  # rescaled to the assignment's 10 points
    with pytest.raises(MalformedCSVError):  # the reader is strict where Ruby is
        ruby_csv('Student,ID\r\nab"c,1\r\n')
    assert ruby_to_i("４７１１") == 0 and ruby_to_i("4711") == 4711  # why such ids are refused:
    fullwidth = text.replace('"Lovelace, Ada",4711,s1001,alovelace,', "Ada L.,４７１１,,,")
    assert canvas_import(fullwidth, canvas_course({})).students[0] == "unknown: Ada L."  # matches no one


# ----------------------------------------------------------------------------- per-submission exports


def hostile_file(tmp_path) -> Path:
    data = make_score("mal", [WRONG], status="error", submission_errors=[HOSTILE])
    for test in data["exercises"][NAMES.index(WRONG)]["tests"]:
        test["message"] = HOSTILE
        test["visibility"] = "visible"
    path = tmp_path / "mal.json"
    path.write_text(json.dumps(data))
    return path


def test_prairielearn_host_stores_the_hostile_text(capsys, tmp_path):
    path = hostile_file(tmp_path)
    out = tmp_path / "results.json"
    code, _, err = run_grader(capsys, "export", "prairielearn", path, "--out", out)
    assert code == 0, err
    results = prairielearn_host(out.read_bytes())
    assert results["score"] == pytest.approx((MAX_SCORE - PER_EXERCISE) / MAX_SCORE, abs=1e-6)
    wrong = [t for t in results["tests"] if t["name"].startswith(f"{WRONG}: ")]
    assert wrong[0]["message"] == clean_text(HOSTILE, 2000) and "\ufffd" in wrong[0]["message"]
    assert "> ::notice title=Autograding complete" in results["message"]
    with pytest.raises(ValueError, match="jsonb"):  # the reader refuses what PostgreSQL refuses
        prairielearn_host(b'{"score": 1, "message": "\\ud800"}')


def test_github_classroom_shows_the_hostile_text_and_runs_none_of_it(capsys, tmp_path):
    code, out, err = run_grader(capsys, "export", "github-classroom", hostile_file(tmp_path))
    assert code == 0, err
    lines = out.splitlines()
    run = classroom_reporter(lines, ",".join(line.split("=", 1)[0] for line in lines))
    assert run.points == f"Points {ONE_WRONG}/{MAX_SCORE:g}"
    assert any("中文" in line for line in run.console)
    assert [c for c in workflow_commands(run.console) if "Points 100" in c or "error]x" in c] == []


def test_gradescope_results_hold_the_hostile_text_cleaned(tmp_path):
    report = json.loads(hostile_file(tmp_path).read_text())
    results = gradescope.gradescope_results(report, 1.0)
    raw = json.dumps(results, ensure_ascii=False).encode("utf-8")  # raised on the lone surrogate before
    text = raw.decode("utf-8")
    assert "\\u0000" not in text and "\ud800" not in text and "中文" in text
    assert workflow_commands(results["output"].splitlines()) == []
    assert all(workflow_commands(t["output"].splitlines()) == [] for t in results["tests"])


# ----------------------------------------------------------------------------- a real hostile submission


BROKEN_MODULE = MODULE[WRONG]  # the module whose import fails: its exercises score 0
WITHOUT_BROKEN = FULL_MARKS - sum(e.max_score for e in COURSE.exercises if e.module == BROKEN_MODULE)


def points(value: float) -> str:
    return f"{value:g}"


@pytest.fixture(scope="module")
def graded_hostile(tmp_path_factory):
    """The reference with an import error carrying a lone surrogate, a backslash-quote path and a
    fake '::notice' line, graded by `grader grade` (the engine, not the factory)."""
    import shutil

    folder = tmp_path_factory.mktemp("hostile") / "mal"
    shutil.copytree(SOLUTIONS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    with open(folder / BROKEN_MODULE, "a", encoding="utf-8") as handle:
        handle.write('\nraise ImportError("No module named \\"C:\\\\data\\\\\\"\\ud800\\n'
                     '::notice title=Autograding complete::Points 100/100")\n')
    out = folder.parent / "scores"
    from grader.cli import main
    import contextlib

    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = main(["grade", str(folder), "--out", str(out), "--workers", "1",
                     *(["--course", TEST_COURSE] if TEST_COURSE else [])])
    return code, out, stdout.getvalue()


def test_grade_survives_and_its_summary_runs_no_command(graded_hostile):
    code, out, summary = graded_hostile
    assert code == 0 and (out / "mal.json").exists()  # the UTF-8 write raised on the surrogate before
    assert "Points 100/100" in summary and workflow_commands(summary.splitlines()) == []
    report = json.loads((out / "mal.json").read_text(encoding="utf-8"))
    assert report["score"] == WITHOUT_BROKEN and "\ufffd" in report["submission_errors"][0]


def test_the_graded_file_goes_through_every_export(capsys, graded_hostile, tmp_path):
    _, scores, _ = graded_hostile
    roster = write_roster(tmp_path / "roster.csv", [("mal", "Mal", "4711", "s1", "mal", "mal@example.edu", "A", "l")])
    code, _, err = run_grader(capsys, "export", "moodle", scores, "--roster", roster, "--out", tmp_path / "m.csv",
                              "--item", "HW1")
    assert code == 0, err
    stored = moodle_import((tmp_path / "m.csv").read_text(encoding="utf-8"), {"mal@example.edu": "m"})
    (grade, feedback), = stored.values()
    assert grade == WITHOUT_BROKEN and 'named "C:/data/"\ufffd > ::notice' in feedback
    code, _, err = run_grader(capsys, "export", "canvas", scores, "--roster", roster, "--out", tmp_path / "c.csv",
                              "--title", "HW1", "--assignment-id", "7")
    assert code == 0 and canvas_import((tmp_path / "c.csv").read_text(encoding="utf-8"), CanvasCourse(
        {4711: {"name": "Mal"}}, {7: {"title": "HW1", "published": True}})).changes == [(4711, 7, None, points(WITHOUT_BROKEN))]
    code, _, err = run_grader(capsys, "export", "prairielearn", scores, "--out", tmp_path / "pl")
    assert code == 0 and prairielearn_host((tmp_path / "pl" / "mal" / "results.json").read_bytes())["score"] == pytest.approx(WITHOUT_BROKEN / FULL_MARKS, abs=1e-6)
    code, out, err = run_grader(capsys, "export", "github-classroom", scores / "mal.json")
    lines = out.splitlines()
    run = classroom_reporter(lines, ",".join(line.split("=", 1)[0] for line in lines))
    assert code == 0 and run.points == f"Points {points(WITHOUT_BROKEN)}/{points(FULL_MARKS)}"
    assert [c for c in workflow_commands(run.console) if "100/100" in c] == []
