"""Inputs of every LMS command: score files, the roster, and how the two are paired."""

from __future__ import annotations

import json

import pytest

from grader.lms import LmsError
from grader.lms.matching import reconcile
from grader.lms.roster import read_roster
from grader.lms.scores import exercise_summary, format_points, load_score_dir, load_score_path
from lms_factory import (EXERCISES, FIRST, MAX_SCORE, MODULE, SECOND, WRONG, class_scores, make_score, write_roster,
                         write_scores)


# ----------------------------------------------------------------------------- score files


def test_factory_files_are_schema_valid_and_all_load(tmp_path):
    scores = load_score_dir(class_scores(tmp_path / "scores"))
    assert scores.problems == []
    assert sorted(s.submission for s in scores.scores) == ["ada", "bob", "chen", "dara", "zed"]
    bob = next(s for s in scores.scores if s.submission == "bob")
    assert bob.score == MAX_SCORE - 15 and bob.max_score == MAX_SCORE
    assert [e.name for e in bob.exercises] == [name for name, _ in EXERCISES]


def test_summary_csv_and_dot_files_are_not_score_files(tmp_path):
    directory = write_scores(tmp_path, {"ada": []})
    (directory / ".lti-ledger.json").write_text("{}")
    scores = load_score_dir(directory)
    assert [s.submission for s in scores.scores] == ["ada"] and scores.problems == []


@pytest.mark.parametrize("content, reason", [
    ("{not json", "is not valid JSON"),
    (b"\xff\xfe{}", "is not UTF-8"),
    (json.dumps({"schema_version": "1.0", "submission": "x"}), "does not match the score file schema"),
    (json.dumps({**make_score("x"), "score": -1}), "does not match the score file schema"),
    (json.dumps({**make_score("x"), "score": 7.0}), f"the exercise scores add up to {MAX_SCORE:g}"),
])
def test_bad_score_files_are_reported_with_a_reason_not_skipped(tmp_path, content, reason):
    directory = write_scores(tmp_path, {"ada": []})
    bad = directory / "bad.json"
    bad.write_bytes(content if isinstance(content, bytes) else content.encode())
    scores = load_score_dir(directory)
    assert [s.submission for s in scores.scores] == ["ada"]
    assert len(scores.problems) == 1 and scores.problems[0].path == bad
    assert reason in scores.problems[0].reason


def test_unreadable_file_is_reported(tmp_path):
    directory = write_scores(tmp_path, {"ada": []})
    (directory / "bob.json").mkdir()  # unreadable as a file, even for root
    scores = load_score_dir(directory)
    assert [p.path.name for p in scores.problems] == ["bob.json"]
    assert "cannot be read" in scores.problems[0].reason


def test_a_submission_scored_twice_is_not_exported_at_all(tmp_path):
    directory = write_scores(tmp_path, {"ada": [], "bob": []})
    (directory / "ada-regraded.json").write_text(json.dumps(make_score("ada", [WRONG])))
    scores = load_score_dir(directory)
    assert [s.submission for s in scores.scores] == ["bob"]
    assert sorted(p.path.name for p in scores.problems) == ["ada-regraded.json", "ada.json"]
    assert all("scored in several files" in p.reason for p in scores.problems)


def test_missing_or_empty_directory_is_an_error(tmp_path):
    with pytest.raises(LmsError, match="not a directory"):
        load_score_dir(tmp_path / "nope")
    with pytest.raises(LmsError, match="no score files"):
        load_score_dir(tmp_path)
    with pytest.raises(LmsError, match="no such score file"):
        load_score_path(tmp_path / "nope.json")


def test_without_jsonschema_the_builtin_check_still_rejects_bad_files(tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_jsonschema(name, *args, **kwargs):
        if name == "jsonschema":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_jsonschema)
    directory = write_scores(tmp_path, {"ada": []})
    broken = make_score("bob")
    broken["exercises"][0]["tests"][0]["status"] = "maybe"
    (directory / "bob.json").write_text(json.dumps(broken))
    odd = {**make_score("cy"), "raw_score": MAX_SCORE, "adjustments": [{"kind": "late"}]}
    (directory / "cy.json").write_text(json.dumps(odd))
    scores = load_score_dir(directory)
    assert [s.submission for s in scores.scores] == ["ada"]
    assert "tests[0]" in scores.problems[0].reason
    assert "adjustments[0]: needs kind (text), points (a number) and reason (text)" in scores.problems[1].reason


def test_points_are_written_with_a_dot_and_two_decimals_at_most():
    assert [format_points(v) for v in (95.0, 7.5, 1 / 3, 2.005, 0.0, -0.0, 1e-9, 12345.678)] == \
        ["95", "7.5", "0.33", "2", "0", "0", "0", "12345.68"]


def test_exercise_summary_is_short_and_complete(tmp_path):
    path = tmp_path / "bob.json"
    problem = f"{MODULE[WRONG]}: ImportError"
    path.write_text(json.dumps(make_score("bob", [WRONG], submission_errors=[problem])))
    scores = load_score_path(path)
    text = exercise_summary(scores.scores[0])
    assert text.startswith(f"{FIRST} 5/5; {SECOND} 5/5;")
    assert f"; {WRONG} 0/5;" in text and text.count(";") == len(EXERCISES) - 1
    assert text.endswith(f"Problems with the submission: {problem}")


