"""`grader export canvas`: every rule of Canvas's GradebookImporter (lms.md §2.1) on the file we write.

Rule ids (H1-H6, R1-R4) are those of grader/lms/canvas.py's docstring, which cites
instructure/canvas-lms app/models/gradebook_importer.rb and Assignment.title_and_id.
"""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from grader.lms import canvas
from lms_factory import (EXERCISES, MAX_SCORE, NAMES, PER_EXERCISE, STUDENTS, WRONG, class_scores, make_score, run_grader,
                         write_roster)

TITLE = "Autograd HW1"


@pytest.fixture
def setup(tmp_path):
    scores = class_scores(tmp_path / "scores")
    roster = write_roster(tmp_path / "roster.csv")
    return tmp_path, scores, roster


def export(capsys, setup, *extra):
    tmp_path, scores, roster = setup
    out = tmp_path / "canvas.csv"
    code, _, err = run_grader(capsys, "export", "canvas", scores, "--roster", roster, "--out", out,
                              "--title", TITLE, *extra)
    text = out.read_text(encoding="utf-8") if out.exists() else ""
    return code, text, err


def parse(text):
    return list(csv.reader(io.StringIO(text, newline=""), strict=True))


def test_file_passes_every_importer_rule(capsys, setup):
    code, text, err = export(capsys, setup, "--assignment-id", "12345", "--per-exercise")
    assert code == 1, err  # written, but zed.json has no roster row: reported, exit 1
    assert canvas.check_gradebook_csv(text) == []
    assert not text.startswith("\ufeff")


def test_h1_canvas_guesses_the_comma_delimiter(capsys, setup):
    _, text, _ = export(capsys, setup, "--assignment-id", "12345")
    assert canvas.identify_delimiter(text.splitlines()[:3]) == ","
    # ...and the guess does pick ';' for a semicolon file, so the rule is really applied
    assert canvas.identify_delimiter(["Student;ID;Section;A", "Points Possible;;;1", "x;1;;1"]) == ";"


