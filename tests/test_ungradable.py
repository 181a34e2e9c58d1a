"""Ungradable is not zero: a score file the grader could not produce honestly says so (`status`,
schema 1.4), and no export or passback posts its zeros as a grade; each lists it instead. The
resubmission limit does not count it, `--resume` grades it again, the report shows it apart."""

import json

import pytest

from grader import score_files
from grader.exports.gradescope import gradescope_results
from grader.host import results
from grader.host.runner import Options, failure_report, grade_many
from grader.policy import limits

from conftest import STUBS
from lms_factory import EXERCISES, WRONG, make_score, run_grader, write_roster, write_scores

CRASH = "internal grader error:\nTraceback (most recent call last):\nKeyError: 'the grader's own bug'"


def ungradable(name: str) -> dict:
    """What the runner writes when the grader itself fails on a submission (failure_report's shape)."""
    data = make_score(name, [n for n, _ in EXERCISES], status="error", submission_errors=[CRASH])
    return {**data, "schema_version": score_files.SCHEMA_VERSION, "status": score_files.UNGRADABLE}


@pytest.fixture
def scores(tmp_path):
    folder = write_scores(tmp_path / "scores", {"ada": [], "chen": [WRONG]})
    (folder / "bob.json").write_text(json.dumps(ungradable("bob")), encoding="utf-8")
    return folder


def test_the_runner_marks_its_own_failure_ungradable_and_old_files_still_read():
    report = failure_report("bob", Options(), CRASH)
    assert report["status"] == "ungradable" and results.validate(report) == []
    old = make_score("ada")  # schema 1.0, no status: graded
    assert results.validate(old) == [] and not score_files.is_ungradable(old)


@pytest.mark.parametrize("export", [["canvas", "--title", "HW1"], ["moodle", "--item", "HW1"]])
def test_gradebook_exports_skip_and_list_it(capsys, tmp_path, scores, export):
    roster = write_roster(tmp_path / "roster.csv")
    out = tmp_path / "grades.csv"
    code, _, err = run_grader(capsys, "export", export[0], scores, "--roster", roster, *export[1:], "--out", out,
                              "--report", tmp_path / "report.json")
    assert code == 1, err  # written, some files left out (docs/lms.md)
    assert "NOT EXPORTED: bob.json" in err and "ungradable: the grader could not grade this submission" in err
    text = out.read_text(encoding="utf-8")
    assert "Bob Stone" not in text and "bob@example.edu" not in text
    assert "Lovelace, Ada" in text or "ada@example.edu" in text
    listed = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["invalid_score_files"]
    assert [p["submission"] for p in listed] == ["bob"]


def test_prairielearn_gets_gradable_false_and_no_score(capsys, tmp_path, scores):
    code, _, err = run_grader(capsys, "export", "prairielearn", scores, "--out", tmp_path / "pl")
    assert code == 1 and "ungradable" in err
    bob = json.loads((tmp_path / "pl" / "bob" / "results.json").read_text(encoding="utf-8"))
    assert bob["gradable"] is False and "score" not in bob and "could not grade" in bob["message"]
    assert json.loads((tmp_path / "pl" / "ada" / "results.json").read_text(encoding="utf-8"))["gradable"] is True


def test_github_classroom_records_nothing_for_it(capsys, scores, tmp_path):
    output = tmp_path / "github_output"
    code, _, err = run_grader(capsys, "export", "github-classroom", scores / "bob.json", "--github-output", output)
    assert code == 2 and "NOT EXPORTED: bob.json: ungradable" in err and not output.exists()


def test_the_gradebook_leaves_it_out(capsys, tmp_path, scores):
    (tmp_path / "times.csv").write_text("submission,submitted_at\nada,2026-01-01T10:00:00+00:00\n"
                                        "bob,2026-01-01T10:00:00+00:00\nchen,2026-01-01T10:00:00+00:00\n")
    (tmp_path / "policy.yaml").write_text("due: 2026-01-02T00:00:00+00:00\nlate: none\nsubmitted_at: times.csv\n")
    code, _, err = run_grader(capsys, "gradebook", scores, "--policy", tmp_path / "policy.yaml", "--out", tmp_path / "final")
    assert sorted(p.name for p in (tmp_path / "final").glob("[!.]*.json")) == ["ada.json", "chen.json"], err
    assert "bob: bob.json ungradable: the grader could not grade" in err and "no score file" not in err
    summary = (tmp_path / "final" / "summary.csv").read_text(encoding="utf-8")
    assert "bob,left out: bob.json ungradable" in summary and "KeyError" in summary


def test_the_report_shows_it_apart(capsys, tmp_path, scores):
    code, out, err = run_grader(capsys, "report", scores, "--format", "md")
    assert code == 0, err
    assert "2 submissions from" in out  # ada and chen: bob's zeros are in no figure
    assert "1 submissions the grader could not grade" in out and "- bob: ungradable" in out


def test_the_submission_limit_does_not_count_it():
    report = ungradable("bob")
    shown = gradescope_results(report, 1.0)
    assert shown["output"].split("\n")[0] == limits.UNGRADABLE
    metadata = {"created_at": "2026-01-03T00:00:00+00:00", "previous_submissions": [
        {"submission_time": "2026-01-01T00:00:00+00:00", "score": 95, "results": gradescope_results(make_score("bob"), 1.0)},
        {"submission_time": "2026-01-02T00:00:00+00:00", "score": 0, "results": shown}]}
    verdict = limits.decide(metadata, limits.Limit(max_submissions=2, window_hours=None))
    assert verdict.graded and verdict.counted == 2  # the first and this one: the ungradable one is no attempt


def test_resume_grades_an_ungradable_file_again(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    name = STUBS.name
    results.write_report(out, failure_report(name, Options(seed=3), CRASH))
    summary = grade_many([str(STUBS)], out, Options(seed=3), resume=True)
    assert summary.regraded == {name: "ungradable last time"} and summary.skipped == []
    again = json.loads((out / f"{name}.json").read_text(encoding="utf-8"))
    assert not score_files.is_ungradable(again) and score_files.read_valid(out / f"{name}.json") is not None


def test_a_result_in_the_first_lines_earlier_wording_is_still_no_attempt():
    """A term that began before the first line was reworded keeps its ungradable results uncounted."""
    earlier = ("autograd-lab: not graded: the grader failed (not your code); this is no grade and does not count "
               "as a submission / 评分程序出错（不是你的代码的问题）：这不是成绩，也不计入提交次数")
    assert earlier != limits.UNGRADABLE
    old = {"output": earlier + "\n! internal grader error", "score": 0, "tests": []}
    metadata = {"created_at": "2026-01-03T00:00:00+00:00", "previous_submissions": [
        {"submission_time": "2026-01-02T00:00:00+00:00", "score": 0, "results": old}]}
    verdict = limits.decide(metadata, limits.Limit(max_submissions=1, window_hours=None))
    assert verdict.graded and verdict.counted == 1
