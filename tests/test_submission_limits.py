"""`--max-submissions N [--window HOURS]` in `grader export gradescope` and `grader export otter`.

Gradescope's `submission_metadata.json` is fabricated here as its documentation lays it out
(gradescope/autograder_samples docs/submission_metadata.md): `created_at`, and
`previous_submissions` with `submission_time`, `score` and `results`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from datetime import datetime, timedelta

import pytest

from grader.cli import main
from grader.exports.submit import write_submission
from grader.policy.limits import NOT_GRADED, Limit, decide

from conftest import SOLUTIONS
from test_gradescope import make_root, run_autograder, valid

NOW = datetime.fromisoformat("2026-12-01T20:00:00.365935+08:00")


def at(hours_before: float) -> str:
    return (NOW - timedelta(hours=hours_before)).isoformat()


def graded(hours_before: float, score: float, output: str = "autograd-lab: 17 of 19 public tests passed.") -> dict:
    tests = [{"name": "hvp: test_hvp_small", "score": 2, "max_score": 2, "status": "passed", "visibility": "visible"}]
    return {"submission_time": at(hours_before), "score": score, "autograder_error": False,
            "results": {"score": score, "output": output, "tests": tests}}


def turned_away(hours_before: float, score: float) -> dict:
    return graded(hours_before, score, output=NOT_GRADED + "\nYou have used ...")


def metadata(*previous: dict) -> dict:
    return {"id": 123456, "created_at": NOW.isoformat(), "submission_method": "upload",
            "assignment": {"due_date": "2026-12-08T23:59:00.000000+08:00", "id": 25828, "course_id": 1234,
                           "late_due_date": None, "title": "Autograd HW1", "total_points": "100.0",
                           "group_size": None, "group_submission": False,
                           "release_date": "2026-11-20T00:00:00.000000+08:00"},
            "users": [{"email": "ada@example.edu", "id": 1234, "name": "Ada Lovelace"}],
            "previous_submissions": list(previous)}


# ----------------------------------------------------------------------------- the rule

def test_under_the_limit_a_submission_is_graded_and_told_its_number():
    verdict = decide(metadata(graded(30, 50), graded(20, 60)), Limit(3, 24))
    assert verdict.graded and verdict.counted == 2  # the one of 30 h ago is outside the window
    assert "graded submission 2 of 3" in verdict.note and "第 2 次评分" in verdict.note


def test_past_the_limit_the_last_graded_score_is_kept_and_the_next_counting_time_told():
    verdict = decide(metadata(graded(20, 60), graded(10, 85), graded(1, 70)), Limit(3, 24))
    assert not verdict.graded and verdict.counted == 3
    assert verdict.kept["score"] == 70 and verdict.kept["submission_time"] == at(1)
    assert verdict.next_counts_at == NOW + timedelta(hours=4)  # when the one of 20 h ago leaves the window
    lines = verdict.note.splitlines()
    assert lines[0] == NOT_GRADED
    assert lines[1].startswith("You have had 3 graded submissions in the last 24 hours, the most allowed, so this "
                               "one was not graded. Your score stays 70, from your submission of 2026-12-01 19:00")
    assert "counts again from 2026-12-02 00:01 (UTC+08:00)" in lines[1]  # 00:00:00.37, rounded up
    assert "24 小时内最多评分 3 次" in lines[2] and "2026-12-02 00:01 (UTC+08:00) 起的提交将再次评分" in lines[2]


def test_turned_away_and_failed_submissions_do_not_count():
    failed = {**graded(3, 0), "autograder_error": True}
    verdict = decide(metadata(graded(20, 60), turned_away(10, 60), failed, graded(2, 80)), Limit(3, 24))
    assert verdict.graded and verdict.counted == 3


def test_only_our_first_line_marks_a_submission_as_turned_away():
    """A student's file names can reach the output (submission errors), never its first line."""
    forged = graded(2, 80, output="autograd-lab: 0 of 19 public tests passed.\n! " + NOT_GRADED)
    assert not decide(metadata(graded(3, 60), forged), Limit(2, 24)).graded


def test_without_a_window_the_limit_is_for_the_whole_assignment():
    verdict = decide(metadata(graded(24 * 30, 40), graded(24 * 20, 90), turned_away(24, 90)), Limit(2))
    assert not verdict.graded and verdict.next_counts_at is None and verdict.kept["score"] == 90
    assert "No further submission is graded." in verdict.note and "之后的提交都不会评分" in verdict.note