def test_h2_h3_header_student_columns_then_section(capsys, setup):
    _, text, _ = export(capsys, setup, "--assignment-id", "12345")
    header = parse(text)[0]
    assert len(header) > 3 and "Student" in header[0] and "ID" in header[1]
    assert header[:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert canvas.student_column_count(header) == 5 and "Section" in header[4]


def test_h4_total_column_is_title_and_id_and_exercise_columns_match_by_title(capsys, setup):
    _, text, _ = export(capsys, setup, "--assignment-id", "12345", "--per-exercise")
    header = parse(text)[0]
    title_and_id = re.compile(r"\A(.*)\s\((\d+)\)\Z")  # Assignment.title_and_id
    assert title_and_id.match(header[5]).groups() == (TITLE, "12345")
    assert header[6:] == [f"{TITLE}: {name}" for name, _ in EXERCISES]
    assert not any(title_and_id.match(h) for h in header[6:])


def test_h4_without_id_the_title_is_matched_exactly(capsys, setup):
    _, text, _ = export(capsys, setup)
    assert parse(text)[0][5] == TITLE


def test_h5_h6_no_column_is_dropped_reserved_or_repeated(capsys, setup):
    _, text, _ = export(capsys, setup, "--per-exercise")
    header = parse(text)[0]
    ignored = re.compile("Current Score|Current Points|Current Grade|Final Score|Final Points|Final Grade|"
                         "Override Score|Override Grade|Override Status")
    assert not any(ignored.search(h) for h in header[5:])
    assert not set(header[5:]) & set(canvas.RESERVED_NAMES)
    assert len(set(header)) == len(header)


@pytest.mark.parametrize("title, extra, message", [
    ("Final Grade check", [], "Canvas ignores a column"),
    ("HW1 Current Score", [], "Canvas ignores a column"),
    ("Section", [], "reserved"),
    ("HW1 (42)", [], "reads as an assignment id"),
    ("HW1", ["--assignment-id", "abc"], "numeric assignment id"),
    ("  ", [], "non-empty"),
])
def test_titles_canvas_would_misread_are_refused(capsys, setup, title, extra, message):
    tmp_path, scores, roster = setup
    code, _, err = run_grader(capsys, "export", "canvas", scores, "--roster", roster, "--out",
                              tmp_path / "c.csv", "--title", title, *extra)
    assert code == 2 and message in err
    assert not (tmp_path / "c.csv").exists()


def test_r1_points_possible_row(capsys, setup):
    _, text, _ = export(capsys, setup, "--per-exercise")
    row = parse(text)[1]
    assert "Points Possible" in row[0] and row[1:5] == ["", "", "", ""]
    assert row[5:] == [f"{MAX_SCORE:g}"] + ["5"] * len(EXERCISES)
    _, text, _ = export(capsys, setup, "--no-points-possible")
    assert not any("Points Possible" in r[0] for r in parse(text))


def test_r2_no_student_row_would_be_skipped(capsys, setup):
    _, text, _ = export(capsys, setup)
    skipped = re.compile(r"^\s*(Muted|Manual Posting.*)?\s*$", re.IGNORECASE)
    for row in parse(text)[2:]:
        assert not all(skipped.match(c) for c in row)
        assert not re.fullmatch(r"[;, ]+", ",".join(row))


def test_r3_every_student_is_identified_by_canvas_id_sis_id_and_login(capsys, setup):
    _, text, _ = export(capsys, setup)
    rows = parse(text)[2:]
    with_score = [s for s in STUDENTS if s[0] != "eve"]  # eve has not submitted: left out
    assert [r[:5] for r in rows] == [[s[1], s[2], s[3], s[4], s[6]] for s in with_score]
    assert all(re.fullmatch("[0-9]+", r[1]) for r in rows)


def test_r4_cells_are_the_scores_and_a_student_without_submission_is_left_out(capsys, setup):
    code, text, err = export(capsys, setup, "--per-exercise")
    rows = {r[0]: r[5:] for r in parse(text)[2:]}
    assert rows["Lovelace, Ada"][0] == f"{MAX_SCORE:g}" and rows["Bob Stone"][0] == f"{MAX_SCORE - 15:g}"
    assert rows['Chen "CJ" Jun'][0] == f"{MAX_SCORE - 6:g}" and rows["O'Neil, Dara"][0] == "0"
    assert "Eve Noshow" not in rows  # an empty cell would remove the grade Canvas has for her
    wrong = 1 + NAMES.index(WRONG)
    assert rows["Bob Stone"][wrong] == "0" and rows["Lovelace, Ada"][wrong] == f"{PER_EXERCISE:g}"
    for cells in rows.values():
        assert all(re.fullmatch(r"[0-9]+(\.[0-9]{1,2})?", c) for c in cells)
    assert "zed" not in text  # a submission without roster row gets no row...
    assert "NOT EXPORTED: zed.json: submission 'zed' has no roster row" in err  # ...and is reported
    assert "1 roster student(s) without a submission (left out of the file: Canvas keeps the grade it has): " \
           "line 6 (Eve Noshow; submission eve)" in err


def test_r4_missing_as_zero_and_fractional_points(capsys, setup):
    tmp_path, scores, _ = setup
    partial = make_score("ada")
    partial["exercises"][0]["tests"][0]["score"] = 1.254
    partial["exercises"][0]["score"] = 4.254
    partial["score"] = MAX_SCORE - 0.746
    (scores / "ada.json").write_text(json.dumps(partial))
    _, text, _ = export(capsys, setup, "--missing-as-zero")
    rows = {r[0]: r[5] for r in parse(text)[2:]}
    assert rows["Eve Noshow"] == "0" and rows["Lovelace, Ada"] == f"{MAX_SCORE - 0.75:g}"  # 2 decimals, '.' separator


def test_invalid_score_file_gets_no_grade_even_with_missing_as_zero(capsys, setup):
    tmp_path, scores, _ = setup
    (scores / "bob.json").write_text('{"schema_version": "1.0"}')
    code, text, err = export(capsys, setup, "--missing-as-zero", "--report", tmp_path / "report.json")
    rows = {r[0]: r[5] for r in parse(text)[2:]}
    assert "Bob Stone" not in rows and rows["Eve Noshow"] == "0" and code == 1
    assert "NOT EXPORTED: bob.json (student at roster line 3 (Bob Stone; submission bob))" in err
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["invalid_score_files"][0]["roster_line"] == 3
    assert report["submissions_without_roster_row"] == [{"submission": "zed", "file": str(scores / "zed.json")}]
    assert [s["submission"] for s in report["students_without_submission"]] == ["eve"]


def test_names_with_commas_and_quotes_survive_a_strict_parse(capsys, setup):
    _, text, _ = export(capsys, setup)
    assert '"Lovelace, Ada"' in text and '"Chen ""CJ"" Jun"' in text
    assert [r[0] for r in parse(text)[2:]] == [s[1] for s in STUDENTS if s[0] != "eve"]


def test_roster_without_any_canvas_id_is_refused_naming_rows(capsys, setup):
    tmp_path, scores, _ = setup
    roster = tmp_path / "r.csv"
    roster.write_text("submission,name,lms_user_id\nada,Ada,4711\nbob,Bob,\n")
    code, _, err = run_grader(capsys, "export", "canvas", scores, "--roster", roster, "--out", tmp_path / "c.csv",
                              "--title", TITLE)
    assert code == 2 and "line 3 (Bob; submission bob)" in err
    roster.write_text("submission,name,lms_user_id\nada,Ada,u-4711\n")
    code, _, err = run_grader(capsys, "export", "canvas", scores, "--roster", roster, "--out", tmp_path / "c.csv",
                              "--title", TITLE)
    assert code == 2 and "numeric Canvas user id" in err
    roster.write_text("submission,name,email\nada,Ada,a@x\n")
    code, _, err = run_grader(capsys, "export", "canvas", scores, "--roster", roster, "--out", tmp_path / "c.csv",
                              "--title", TITLE)
    assert code == 2 and "needs at least one of the columns lms_user_id, sis_user_id, login" in err


def test_a_file_graded_with_other_maxima_is_reported_and_the_rest_exported(capsys, setup):
    tmp_path, scores, _ = setup
    other = make_score("bob")
    other["exercises"] = other["exercises"][:-1]
    other["score"] = other["max_score"] = MAX_SCORE - PER_EXERCISE
    (scores / "bob.json").write_text(json.dumps(other))
    code, text, err = export(capsys, setup)
    assert code == 1 and "Bob Stone" not in text and "Lovelace, Ada" in text
    assert "NOT EXPORTED: bob.json (student at roster line 3 (Bob Stone; submission bob)): graded with other " \
           f"exercises or maxima than the other score files (max {MAX_SCORE:g} over {len(EXERCISES)} exercises)" in err
    (scores / "ada.json").write_text(json.dumps({**other, "submission": "ada"}))
    (scores / "zed.json").unlink()  # two files of each kind: no majority, refused, naming the files
    code, text, err = export(capsys, setup)
    assert code == 2 and "do not share the same exercises and maximum scores" in err and "bob.json" in err


def test_points_possible_rescales_to_the_canvas_assignment(capsys, setup):
    code, text, err = export(capsys, setup, "--assignment-id", "12345", "--points-possible", "10")
    rows = parse(text)
    assert rows[1][5] == "10"  # the Points Possible row
    scores = {r[0]: r[5] for r in rows[2:]}
    out_of_10 = {lost: f"{round(10 * (MAX_SCORE - lost) / MAX_SCORE, 2):g}" for lost in (15, 6)}  # 8.42, 9.37
    assert scores == {"Lovelace, Ada": "10", "Bob Stone": out_of_10[15], 'Chen "CJ" Jun': out_of_10[6], "O'Neil, Dara": "0"}
    assert canvas.check_gradebook_csv(text) == []
    for bad in ("0", "１０", "ten"):
        code, _, err = export(capsys, setup, "--points-possible", bad)
        assert code == 2 and ("greater than 0" in err or "ASCII digits" in err), (bad, err)


@pytest.mark.parametrize("column, value", [("lms_user_id", "４７１３"), ("lms_user_id", "4713\u0663")])
def test_ids_in_other_digits_than_ascii_are_refused_naming_the_value(capsys, setup, column, value):
    tmp_path, scores, _ = setup
    roster = tmp_path / "r.csv"
    roster.write_text(f"submission,name,{column}\nada,Ada,{value}\n", encoding="utf-8")
    code, _, err = run_grader(capsys, "export", "canvas", scores, "--roster", roster, "--out", tmp_path / "c.csv",
                              "--title", TITLE)
    assert code == 2 and repr(value) in err and "ASCII digits" in err
    code, _, err = export(capsys, setup, "--assignment-id", "１２３４５")
    assert code == 2 and "'１２３４５'" in err and "ASCII digits" in err


def test_the_checker_catches_each_broken_rule():
    good = ("Student,ID,SIS User ID,SIS Login ID,Section,Autograd HW1 (12345)\r\n"
            "Points Possible,,,,,10\r\n"
            '"Doe, Jane",4711,s123,jdoe,Section A,7.5\r\n')
    assert canvas.check_gradebook_csv(good) == []  # lms.md's minimal valid file
    broken = {
        "H1": good.replace(",", ";"),
        "H2": good.replace("Student,ID", "Name,ID"),
        "H3": good.replace(",Section,", ",Group,"),
        "H5": good.replace("Autograd HW1 (12345)", "Final Score"),
        "H6": good.replace("Section,Autograd HW1 (12345)\r\n", "Section,A,A\r\n").replace(",10\r\n", ",10,10\r\n")
               .replace(",7.5\r\n", ",7.5,7.5\r\n"),
        "R1": good.replace(",10\r\n", ",ten\r\n"),
        "R3": good.replace(",4711,s123,jdoe,", ",,,,"),
        "R4": good.replace(",7.5\r\n", ',"7,5"\r\n'),
        "R5": good.replace('"Doe, Jane"', "=HYPERLINK(1)"),
    }
    blank = good.replace(",7.5\r\n", ",\r\n")  # a blank cell: Canvas removes the grade
    assert any(p.startswith("R4") and "removes" in p for p in canvas.check_gradebook_csv(blank))
    fullwidth = good.replace(",4711,", ",４７１１,")  # Canvas: "４７１１".to_i == 0
    assert any(p.startswith("R3") and "ASCII" in p for p in canvas.check_gradebook_csv(fullwidth))
    for rule, text in broken.items():
        problems = canvas.check_gradebook_csv(text)
        assert any(p.startswith(rule) for p in problems), (rule, problems)
