"""Score files and instructors' files each have one reader: every consumer sees the same verdict.

Score files are read by `grader.score_files` for `--resume`, the LMS exports, the report and the
gradebook; rosters, policy files and policy tables by `grader.instructor_files`. These tests give
every consumer the same odd files and check that they agree, and that no other module reads either.
"""

import json
import re
from pathlib import Path

import pytest

from grader import score_files
from grader.lms import LmsError
from grader.lms.roster import read_roster
from grader.lms.scores import load_score_dir
from grader.policy import PolicyError
from grader.policy.gradebook import _load_scores
from grader.policy.tables import read_table
from grader.report.scores import load as report_load

from lms_factory import WRONG, make_score, write_scores

GRADER = Path(__file__).resolve().parent.parent / "grader"


def odd_class(directory: Path) -> Path:
    """Good files, and files each consumer used to judge its own way."""
    write_scores(directory, {"ada": [], "bob": [WRONG]})
    inconsistent = make_score("cy")
    inconsistent["score"] -= 5  # the exercises add up to more than the total: the LMS would show another score
    huge = make_score("dee")
    huge["exercises"][0]["tests"][0]["duration_s"] = 10 ** 400  # valid JSON, passes the schema, has no float
    huge_total = make_score("eli")
    huge_total["score"] = 10 ** 400
    bad_time = {**make_score("fay"), "raw_score": 95.0, "adjustments": [],
                "submitted_at": "0001-01-01T00:30+01:00"}  # 31 December of year 0 in UTC: not in the calendar
    for data in (inconsistent, huge, huge_total, bad_time):
        (directory / f"{data['submission']}.json").write_text(json.dumps(data), encoding="utf-8")
    return directory


def test_every_consumer_reads_the_same_files_the_same_way(tmp_path):
    folder = odd_class(tmp_path / "scores")
    lms = load_score_dir(folder)
    report = report_load([folder])
    gradebook_files, gradebook_left_out = _load_scores(folder)
    resumable = {p.stem for p in folder.glob("*.json") if score_files.read_valid(p) is not None}
    usable = {"ada", "bob"}
    assert {s.submission for s in lms.scores} == usable
    assert {r["submission"] for r in report.reports} == usable
    assert set(gradebook_files) == usable
    assert resumable == usable
    reasons = {p.submission: p.reason for p in lms.problems}
    assert reasons == {u.submission: u.reason for u in report.unusable}
    assert set(gradebook_left_out) == set(reasons) == {"cy", "dee", "eli", "fay"}
    assert "the exercise scores add up to" in reasons["cy"]
    assert "a number too large for any export" in reasons["dee"] and "too large" in reasons["eli"]
    assert "inside the calendar" in reasons["fay"]


def test_only_the_one_reader_parses_score_files_or_loads_their_schema():
    readers = sorted(str(p.relative_to(GRADER)) for p in GRADER.rglob("*.py")
                     if re.search(r"score\.schema\.json\"|SCHEMA_FILE\b.*read_text|Draft202012Validator|READABLE_SCHEMA_VERSIONS = \(",
                                  p.read_text(encoding="utf-8")))
    assert readers == ["score_files.py"]


def test_only_the_one_reader_parses_instructors_csv_files():
    guessers = sorted(str(p.relative_to(GRADER)) for p in GRADER.rglob("*.py")
                      if re.search(r"key=first_line\.count|csv\.Sniffer|def normalise_header|delimiter=(?!separator)",
                                   p.read_text(encoding="utf-8")))
    assert guessers == ["instructor_files.py"]


@pytest.mark.parametrize("text, message", [
    (b"", "is empty; it needs a header row"),
    (b"submission;name\nada;Ada;extra\n", "line 2 has 3 fields but the header has 2"),
    (b"submission,name\nad\xe9,x\n", "is not UTF-8 text"),
    (b'submission,name\n"ada,Ada\n', "not a readable CSV file"),
])
def test_the_roster_and_a_policy_table_report_a_broken_file_alike(tmp_path, text, message):
    path = tmp_path / "file.csv"
    path.write_bytes(text)
    with pytest.raises(LmsError) as roster_error:
        read_roster(path)
    with pytest.raises(PolicyError) as table_error:
        read_table(path, "the roster file", ("submission",), ("name",))
    roster_text = str(roster_error.value)
    assert message in roster_text
    assert roster_text.split(";")[0] == str(table_error.value).split(";")[0]


def test_the_same_delimiter_guess_for_roster_and_tables(tmp_path):
    path = tmp_path / "semi.csv"
    path.write_text("Submission;Submitted-At\nada;2026-12-01T23:00:00+08:00\n", encoding="utf-8")
    assert read_roster(path).rows[0].get("submitted_at") == "2026-12-01T23:00:00+08:00"
    assert read_table(path, "the hand-in times file", ("submission", "submitted_at"))[0].get("submission") == "ada"
