"""A FINAL folder of `grader gradebook` goes through every export as SCORES does, with the grades.

The Canvas and Moodle files are checked against the importer rules their own tests restate
(canvas.check_gradebook_csv, moodle.check_import_csv), and the LTI passback runs against the same
loopback platform as tests/test_lms_lti.py (lti1p3platform plus the checks it skips), whose
`violations` list must stay empty. The exporters are not told anything about FINAL.
"""

from __future__ import annotations

import csv
import io
import json
import os
import textwrap

import pytest

from grader.lms import canvas, moodle
from lms_factory import MAX_SCORE, NAMES, THREE_WRONG, WRONG, run_grader, write_roster, write_scores

# ada: full marks, on time; bob: three exercises wrong (80 of 95), 1 day 10 h late (2 started days: 20% off);
# chen: WRONG wrong, overridden to 5 after a regrade; dara: nothing right, on time; eve: no submission. A past
# term: an LMS refuses a hand-in time in the future (Canvas answers 400 to such a submittedAt).
RAW = {"ada": [], "bob": list(THREE_WRONG), "chen": [WRONG], "dara": list(NAMES)}
GRADES = {"ada": MAX_SCORE, "bob": round(0.8 * (MAX_SCORE - 15), 2), "chen": MAX_SCORE, "dara": 0}
CELLS = {name: f"{grade:g}" for name, grade in GRADES.items()}
TITLE = "Autograd HW1"


@pytest.fixture
def final(tmp_path, capsys):
    scores = write_scores(tmp_path / "scores", RAW)
    (tmp_path / "times.csv").write_text("submission,submitted_at\nada,2025-12-01T20:00+08:00\n"
                                        "bob,2025-12-03T10:00+08:00\nchen,2025-12-01T23:59+08:00\n"
                                        "dara,2025-11-29T08:00+08:00\n")
    (tmp_path / "overrides.csv").write_text(f"submission,exercise,score,reason\nchen,{WRONG},5,regrade request 12\n")
    (tmp_path / "policy.yaml").write_text(textwrap.dedent("""\
        due: 2025-12-01T23:59:00+08:00
        grace_minutes: 15
        late: {percent_per_day: 10, max_days: 3}
        submitted_at: times.csv
        overrides: overrides.csv
    """))
    out = tmp_path / "final"
    code, _, err = run_grader(capsys, "gradebook", scores, "--policy", tmp_path / "policy.yaml", "--out", out)
    assert code == 0, err
    assert {n: json.loads((out / f"{n}.json").read_text())["score"] for n in RAW} == GRADES
    return tmp_path, out, write_roster(tmp_path / "roster.csv")


def rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline=""), strict=True))


def test_canvas_import_of_the_grades(final, capsys):
    tmp_path, out, roster = final
    target = tmp_path / "canvas.csv"
    code, _, err = run_grader(capsys, "export", "canvas", out, "--roster", roster, "--out", target,
                              "--title", TITLE, "--assignment-id", "12345", "--per-exercise")
    assert code == 0, err
    text = target.read_text(encoding="utf-8")
    assert canvas.check_gradebook_csv(text) == []
    table = rows(text)
    total = table[0].index(f"{TITLE} (12345)")
    wrong = table[0].index(f"{TITLE}: {WRONG}")
    assert table[1][total] == f"{MAX_SCORE:g}"  # Points Possible
    by_student = {r[0]: r for r in table[2:]}
    expected = {"Lovelace, Ada": CELLS["ada"], "Bob Stone": CELLS["bob"], 'Chen "CJ" Jun': CELLS["chen"],
                "O'Neil, Dara": CELLS["dara"]}
    assert {name: by_student[name][total] for name in expected} == expected
    assert by_student['Chen "CJ" Jun'][wrong] == "5"  # the overridden exercise, in its own column


def test_moodle_import_of_the_grades(final, capsys):
    tmp_path, out, roster = final
    target = tmp_path / "moodle.csv"
    code, _, err = run_grader(capsys, "export", "moodle", out, "--roster", roster, "--out", target, "--item", TITLE)
    assert code == 0, err
    text = target.read_text(encoding="utf-8")
    assert moodle.check_import_csv(text) == []
    grades = {r[0]: (r[1], r[2]) for r in rows(text)[1:]}
    assert {email: grade for email, (grade, _) in grades.items()} == {
        f"{name}@example.edu": cell for name, cell in CELLS.items()}
    assert f"{WRONG} 5/5" in grades["chen@example.edu"][1]