def test_the_window_boundary_and_later_submissions_in_the_list():
    assert decide(metadata(graded(24, 60)), Limit(1, 24)).graded  # exactly 24 h ago: outside
    assert not decide(metadata(graded(23.99, 60)), Limit(1, 24)).graded
    later = {**graded(0, 99), "submission_time": (NOW + timedelta(hours=1)).isoformat()}
    assert decide(metadata(later), Limit(1, 24)).graded  # a regrade of an older one: later ones do not count


@pytest.mark.parametrize("broken", [None, {}, {"created_at": "yesterday"}, {"created_at": NOW.isoformat(),
                                                                            "previous_submissions": [{"score": 1}]}])
def test_without_usable_metadata_the_submission_is_graded(broken):
    verdict = decide(broken, Limit(1, 24))
    assert verdict.graded and "limit was not applied" in verdict.note


def test_a_previous_score_written_as_text_is_kept_and_no_score_at_all_grades():
    verdict = decide(metadata({**graded(2, 0), "score": "81.5"}), Limit(1, 24))
    assert not verdict.graded and verdict.kept["score"] == 81.5
    assert decide(metadata({**graded(2, 0), "score": None}), Limit(1, 24)).graded


# ----------------------------------------------------------------------------- the exports

@pytest.mark.parametrize("kind", ["gradescope", "otter"])
@pytest.mark.parametrize("options, message", [
    (["--window", "24"], "--window needs --max-submissions N"),
    (["--max-submissions", "0"], "--max-submissions must be at least 1"),
    (["--max-submissions", "3", "--window", "-1"], "--window must be a positive number of hours"),
])
def test_bad_limit_options_are_usage_errors(tmp_path, capsys, kind, options, message):
    assert main(["export", kind, "--out", str(tmp_path / "a.zip"), *options]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "a.zip").exists()


def test_the_otter_plugin_gets_the_limit_in_its_configuration():
    from grader.exports.otter import PLUGIN, otter_config

    assert otter_config(7, "cpu", Limit(3, 24))["plugins"] == [
        {PLUGIN: {"seed": 7, "device": "cpu", "max_submissions": 3, "window_hours": 24}}]
    assert otter_config(7, "cpu")["plugins"] == [{PLUGIN: {"seed": 7, "device": "cpu"}}]


