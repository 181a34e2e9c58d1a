"""`grader export moodle`: Moodle's CSV grade import rules (lms.md §3) checked on the file we write.

Rule ids (M1-M6) are those of grader/lms/moodle.py's docstring, which cites
moodle/moodle grade/import/csv/classes/load_data.php and lib/csvlib.class.php.
"""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from grader.lms import moodle
from lms_factory import (EXERCISES, FIRST, MAX_SCORE, PER_EXERCISE, SECOND, THREE_WRONG, WRONG, class_scores, make_score,
                         run_grader, write_roster)

ITEM = "Autograd HW1"


@pytest.fixture
def setup(tmp_path):
    return tmp_path, class_scores(tmp_path / "scores"), write_roster(tmp_path / "roster.csv")


def export(capsys, setup, *extra):
    tmp_path, scores, roster = setup
    out = tmp_path / "moodle.csv"
    code, _, err = run_grader(capsys, "export", "moodle", scores, "--roster", roster, "--out", out,
                              "--item", ITEM, *extra)
    return code, (out.read_text(encoding="utf-8") if out.exists() else ""), err


def parse(text):
    return list(csv.reader(io.StringIO(text, newline=""), strict=True))


def test_file_passes_moodle_rules_and_maps_by_email(capsys, setup):
    code, text, err = export(capsys, setup)
    assert code == 1  # zed.json has no roster row: file written, exit 1, reported
    assert moodle.check_import_csv(text) == []
    rows = parse(text)
    assert rows[0] == ["email", ITEM, f"{ITEM} feedback"]  # M6: the grade column always comes with its feedback
    assert "map 'email' to 'Email address (useremail)'" in err


def test_m1_m2_header_and_row_shape(capsys, setup):
    _, text, _ = export(capsys, setup)
    rows = parse(text)
    header = [h.strip() for h in rows[0]]
    assert len(header) >= 2 and all(header) and len(set(header)) == len(header)
    assert all(len(r) == len(header) for r in rows)


def test_m3_one_row_per_student_with_a_score_identified_by_a_non_empty_value(capsys, setup):
    _, text, err = export(capsys, setup)
    rows = parse(text)[1:]
    assert [r[0] for r in rows] == ["ada@example.edu", "bob@example.edu", "chen@example.edu", "dara@example.edu"]
    assert all(r[0] not in ("", "0") for r in rows)  # PHP empty() would skip the row in silence
    assert "eve@example.edu" not in text  # no submission: no row, Moodle keeps what it has
    assert "line 6 (Eve Noshow; submission eve)" in err and "NOT EXPORTED: zed.json" in err


def test_m4_grades_are_numbers_with_a_dot_and_feedback_is_the_exercise_summary(capsys, setup):
    _, text, _ = export(capsys, setup)
    rows = {r[0]: r[1:] for r in parse(text)[1:]}
    assert {k: v[0] for k, v in rows.items()} == {"ada@example.edu": f"{MAX_SCORE:g}",
                                                  "bob@example.edu": f"{MAX_SCORE - 15:g}",
                                                  "chen@example.edu": f"{MAX_SCORE - 6:g}", "dara@example.edu": "0"}
    assert all(re.fullmatch(r"\d+(\.\d+)?", v[0]) for v in rows.values())
    feedback = rows["bob@example.edu"][1]
    assert feedback.startswith(f"{FIRST} 5/5; {SECOND} 5/5;")
    assert all(f"{name} 0/5" in feedback for name in THREE_WRONG) and feedback.count(" 0/5") == 3
    assert len(feedback.split("; ")) == len(EXERCISES) and "\n" not in feedback