def test_prairielearn_results_of_the_grades(final, capsys):
    tmp_path, out, _ = final
    code, _, err = run_grader(capsys, "export", "prairielearn", out, "--out", tmp_path / "pl")
    assert code == 0, err
    got = {n: json.loads((tmp_path / "pl" / n / "results.json").read_text())["score"] for n in RAW}
    assert got == {n: round(g / MAX_SCORE, 6) for n, g in GRADES.items()}


# ----------------------------------------------------------------------------- LTI, the loopback platform

if not os.environ.get("CI"):
    pytest.importorskip("pylti1p3", reason="install the lms-test extra: pip install -e '.[lms-test]'")
    pytest.importorskip("lti1p3platform", reason="install the lms-test extra: pip install -e '.[lms-test]'")


@pytest.fixture
def platform():
    from grader.lms.lti import public_jwk
    from lms_platform import LoopbackPlatform, private_pem, rsa_key

    tool_key = rsa_key()
    with LoopbackPlatform({"keys": [public_jwk(private_pem(tool_key), "k1")]}, key_id="k1",
                          platform_key=rsa_key()) as running:
        yield running, private_pem(tool_key)
    assert running.violations == [], running.violations


def test_lti_passback_of_the_grades(final, platform, capsys, monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    tmp_path, out, roster = final
    running, pem = platform
    key = tmp_path / "tool-private.pem"
    key.write_text(pem)
    key.chmod(0o600)
    config = tmp_path / "platform.json"
    config.write_text(json.dumps(running.config()))
    code, _, err = run_grader(capsys, "publish", "lti", out, "--roster", roster, "--platform-config", config,
                              "--private-key", key, "--backoff", "0.01")
    assert code == 0, err
    accepted = running.accepted()
    users = {"ada": "lti-ada-6f1c", "bob": "lti-bob-77aa", "chen": "lti-chen-1b2c", "dara": "lti-dara-9e8d"}
    for submission, user in users.items():
        (score,) = accepted[user]
        assert score["scoreGiven"] == GRADES[submission] and score["scoreMaximum"] == MAX_SCORE
        assert score["gradingProgress"] == "FullyGraded"
    assert f"{WRONG} 5/5" in accepted["lti-chen-1b2c"][0]["comment"]



def test_a_student_the_gradebook_left_out_is_not_called_without_a_submission(capsys, tmp_path):
    """The gradebook graded bob but had no hand-in time for him: the exports of FINAL say so, give
    him no 0 even with --missing-as-zero, and exit 1 (written, some left out)."""
    scores = write_scores(tmp_path / "scores", {"ada": [], "bob": [WRONG]})
    (tmp_path / "times.csv").write_text("submission,submitted_at\nada,2026-01-01T10:00:00+00:00\n", encoding="utf-8")
    (tmp_path / "policy.yaml").write_text("due: 2026-01-02T00:00:00+00:00\nlate: none\nsubmitted_at: times.csv\n")
    final = tmp_path / "final"
    code, _, err = run_grader(capsys, "gradebook", scores, "--policy", tmp_path / "policy.yaml", "--out", final)
    assert code == 1 and "bob: no hand-in time" in err
    roster = write_roster(tmp_path / "roster.csv")
    code, _, err = run_grader(capsys, "export", "canvas", final, "--roster", roster, "--title", "HW1",
                              "--missing-as-zero", "--out", tmp_path / "c.csv", "--report", tmp_path / "r.json")
    assert code == 1, err
    assert "left out by `grader gradebook`: no hand-in time" in err and "(student at roster line 3 (Bob Stone" in err
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert "bob" not in [r.get("submission") for r in report["students_without_submission"]]
    assert [p["submission"] for p in report["invalid_score_files"]] == ["bob"]
    assert "Bob Stone" not in (tmp_path / "c.csv").read_text(encoding="utf-8")
