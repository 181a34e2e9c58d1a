"""`grader diff OLD NEW`: which submissions a regrade changed, on which tests, and why."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import pytest

from conftest import ROOT
from grader.host.results import score_file_name
from grader.report import diff
from report_class import graded_class, hand_class, load_folder, regraded, write_class  # noqa: F401  (fixture)


def run(*args):
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def fixed_test_regrade():
    """The instructor fixed b_hid's test (new tests_sha256): s2 now passes it; s5 left, s6 joined."""
    old = [regraded(r, tests_sha256="a" * 64) for r in hand_class()]
    new = [regraded(r, tests_sha256="b" * 64) for r in hand_class()[:4]]
    s2 = new[1]
    b_hid = s2["exercises"][1]["tests"][1]
    b_hid.update(status="passed", score=4, message="")
    s2["exercises"][1]["score"] = 6
    s2["score"] = 7
    new.append(regraded(hand_class()[4], submission="s6", tests_sha256="b" * 64))
    return old, new


def test_what_changed_by_how_much_and_why():
    old, new = fixed_test_regrade()
    c = diff.compare(old, new)
    assert [(x.submission, x.kind) for x in c.changes] == [("s2", "changed"), ("s6", "added"), ("s5", "removed")]
    s2 = c.changes[0]
    assert s2.delta == 4
    assert s2.exercises == [("ex_b", 2, 6)]
    assert s2.tests == [("ex_b", "b_hid", "failed", "passed")]
    assert s2.reasons == ["test cases changed (tests_sha256)"]
    assert (c.unchanged, c.both) == (3, 4)
    assert c.old_mean == pytest.approx(27.5 / 5) and c.new_mean == pytest.approx((8.5 + 7 + 6 + 0 + 10) / 5)


def test_markdown_for_the_class():
    old, new = fixed_test_regrade()
    md = diff.markdown(diff.compare(old, new), "before", "after")
    assert "4 submissions in both: 1 changed (1 up, 0 down, 0 with the same total), 3 unchanged" in md
    assert "- test cases changed (tests_sha256): 1 submission" in md
    assert "| s2 | 3 | 7 | +4.00 | ex_b 2 → 6 | ex_b/b_hid: failed → passed | test cases changed (tests_sha256) |" in md
    assert "## Only in the new grading\n\n- s6 (10)" in md and "## Only in the old grading\n\n- s5 (10)" in md


def test_csv_for_a_spreadsheet():
    old, new = fixed_test_regrade()
    rows = list(csv.DictReader(io.StringIO(diff.csv_text(diff.compare(old, new)))))
    assert [(r["submission"], r["kind"], r["old_score"], r["new_score"], r["change"]) for r in rows] == [
        ("s2", "changed", "3", "7", "+4.00"), ("s6", "added", "", "10", ""), ("s5", "removed", "10", "", "")]
    assert rows[0]["tests"] == "ex_b/b_hid: failed → passed"


def test_a_status_change_without_a_score_change_is_listed():
    old = hand_class()
    new = hand_class()
    new[2]["exercises"][0]["tests"][1].update(status="error", message="crash")   # timeout -> error, still 0
    c = diff.compare(old, new)
    assert [(x.submission, x.delta, x.tests) for x in c.changes] == [("s3", 0, [("ex_a", "a_hid1", "timeout", "error")])]
    assert c.changes[0].reasons[0].startswith("nothing recorded differs")


def test_every_recorded_setting_is_a_reason():
    old = hand_class()[1]
    new = regraded(old, seed=7, device="cuda", grader_version="0.2.0", source_sha256="f" * 64, score=3.5)
    assert diff.reasons(old, new) == ["seed 0 → 7", "device cpu → cuda", "grader version 0.1.0 → 0.2.0",
                                      "the submission's files changed (source_sha256, not recorded before)"]


@pytest.mark.parametrize("fmt", ["md", "csv"])
def test_cli_exits_0_when_scores_changed(tmp_path, fmt):
    old, new = fixed_test_regrade()
    result = run("diff", str(write_class(old, tmp_path / "old")), str(write_class(new, tmp_path / "new")),
                 "--format", fmt)
    assert result.returncode == 0, result.stderr
    assert "s2" in result.stdout and ("+4.00" in result.stdout)


def test_a_real_regrade(graded_class, tmp_path):
    """Two real gradings: seed 0, then seed 1 after one student handed in a corrected hvp. The
    corrected one is listed with both reasons; the reference, unchanged at 100, is not."""
    from grader.host.runner import Engine, Options

    root = graded_class.parent
    new = tmp_path / "new"
    new.mkdir()
    other = Engine(Options(seed=1))
    try:
        for name, folder in (("reference", root / "reference"), ("wrong-hvp_sum_instead_of_v", root / "reference")):
            report = other.grade(folder, name=name)
            (new / score_file_name(name)).write_text(json.dumps(report), encoding="utf-8")
    finally:
        other.close()
    result = run("diff", str(graded_class), str(new))
    assert result.returncode == 0, result.stderr
    old = load_folder(graded_class)
    c = diff.compare(list(old.values()), list(load_folder(new).values()))
    changed = [x for x in c.changes if x.kind == "changed"]
    assert [x.submission for x in changed] == ["wrong-hvp_sum_instead_of_v"]
    fixed = changed[0]
    assert fixed.delta == pytest.approx(100 - old["wrong-hvp_sum_instead_of_v"]["score"]) and fixed.delta > 0
    assert [name for name, _, _ in fixed.exercises] == ["hvp"]
    assert all(t[0] == "hvp" and t[3] == "passed" for t in fixed.tests)
    assert fixed.reasons == ["seed 0 → 1", "the submission's files changed (source_sha256)"]
    assert {x.submission for x in c.changes if x.kind == "removed"} == set(old) - {"reference", "wrong-hvp_sum_instead_of_v"}
    assert "wrong-hvp_sum_instead_of_v" in result.stdout and "1 changed (1 up" in result.stdout
