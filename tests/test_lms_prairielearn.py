"""`grader export prairielearn`: results.json checked against PrairieLearn's rules (lms.md §9).

Rules P1-P5 are those of grader/lms/prairielearn.py's docstring (docs/externalGrading.md and
makeGradingResult in externalGraderCommon.ts). Besides our validator, the test replays what
the grader host does with the file: wrap it as {succeeded, results}, parse, check the score.
"""

from __future__ import annotations

import json

import pytest

from grader.lms import prairielearn
from grader.lms.scores import load_score_path
from lms_factory import (EXERCISES, FIRST, HIDDEN_SECRET, LAST, MAX_SCORE, NAMES, WRONG, class_scores, make_score, run_grader,
                         write_scores)


def host_accepts(raw: bytes) -> float:
    """What makeGradingResult needs from the job: parseable JSON, a numeric results.score."""
    results = json.loads(raw.decode("utf-8").replace("\0", "\ufffd"))
    job = {"succeeded": True, "results": results}
    assert isinstance(job["succeeded"], bool) and job["results"]
    assert isinstance(job["results"]["score"], (int, float))
    return job["results"]["score"]


def test_one_results_json_per_submission_valid_and_accepted(capsys, tmp_path):
    scores = class_scores(tmp_path / "scores")
    code, _, err = run_grader(capsys, "export", "prairielearn", scores, "--out", tmp_path / "pl")
    assert code == 0, err
    for name in ("ada", "bob", "chen", "dara", "zed"):
        raw = (tmp_path / "pl" / name / "results.json").read_bytes()
        results = json.loads(raw)
        assert prairielearn.validate_results(results, raw) == []
        assert 0.0 <= host_accepts(raw) <= 1.0
        assert len(raw) < 1_000_000 and b"\0" not in raw  # P5


def test_score_is_normalised_and_tests_carry_points(tmp_path):
    score = load_score_path(write_scores(tmp_path, {"bob": [WRONG, f"{LAST}::test_hidden"]}) / "bob.json").scores[0]
    results = prairielearn.build_results(score)
    assert results["gradable"] is True and "format_errors" not in results
    assert results["score"] == pytest.approx((MAX_SCORE - 8) / MAX_SCORE)
    assert len(results["tests"]) == 2 * len(EXERCISES)
    by_name = {t["name"]: t for t in results["tests"]}
    assert by_name[f"{WRONG}: test_public"]["points"] == 0 and by_name[f"{WRONG}: test_public"]["max_points"] == 2
    assert by_name[f"{LAST}: test_public"]["points"] == 2 and by_name[f"{LAST}: test_hidden"]["points"] == 0
    assert sum(t["points"] for t in results["tests"]) == pytest.approx(score.score)
    assert sum(t["max_points"] for t in results["tests"]) == pytest.approx(score.max_score)
    assert f"{WRONG} 0/5" in results["message"]


def test_hidden_messages_stay_hidden_unless_asked(tmp_path):
    score = load_score_path(write_scores(tmp_path, {"bob": [WRONG]}) / "bob.json").scores[0]
    assert HIDDEN_SECRET not in json.dumps(prairielearn.build_results(score))
    assert "hidden test: failed" in json.dumps(prairielearn.build_results(score))
    assert HIDDEN_SECRET in json.dumps(prairielearn.build_results(score, show_hidden=True))


def test_nul_bytes_and_huge_messages_are_made_safe(tmp_path):
    data = make_score("bob", [WRONG], submission_errors=["bad\0byte"])
    data["exercises"][NAMES.index(WRONG)]["tests"][0]["message"] = "x\0" * 3_000_000
    (tmp_path / "bob.json").write_text(json.dumps(data))
    score = load_score_path(tmp_path / "bob.json").scores[0]
    raw = prairielearn.to_json(prairielearn.build_results(score)).encode()
    assert prairielearn.validate_results(json.loads(raw), raw) == []
    assert "\\u0000" not in raw.decode() and len(raw) < 1_000_000


def test_single_file_output_for_the_grading_container(capsys, tmp_path):
    scores = write_scores(tmp_path / "scores", {"ada": []})
    out = tmp_path / "grade" / "results" / "results.json"
    code, _, _ = run_grader(capsys, "export", "prairielearn", scores / "ada.json", "--out", out)
    assert code == 0 and json.loads(out.read_text())["score"] == 1.0
    class_scores(tmp_path / "many")
    code, _, err = run_grader(capsys, "export", "prairielearn", tmp_path / "many", "--out", out)
    assert code == 2 and "names one file but there are 5 score files" in err


def test_invalid_score_file_is_reported_and_exit_1(capsys, tmp_path):
    scores = write_scores(tmp_path / "scores", {"ada": []})
    (scores / "bob.json").write_text("[]")
    code, _, err = run_grader(capsys, "export", "prairielearn", scores, "--out", tmp_path / "pl",
                              "--report", tmp_path / "r.json")
    assert code == 1 and "NOT EXPORTED: bob.json" in err
    assert not (tmp_path / "pl" / "bob").exists()
    assert json.loads((tmp_path / "r.json").read_text())["invalid_score_files"][0]["submission"] == "bob"


def test_submission_names_cannot_escape_the_output_directory(tmp_path):
    assert prairielearn.safe_dir_name("../../etc") == "_.._etc"
    assert prairielearn.safe_dir_name("..") == "submission"
    assert prairielearn.safe_dir_name("ada smith.zip") == "ada_smith.zip"


def test_the_validator_catches_each_broken_rule():
    good = {"gradable": True, "score": 0.5, "message": "", "tests": [{"name": "t", "points": 1, "max_points": 2}]}
    assert prairielearn.validate_results(good) == []
    broken = {
        "P1": {**good, "score": 1.5},
        "P2": {**good, "gradable": "yes"},
        "P3": {**good, "format_errors": {"a": 1}},
        "P4": {**good, "tests": [{"name": "t", "points": "1", "max_points": 2}]},
        "P6": {**good, "tests": [{"name": "t", "points": 107.5, "max_points": 100}]},
    }
    for rule, results in broken.items():
        assert any(p.startswith(rule) for p in prairielearn.validate_results(results)), rule
    assert prairielearn.validate_results(good, b"{\"a\": \"\\u0000\"}")[0].startswith("P5")


def test_a_score_above_its_maximum_is_clamped_with_a_warning(capsys, tmp_path):
    data = make_score("bob")
    data["exercises"][0]["tests"][1]["score"] = 10.5  # 10.5 of 3: hand-edited
    data["exercises"][0]["score"] = 12.5
    data["score"] = MAX_SCORE + 7.5
    (tmp_path / "bob.json").write_text(json.dumps(data))
    code, _, err = run_grader(capsys, "export", "prairielearn", tmp_path / "bob.json", "--out", tmp_path / "r.json")
    results = json.loads((tmp_path / "r.json").read_text())
    assert code == 0 and results["score"] == 1.0
    assert all(t["points"] <= t["max_points"] for t in results["tests"])
    assert f"warning: bob.json: score above its maximum (test {FIRST}::test_hidden 10.5/3" in err