def test_m5_rescaling_and_the_100_limit(capsys, setup):
    _, text, _ = export(capsys, setup, "--grade-max", "10", "--missing-as-zero")
    rows = {r[0]: r[1:] for r in parse(text)[1:]}
    assert rows["bob@example.edu"][0] == f"{round(10 * (MAX_SCORE - 15) / MAX_SCORE, 2):g}" and rows["ada@example.edu"][0] == "10"
    assert rows["eve@example.edu"] == ["0", "No submission received."]
    tmp_path, scores, _ = setup
    for path in scores.glob("*.json"):  # a class graded out of twice the total (190 for this course)
        (scores / path.name).write_text(json.dumps(doubled(json.loads(path.read_text()))))
    code, _, err = export(capsys, setup)
    assert code == 2 and "Moodle refuses grades above 100" in err and "--grade-max" in err
    code, text, _ = export(capsys, setup, "--unlimited-grades")
    assert code == 1 and parse(text)[1][1] == f"{2 * MAX_SCORE:g}"


def doubled(data: dict) -> dict:
    """The same score file with every score and maximum doubled."""
    for exercise in data["exercises"]:
        for test in exercise["tests"]:
            test["score"] *= 2
            test["max_score"] *= 2
        exercise["score"] *= 2
        exercise["max_score"] *= 2
    data["score"] *= 2
    data["max_score"] *= 2
    return data


def test_a_file_graded_out_of_another_maximum_is_reported_and_the_class_exported(capsys, setup):
    tmp_path, scores, _ = setup
    (scores / "ada.json").write_text(json.dumps(doubled(make_score("ada"))))
    code, text, err = export(capsys, setup)
    assert code == 1 and "ada@example.edu" not in text and "bob@example.edu" in text
    assert "NOT EXPORTED: ada.json (student at roster line 2" in err and "other exercises or maxima" in err
    code, text, err = export(capsys, setup, "--grade-max", "10")  # rescaled: each file by its own maximum
    assert "ada@example.edu,10," in text


@pytest.mark.parametrize("field, header, expected", [
    ("username", "username", "alovelace"), ("idnumber", "idnumber", "s1001"), ("userid", "userid", "4711"),
])
def test_other_user_fields(capsys, setup, field, header, expected):
    _, text, err = export(capsys, setup, "--user-field", field)
    rows = parse(text)
    assert rows[0][0] == header and rows[1][0] == expected
    assert moodle.check_import_csv(text) == []
    assert f"map '{header}' to '{moodle.USER_FIELDS[field].moodle_choice}'" in err


def test_missing_user_values_are_refused_naming_rows(capsys, setup):
    tmp_path, scores, _ = setup
    roster = tmp_path / "r.csv"
    roster.write_text("submission,name,email\nada,Ada,ada@x.org\nbob,Bob,\nchen,Chen,not-an-address\n")
    code, _, err = run_grader(capsys, "export", "moodle", scores, "--roster", roster, "--out",
                              tmp_path / "m.csv", "--item", ITEM)
    assert code == 2 and "empty in line 3 (Bob; submission bob)" in err
    assert not (tmp_path / "m.csv").exists()
    roster.write_text("submission,name,email\nada,Ada,ada@x.org\nbob,Bob,b@x.org\nchen,Chen,not-an-address\n")
    code, _, err = run_grader(capsys, "export", "moodle", scores, "--roster", roster, "--out",
                              tmp_path / "m.csv", "--item", ITEM)
    assert code == 2 and "not an e-mail address at line 4 (Chen; submission chen)" in err
    code, _, err = run_grader(capsys, "export", "moodle", scores, "--roster", roster, "--out",
                              tmp_path / "m.csv", "--item", ITEM, "--user-field", "userid")
    assert code == 2 and "needs the column(s) lms_user_id" in err


def test_the_checker_catches_each_broken_rule():
    good = f"email,HW1,HW1 feedback\nada@x.org,7.5,{WRONG} 5/5\n"
    assert moodle.check_import_csv(good) == []
    broken = {
        "M1": "email,email,HW1 feedback\nada@x.org,7.5,x\n",
        "M2": good + "bob@x.org,5\n",
        "M3": good + "0,5,x\n",
        "M4": good + "bob@x.org,\"7,5\",x\n",
        "M5": good + "bob@x.org,100.5,x\n",
        "M6": "email,HW1\nada@x.org,7.5\n",
    }
    for rule, text in broken.items():
        assert any(p.startswith(rule) for p in moodle.check_import_csv(text)), rule
