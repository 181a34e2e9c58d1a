"""`grader export github-classroom`: runner results v3 as the grading reporter reads them (lms.md §10).

Rules G1-G6 are those of grader/lms/github_classroom.py's docstring. The test decodes the
`$GITHUB_OUTPUT` lines the way the reporter does (src/main.js: env <RUNNER>_RESULTS, base64,
JSON.parse) and recomputes its totals (notify-classroom.js) to compare with the score file.
"""

from __future__ import annotations

import base64
import json
import re

import pytest

from grader.lms import github_classroom as ghc
from grader.lms.scores import load_score_path
from lms_factory import EXERCISES, HIDDEN_SECRET, MAX_SCORE, make_score, run_grader, write_scores

DOCS = __import__("pathlib").Path(__file__).resolve().parent.parent / "docs" / "lms.md"


def reporter_parse(lines: list[str], runners_input: str) -> list[dict]:
    """src/main.js parseRunnerResults, with the step outputs turned into the env of the reporter step."""
    outputs = dict(line.split("=", 1) for line in lines)
    env = {f"{rid.upper()}_RESULTS": value for rid, value in outputs.items()}
    return [{"runner": r.strip(), "results": json.loads(base64.b64decode(env[f"{r.strip().upper()}_RESULTS"]))}
            for r in runners_input.split(",")]


def notify_totals(runner_results: list[dict]) -> tuple[float, float]:
    """notify-classroom.js: sum max_score of runners with one, and every test's score."""
    total = maximum = 0.0
    for item in runner_results:
        results = item["results"]
        if not results.get("max_score"):
            continue
        maximum += results["max_score"]
        total += sum(t["score"] for t in results["tests"])
    return total, maximum


@pytest.fixture
def bob(tmp_path):
    return write_scores(tmp_path / "scores", {"bob": ["hvp", "gd_fit", "make_leaf::test_hidden"]})


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
    parsed = reporter_parse(lines, ",".join(runner_ids))
    assert notify_totals(parsed) == (MAX_SCORE - 13, MAX_SCORE)  # "Points 82/95"
    assert "Points 82/95" in err


def test_g1_g3_fields_and_statuses(bob):
    runners = ghc.build_runners(load_score_path(bob).scores[0])
    for runner in runners.values():
        assert ghc.validate_runner(runner) == []
        assert runner["version"] == 3 and runner["max_score"] == 5
    assert runners["hvp"]["status"] == "fail" and runners["make_leaf"]["status"] == "fail"
    assert runners["graph_node_counts"]["status"] == "pass"
    assert [t["status"] for t in runners["make_leaf"]["tests"]] == ["pass", "fail"]
    assert runners["smoothabs"]["tests"][0]["filename"] == "extensions.py"


def test_errors_and_timeouts_are_reported_as_error(tmp_path):
    data = make_score("cy", ["hvp"], status="timeout", submission_errors=["grad.py: hang at import"])
    (tmp_path / "cy.json").write_text(json.dumps(data))
    runners = ghc.build_runners(load_score_path(tmp_path / "cy.json").scores[0])
    assert runners["hvp"]["status"] == "error" and "hang at import" in runners["hvp"]["message"]
    assert "message" not in runners["make_leaf"]


def test_g5_one_runner_per_exercise_keeps_per_exercise_maxima_right(bob):
    runners = ghc.build_runners(load_score_path(bob).scores[0])
    for rid, runner in runners.items():
        tests_total = sum(t["score"] for t in runner["tests"])
        if all(t["status"] == "pass" for t in runner["tests"]) or tests_total == 0:
            assert ghc.console_score(runner) == pytest.approx(tests_total), rid
    # the documented limit: unequal test weights inside one exercise (2 + 3 points)
    assert ghc.console_score(runners["make_leaf"]) == 2.5 and ghc.reporter_totals({"m": runners["make_leaf"]}) == (2, 5)


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


def test_runner_ids_are_valid_output_and_env_names():
    assert ghc.runner_id("SmoothAbs") == "smoothabs"
    assert ghc.runner_id("safe_add_") == "safe_add"
    assert ghc.runner_id("2nd-try") == "ex_2nd_try"
    for name, _ in EXERCISES:
        assert re.fullmatch(r"[a-z][a-z0-9_]*", ghc.runner_id(name))


def test_workflow_in_docs_matches_the_exporter(capsys, bob):
    code, yaml_text, _ = run_grader(capsys, "export", "github-classroom", bob, "--print-workflow")
    runners = re.search(r"runners: (\S+)", yaml_text).group(1).split(",")
    assert runners == [ghc.runner_id(name) for name, _ in EXERCISES]
    for rid in runners:
        assert f'{rid.upper()}_RESULTS: "${{{{ steps.autograd.outputs.{rid} }}}}"' in yaml_text
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
    assert ghc.validate_output_lines(["ok=not base64!"])[0].startswith("G6")