# ----------------------------------------------------------------------------- roster


def test_roster_reads_names_with_commas_quotes_and_a_bom(tmp_path):
    path = write_roster(tmp_path / "roster.csv")
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    roster = read_roster(path)
    assert [r.get("name") for r in roster.rows][:3] == ["Lovelace, Ada", "Bob Stone", 'Chen "CJ" Jun']
    assert roster.rows[0].line == 2 and roster.rows[0].submission == "ada"


def test_roster_headers_are_forgiving_and_semicolons_work(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("Submission;Name;LMS User ID;E-mail\nada;Ada;4711;ada@x.org\n\n;Eve;4715;eve@x.org\n")
    roster = read_roster(path)
    assert roster.columns == ("submission", "name", "lms_user_id", "e_mail")
    assert [r.line for r in roster.rows] == [2, 4] and roster.rows[1].submission == ""


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("name,email\nAda,a@x\n", "must have a 'submission' column"),
    ("submission,name,name\nada,A,B\n", "appear more than once"),
    ("submission,name\nada,Ada\nada.zip,Ada again\n", "repeated: 'ada': line 2 (Ada; submission ada), line 3"),
    ("submission,name\nada,Ada,extra\n", "line 2 has 3 fields"),
])
def test_bad_rosters_are_refused_naming_the_lines(tmp_path, text, message):
    path = tmp_path / "r.csv"
    path.write_text(text)
    with pytest.raises(LmsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_roster(path)


def test_roster_must_be_utf8_and_exist(tmp_path):
    with pytest.raises(LmsError, match="not found"):
        read_roster(tmp_path / "missing.csv")
    (tmp_path / "latin1.csv").write_bytes("submission,name\nada,Ad\xe9\n".encode("latin-1"))
    with pytest.raises(LmsError, match="UTF-8"):
        read_roster(tmp_path / "latin1.csv")


def test_required_values_and_unique_ids_name_the_rows(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("submission,name,email\nada,Ada,ada@x.org\nbob,Bob,\ncy,Cy,ADA@x.org\n")
    roster = read_roster(path)
    with pytest.raises(LmsError, match=r"column 'email', which is empty in line 3 \(Bob; submission bob\)"):
        roster.require_values("email", "the test")
    with pytest.raises(LmsError, match=r"shared by 'ada@x.org': line 2 .*line 4"):
        roster.require_unique("email", "the test")
    with pytest.raises(LmsError, match="needs the column"):
        roster.require_columns(["lti_user_id"], "the test")


# ----------------------------------------------------------------------------- pairing


def test_reconcile_lists_everything_that_is_not_paired(tmp_path):
    directory = class_scores(tmp_path / "scores")
    (directory / "broken.json").write_text("{")
    (directory / "bob.json").rename(directory / "bob.zip.json")  # the file name does not matter
    roster = read_roster(write_roster(tmp_path / "roster.csv", students=_students_with_broken()))
    rec = reconcile(roster, load_score_dir(directory))
    assert [(r.submission, s.submission) for r, s in rec.matched] == \
        [("ada", "ada"), ("bob", "bob"), ("chen", "chen"), ("dara", "dara")]
    assert [s.submission for s in rec.unmatched_submissions] == ["zed"]
    assert [r.submission for r in rec.without_submission] == ["eve"]
    assert [(p.path.name, r.submission if r else None) for p, r in rec.invalid] == [("broken.json", "broken.zip")]
    assert not rec.complete


def _students_with_broken():
    from lms_factory import STUDENTS

    return STUDENTS + [("broken.zip", "Bea Broken", "4716", "s1006", "bbroken", "bea@example.edu", "A", "lti-bea")]


def test_nothing_to_export_is_an_error_not_an_empty_gradebook(capsys, tmp_path):
    from lms_factory import run_grader

    scores = write_scores(tmp_path / "scores", {"stranger": []})
    roster = write_roster(tmp_path / "roster.csv")
    code, _, err = run_grader(capsys, "export", "canvas", scores, "--roster", roster, "--out", tmp_path / "c.csv",
                              "--title", "HW1")
    assert code == 2 and "nothing to export" in err and "NOT EXPORTED: stranger.json" in err
    assert not (tmp_path / "c.csv").exists()


def test_an_unwritable_output_is_a_clear_error(capsys, tmp_path):
    from lms_factory import run_grader

    scores = class_scores(tmp_path / "scores")
    roster = write_roster(tmp_path / "roster.csv")
    code, _, err = run_grader(capsys, "export", "moodle", scores, "--roster", roster, "--out",
                              tmp_path / "no" / "such" / "dir" / "m.csv", "--item", "HW1")
    assert code == 2 and "No such file or directory" in err


def test_multiline_submission_errors_stay_on_one_feedback_line(tmp_path):
    path = tmp_path / "bob.json"
    path.write_text(json.dumps(make_score("bob", [WRONG], submission_errors=["Traceback:\n  File grad.py\nSyntaxError"])))
    assert "\n" not in exercise_summary(load_score_path(path).scores[0])


def test_reasons_stay_short_even_for_huge_bad_values(tmp_path):
    directory = write_scores(tmp_path, {"ada": []})
    bad = make_score("bob")
    bad["exercises"][0]["tests"][0]["status"] = "x" * 100_000
    (directory / "bob.json").write_text(json.dumps(bad))
    (problem,) = load_score_dir(directory).problems
    assert len(problem.reason) < 1000 and "is not one of" in problem.reason


# ----------------------------------------------------------------------------- any valid JSON


def odd_files(directory):
    """Score files whoever wrote them: hand-edited, merged, broken in every way JSON allows."""
    good = make_score("ada")
    over = make_score("bob")
    over["exercises"][0]["tests"][0]["score"] = 9.5
    over["exercises"][0]["score"] = 12.5
    over["score"] = MAX_SCORE + 7.5
    surrogate = json.dumps(make_score("chen", [WRONG], submission_errors=["X"])).replace('"X"', '"\\ud800\\udfff \\u0000"')
    inconsistent = {**make_score("dara"), "raw_score": int(MAX_SCORE),
                    "adjustments": [{"kind": "late", "points": -10, "reason": "late"}]}  # score still the maximum
    files = {
        "ada.json": json.dumps(good), "bob.json": json.dumps(over), "chen.json": surrogate,
        "dara.json": json.dumps(inconsistent),
        "nan.json": json.dumps(make_score("nan")).replace(f'"score": {MAX_SCORE}', '"score": NaN', 1),
        "deep.json": "[" * 100_000 + "]" * 100_000, "string.json": '"a string"', "number.json": "42",
        "null.json": "null", "empty.json": "", "huge.json": json.dumps({**make_score("huge"), "duration_s": 1e308}),
        "bad_adjustment.json": json.dumps({**make_score("badadj"), "raw_score": MAX_SCORE, "adjustments": [{"kind": "x"}]}),
        "bad_time.json": json.dumps({**make_score("badtime"), "submitted_at": "yesterday"}),
        "overflow.json": json.dumps(overflowing()),
    }
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8")
    (directory / "\udcff.json").write_text(json.dumps(make_score("\udcff.zip")))  # a name that is not UTF-8
    return directory


def overflowing() -> dict:
    """Two tests of 1e308 points in one exercise of 1e308: their sum overflows to infinity."""
    data = make_score("overflow")
    exercise = data["exercises"][0]
    for test in exercise["tests"]:
        test["score"] = test["max_score"] = 1e308
    exercise["score"] = exercise["max_score"] = 1e308
    data["score"] = data["max_score"] = 1e308
    return data


def test_every_export_survives_any_valid_json_and_goes_on_with_the_rest(capsys, tmp_path):
    from lms_factory import run_grader

    (tmp_path / "scores").mkdir()
    scores = odd_files(tmp_path / "scores")
    roster = write_roster(tmp_path / "roster.csv")
    loaded = load_score_dir(scores)
    assert sorted(s.submission for s in loaded.scores) == ["ada", "bob", "chen", "huge", "\ufffd.zip"]
    reasons = {p.path.name: p.reason for p in loaded.problems}
    assert "NaN is not a JSON number" in reasons["nan.json"] and "nested too deeply" in reasons["deep.json"]
    assert f"raw_score {MAX_SCORE:g} with the adjustments' -10 points gives {MAX_SCORE - 10:g}" in reasons["dara.json"]
    assert "$.adjustments[0]" in reasons["bad_adjustment.json"]
    assert "'yesterday' is not an ISO 8601 time with a time zone" in reasons["bad_time.json"]
    assert "add up to inf" in reasons["overflow.json"]  # two tests of 1e308: the sums overflow
    for name in ("string.json", "number.json", "null.json", "empty.json"):
        assert name in reasons
    for command in (["canvas", "--title", "HW1", "--out", tmp_path / "c.csv"],
                    ["moodle", "--item", "HW1", "--out", tmp_path / "m.csv"]):
        code, _, err = run_grader(capsys, "export", command[0], scores, "--roster", roster, *command[1:],
                                  "--report", tmp_path / "report.json")
        assert code == 1 and "Traceback" not in err and "NOT EXPORTED: deep.json" in err, err
        assert "bob.json: score above its maximum" in err and "NOT EXPORTED: \ufffd.json: submission '\ufffd.zip'" in err
        assert json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["warnings"]
    code, _, err = run_grader(capsys, "export", "prairielearn", scores, "--out", tmp_path / "pl")
    assert code == 1 and sorted(p.name for p in (tmp_path / "pl").iterdir()) == ["_.zip", "ada", "bob", "chen", "huge"]
    for name in ("ada", "bob", "chen", "huge"):
        code, _, err = run_grader(capsys, "export", "github-classroom", scores / f"{name}.json")
        assert code == 0 and "Traceback" not in err
