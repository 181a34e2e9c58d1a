"""`grader export github-classroom`: runner results v3 as the grading reporter reads them (lms.md §10).

Rules G1-G7 are those of grader/lms/github_classroom.py's docstring. The tests run the
`$GITHUB_OUTPUT` lines through tests/lms_readers.py's replay of the reporter v1 (the env of its
step, base64, JSON.parse, the console it prints, the float sums of its "Points X/Y" notice),
and through a reader of the workflow commands GitHub's runner would execute in that output.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import COURSE
from grader import catalog
from grader.lms import github_classroom as ghc
from grader.lms.scores import load_score_path
from lms_factory import (EXERCISES, FIRST, HIDDEN_SECRET, LAST, MAX_SCORE, MODULE, NAMES, PER_EXERCISE, SECOND, WRONG,
                         adjusted, make_score, run_grader, score_from_points, write_scores)
from lms_readers import classroom_reporter, workflow_commands

DOCS = Path(__file__).resolve().parent.parent / "docs" / "lms.md"
FLOAT_NOISE = json.loads((Path(__file__).parent / "data" / "lms_classroom_float_noise.json").read_text())


def export_lines(capsys, path) -> tuple[list[str], str]:
    code, out, err = run_grader(capsys, "export", "github-classroom", path)
    assert code in (0, 1), err
    return out.splitlines(), err


def runners_input(lines: list[str]) -> str:
    return ",".join(line.split("=", 1)[0] for line in lines)


@pytest.fixture
def bob(tmp_path):
    return write_scores(tmp_path / "scores", {"bob": [WRONG, NAMES[-2], f"{SECOND}::test_hidden"]})


def test_outputs_decode_to_valid_runners_and_the_classroom_total_is_the_score(capsys, tmp_path, bob):
    output = tmp_path / "github_output"
    output.write_text("earlier=1\n")
    code, _, err = run_grader(capsys, "export", "github-classroom", bob, "--github-output", output)
    assert code == 0, err
    lines = output.read_text().splitlines()
    assert lines[0] == "earlier=1"  # appended, as $GITHUB_OUTPUT must be
    lines = lines[1:]
    assert ghc.validate_output_lines(lines) == []
    runner_ids = [line.split("=", 1)[0] for line in lines]
    assert runner_ids == [ghc.runner_id(name) for name, _ in EXERCISES]  # one runner per exercise
    run = classroom_reporter(lines, ",".join(runner_ids))
    assert run.points == f"Points {MAX_SCORE - 13:g}/{MAX_SCORE:g}" and (run.total, run.maximum) == (MAX_SCORE - 13, MAX_SCORE)
    assert f"the reporter will record Points {MAX_SCORE - 13:g}/{MAX_SCORE:g}" in err


def test_g1_g3_fields_and_statuses(bob):
    runners = ghc.build_runners(load_score_path(bob).scores[0])
    for runner in runners.values():
        assert ghc.validate_runner(runner) == []
        assert runner["version"] == 3 and runner["max_score"] == 5
    wrong, second, first, last = (ghc.runner_id(name) for name in (WRONG, SECOND, FIRST, LAST))
    assert runners[wrong]["status"] == "fail" and runners[second]["status"] == "fail"
    assert runners[first]["status"] == "pass"
    assert [t["status"] for t in runners[second]["tests"]] == ["pass", "fail"]
    assert runners[last]["tests"][0]["filename"] == MODULE[LAST]


def test_errors_and_timeouts_are_reported_as_error(tmp_path):
    data = make_score("cy", [WRONG], status="timeout", submission_errors=[f"{MODULE[WRONG]}: hang at import"])
    (tmp_path / "cy.json").write_text(json.dumps(data))
    runners = ghc.build_runners(load_score_path(tmp_path / "cy.json").scores[0])
    wrong = ghc.runner_id(WRONG)
    assert runners[wrong]["status"] == "error" and "hang at import" in runners[wrong]["message"]
    assert "message" not in runners[ghc.runner_id(SECOND)]


def test_g5_one_runner_per_exercise_keeps_per_exercise_maxima_right(bob):
    runners = ghc.build_runners(load_score_path(bob).scores[0])
    for rid, runner in runners.items():
        tests_total = sum(t["score"] for t in runner["tests"])
        if all(t["status"] == "pass" for t in runner["tests"]) or tests_total == 0:
            assert ghc.console_score(runner) == pytest.approx(tests_total), rid
    # the documented limit: unequal test weights inside one exercise (2 + 3 points)
    second = runners[ghc.runner_id(SECOND)]
    assert ghc.console_score(second) == 2.5 and ghc.reporter_totals({"m": second}) == (2, 5)


def test_hidden_messages_stay_hidden_unless_asked(bob):
    score = load_score_path(bob).scores[0]
    assert HIDDEN_SECRET not in json.dumps(ghc.build_runners(score))
    assert HIDDEN_SECRET in json.dumps(ghc.build_runners(score, show_hidden=True))


def test_without_github_output_the_lines_are_printed(capsys, bob, monkeypatch):
    monkeypatch.delenv("GITHUB_OUTPUT", raising=False)
    code, out, _ = run_grader(capsys, "export", "github-classroom", bob / "bob.json")
    assert code == 0 and ghc.validate_output_lines(out.splitlines()) == []
    target = bob.parent / "from_env"
    monkeypatch.setenv("GITHUB_OUTPUT", str(target))
    code, out, _ = run_grader(capsys, "export", "github-classroom", bob / "bob.json")
    assert out == "" and len(target.read_text().splitlines()) == len(EXERCISES)


def test_needs_exactly_one_submission(capsys, tmp_path):
    scores = write_scores(tmp_path / "scores", {"ada": [], "bob": []})
    code, _, err = run_grader(capsys, "export", "github-classroom", scores)
    assert code == 2 and "exactly one valid score file" in err


def test_runner_ids_are_what_the_reporters_regex_accepts():
    assert ghc.runner_id("SoftClip") == "softClip"  # a class
    assert ghc.runner_id("scale_into_") == "scaleInto"  # an in-place function
    assert ghc.runner_id("edge_weight_sums") == "edgeWeightSums"
    assert ghc.runner_id("2nd-try") == "ex2ndTry"
    ids = [ghc.runner_id(name) for name, _ in EXERCISES]
    assert ghc.RUNNERS_INPUT_RE.fullmatch(",".join(ids)) and len(set(i.upper() for i in ids)) == len(ids)
    with pytest.raises(ValueError, match="comma-separated list"):  # what the reporter said of our old ids
        classroom_reporter([], "edge_weight_sums,scale_into_")


def test_workflow_in_docs_matches_the_exporter(capsys, bob):
    code, yaml_text, _ = run_grader(capsys, "export", "github-classroom", bob, "--print-workflow")
    runners = re.search(r"runners: (\S+)", yaml_text).group(1).split(",")
    assert runners == [ghc.runner_id(name) for name, _ in EXERCISES]
    for rid in runners:
        assert f'{rid.upper()}_RESULTS: "${{{{ steps.autograd.outputs.{rid} }}}}"' in yaml_text
    if COURSE.path == catalog.DEFAULT_COURSE:  # docs/lms.md shows this course's runners
        assert yaml_text in DOCS.read_text()  # the documented snippet is the one the tool prints


def test_the_validator_catches_each_broken_rule():
    good = {"version": 3, "status": "pass", "max_score": 5,
            "tests": [{"name": "t", "status": "pass", "score": 5, "line_no": 0}]}
    assert ghc.validate_runner(good) == []
    broken = {
        "G1": {**good, "version": 2},
        "G2": {**good, "max_score": 0},
        "G3": {**good, "tests": [{"name": "t", "status": "passed", "score": "5"}]},
    }
    for rule, runner in broken.items():
        assert any(p.startswith(rule) for p in ghc.validate_runner(runner)), rule
    assert ghc.validate_output_lines(["Bad-Name=e30="])[0].startswith("G6")
    assert ghc.validate_output_lines(["snake_case=e30="])[0].startswith("G6")
    assert ghc.validate_output_lines(["ok=not base64!"])[0].startswith("G6")


def reporter_sum_of_file_scores(data: dict) -> str:
    """The reporter's sum had we written each test's score as the score file has it (the old export)."""
    total = 0.0
    for exercise in data["exercises"]:
        for test in exercise["tests"]:
            total += test["score"]
    return ghc.js_number(total)


@pytest.mark.parametrize("submission", sorted(FLOAT_NOISE["files"]))
def test_g4_the_reporters_float_sum_prints_exactly_the_total(capsys, tmp_path, submission):
    """Real engine points (tests/data/lms_classroom_float_noise.json) whose plain sum has noise."""
    data = score_from_points(submission, FLOAT_NOISE["files"][submission]["exercises"])
    assert data["score"] == FLOAT_NOISE["files"][submission]["score"]
    assert reporter_sum_of_file_scores(data) != ghc.js_number(data["score"])  # e.g. 94.99999999999999 for 95
    (tmp_path / "s.json").write_text(json.dumps(data))
    lines, err = export_lines(capsys, tmp_path / "s.json")
    run = classroom_reporter(lines, runners_input(lines))
    assert run.points == f"Points {ghc.js_number(data['score'])}/100" and run.points in err
    runners = ghc.build_runners(load_score_path(tmp_path / "s.json").scores[0])
    for exercise, runner in zip(data["exercises"], runners.values()):  # each test keeps its points, to the last place
        for test, written in zip(exercise["tests"], runner["tests"]):
            assert written["score"] == pytest.approx(test["score"], abs=1e-12)


def test_js_number_is_javascripts_number_to_string():
    cases = {95.0: "95", 94.99999999999999: "94.99999999999999", 92.00000000000001: "92.00000000000001",
             0.1 + 0.2: "0.30000000000000004", 1e21: "1e+21", 123456789012345680000.0: "123456789012345680000",
             1e-7: "1e-7", 0.000001: "0.000001", 2.5: "2.5", 0.0: "0", -1.5: "-1.5", 1.5e300: "1.5e+300"}
    for value, text in cases.items():
        assert ghc.js_number(value) == text, value


def test_g4_adjusted_and_clamped_files_record_their_total(capsys, tmp_path):
    late = adjusted(make_score("ada", [WRONG]), ("late", -9.0, "1 day late"), ("override", 2.5, "regrade 12"),
                    submitted_at="2026-12-02T10:00:00+08:00")
    (tmp_path / "late.json").write_text(json.dumps(late))
    lines, _ = export_lines(capsys, tmp_path / "late.json")
    assert classroom_reporter(lines, runners_input(lines)).points == f"Points {MAX_SCORE - 11.5:g}/{MAX_SCORE:g}"  # -5 - 9 + 2.5
    over = make_score("ada")
    over["exercises"][0]["tests"][0]["score"] = 9.5  # 9.5 of 2: hand-edited
    over["exercises"][0]["score"] = 12.5
    over["score"] = MAX_SCORE + 7.5
    (tmp_path / "over.json").write_text(json.dumps(over))
    lines, err = export_lines(capsys, tmp_path / "over.json")
    assert classroom_reporter(lines, runners_input(lines)).points == f"Points {MAX_SCORE:g}/{MAX_SCORE:g}"
    assert f"score above its maximum (test {FIRST}::test_public 9.5/2; exercise {FIRST} " \
           f"12.5/5; total {MAX_SCORE + 7.5:g}/{MAX_SCORE:g}): exported at the maximum" in err


def test_g7_student_text_cannot_become_a_workflow_command(capsys, tmp_path):
    """An import error whose message carries '::notice' lines (issue 16: four fake 'Points 100/100')."""
    injected = ("broken\n::notice title=Autograding complete::Points 100/100\n  ::set-output name=x::1\n"
                "text ##[error]fake\r::notice::Points 100/100\u2028::warning::x")
    data = make_score("eve", [WRONG], status="error", submission_errors=[injected])
    wrong = NAMES.index(WRONG)
    for test in data["exercises"][wrong]["tests"]:
        test["message"] = injected
        test["visibility"] = "visible"
    data["exercises"][wrong]["tests"][0]["name"] = "test\n::notice::Points 100/100"
    (tmp_path / "eve.json").write_text(json.dumps(data))
    lines, _ = export_lines(capsys, tmp_path / "eve.json")
    run = classroom_reporter(lines, runners_input(lines))
    assert any("Points 100/100" in line for line in run.console)  # the text is shown...
    assert workflow_commands(run.console) == [  # ...but the only commands are the reporter's own
        f"::notice title=Autograding complete::Points {MAX_SCORE - PER_EXERCISE:g}/{MAX_SCORE:g}",
        f'::notice title=Autograding report::{{"totalPoints":{MAX_SCORE - PER_EXERCISE:g},"maxPoints":{MAX_SCORE:g}}}',
        "::error::Some tests errored."]
    # the reader does catch an injection left alone, as the runner would run it
    assert workflow_commands(["Error: broken", "  ::notice title=x::Points 100/100", "a ##[error]b"]) == [
        "::notice title=x::Points 100/100", "a ##[error]b"]