@pytest.fixture(scope="module")
def limited_zip(tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "gradescope.zip"
    assert main(["export", "gradescope", "--out", str(out), "--max-submissions", "3", "--window", "24"]) == 0
    with zipfile.ZipFile(out) as zf:
        assert json.loads(zf.read("autograd_lab.json")) == {"seed": 0, "device": "cpu", "max_submissions": 3,
                                                            "window_hours": 24}
    return out


@pytest.fixture
def reference(tmp_path):
    return write_submission({p.name: p.read_bytes() for p in SOLUTIONS.glob("*.py")}, tmp_path / "ref.zip")


def test_gradescope_past_the_limit_keeps_the_last_graded_results_without_grading(tmp_path, limited_zip, reference):
    root = make_root(tmp_path, limited_zip, reference)
    (root / "submission_metadata.json").write_text(json.dumps(metadata(graded(20, 60), graded(10, 85), graded(1, 70))))
    results = valid(run_autograder(root))
    assert results["score"] == 70  # the reference would get 100: it was not graded
    assert results["tests"] == graded(1, 70)["results"]["tests"]
    assert results["output"].splitlines()[0] == NOT_GRADED
    assert "counts again from 2026-12-02 00:01 (UTC+08:00)" in results["output"]
    assert "autograd-lab: 17 of 19 public tests passed." in results["output"]  # what the kept one said
    assert results["extra_data"]["autograd_lab"]["submission_limit"] == {"graded": False, "counted": 3}


def test_gradescope_under_the_limit_grades_and_says_which_submission_it_was(tmp_path, limited_zip, reference):
    root = make_root(tmp_path, limited_zip, reference)
    (root / "submission_metadata.json").write_text(json.dumps(metadata(graded(20, 60), turned_away(10, 60),
                                                                       graded(1, 70))))
    results = valid(run_autograder(root))
    assert results["score"] == 100
    assert re.match(r"autograd-lab: (\d+) of \1 public tests passed", results["output"])
    assert "this is graded submission 3 of 3" in results["output"]


# ----------------------------------------------------------------------------- otter

def otter_previous(hours_before: float, scores: dict[str, float]) -> dict:
    """A previous submission as otter's results.json on Gradescope lists it: one test per question."""
    tests = [{"name": name, "score": s, "max_score": 5.0, "visibility": "after_published", "output": ""}
             for name, s in scores.items()]
    return {"submission_time": at(hours_before), "score": sum(scores.values()), "autograder_error": False,
            "results": {"tests": tests, "output": "autograd-lab: 19 of 19 public tests passed."}}


def test_the_otter_plugin_past_the_limit_keeps_each_questions_score(tmp_path):
    pytest.importorskip("otter")
    from otter.run.run_autograder.autograder_config import AutograderConfig
    from otter.test_files import GradingResults

    from grader import catalog
    from grader.exports.otter import AutogradLabPlugin

    names = [e.name for e in catalog.load().exercises]
    kept = {name: (5.0 if i % 3 else 2.0) for i, name in enumerate(names)}
    meta = metadata(otter_previous(5, kept), otter_previous(30, dict.fromkeys(names, 0.0)))
    results = GradingResults.without_results(RuntimeError("the kernel ran placeholders only"))
    plugin = AutogradLabPlugin(str(tmp_path / "submission" / "autograd_lab.py"), meta,
                               {"seed": 0, "device": "cpu", "max_submissions": 1, "window_hours": 24})
    plugin.after_grading(results)
    assert {n: r.score for n, r in results.results.items()} == kept
    assert not results.has_catastrophic_failure() and results.possible == 100
    out = results.to_gradescope_dict(AutograderConfig({"show_hidden": True}))
    assert sum(t["score"] for t in out["tests"] if "max_score" in t) == sum(kept.values())
    assert out["output"].splitlines()[0] == NOT_GRADED
    assert "counts again from 2026-12-02 15:01 (UTC+08:00)" in out["output"]


def test_the_otter_plugin_spreads_a_kept_total_it_cannot_split(tmp_path):
    pytest.importorskip("otter")
    from otter.test_files import GradingResults

    from grader import catalog
    from grader.exports.otter import AutogradLabPlugin

    previous = {**graded(2, 12.5), "results": None}
    results = GradingResults.without_results(RuntimeError("placeholders"))
    AutogradLabPlugin(str(tmp_path / "autograd_lab.py"), metadata(previous), {"max_submissions": 1}).after_grading(results)
    assert results.total == 12.5
    first, second, third = (results.results[e.name].score for e in catalog.load().exercises[:3])
    assert (first, second, third) == (5, 5, 2.5)
    assert "split over the exercises is not known" in results.output


@pytest.mark.slow
def test_otter_run_autograder_past_the_limit_end_to_end(tmp_path, reference):
    """Otter's own run_autograder on a folder laid out as Gradescope's /autograder, with a fabricated
    submission_metadata.json: the reference is not graded and keeps the last graded score."""
    pytest.importorskip("otter")
    zip_path = tmp_path / "otter.zip"
    assert main(["export", "otter", "--out", str(zip_path), "--max-submissions", "2", "--window", "12"]) == 0
    root = tmp_path / "autograder"
    for sub in ("source", "submission", "results"):
        (root / sub).mkdir(parents=True)
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(root / "source")
    shutil.copy(reference, root / "submission" / "submission.zip")
    with zipfile.ZipFile(reference) as zf:
        zf.extractall(root / "submission")
    from grader import catalog

    names = [e.name for e in catalog.load().exercises]
    kept = dict.fromkeys(names, 5.0) | {"hvp": 0.0}
    (root / "submission_metadata.json").write_text(json.dumps(metadata(otter_previous(11, dict.fromkeys(names, 1.0)),
                                                                       otter_previous(2, kept))))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", "import sys; from otter.run.run_autograder import main; "
                           "main(sys.argv[1], otter_run=True, logo=False)", str(root)],
                          cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    questions = {t["name"]: t["score"] for t in results["tests"] if "max_score" in t}
    assert questions == kept and sum(questions.values()) == 90
    assert results["output"].splitlines()[0] == NOT_GRADED
    assert "counts again from 2026-12-01 21:01 (UTC+08:00)" in results["output"]
