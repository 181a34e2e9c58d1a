"""The report's figures against values computed by hand on a class of five (tests/report_class.py).

    s1  ex_a 2.5 (a_hid2 failed: mistake ex_a.m2)         ex_b 6                       8.5   1.0 s
    s2  ex_a 1   (a_hid1, a_hid2 failed: mistake ex_a.m1)  ex_b 2 (b_hid: "b wrong")    3     2.0 s
    s3  ex_a 0   (a_pub failed, a_hid1 timeout, a_hid2 crash)  ex_b 6                  6     3.0 s
    s4  ex_a 0, ex_b 0: graph.py does not import (every test an error)                0     4.0 s
    s5  everything passes                                                             10    10.0 s
"""

from __future__ import annotations

import re

import pytest

from grader.report import plots
from grader.report.figures import class_figures, histogram, quantile
from report_class import CRASH, IMPORT_ERROR, hand_class


@pytest.fixture(scope="module")
def f():
    return class_figures(hand_class())


def test_score_distribution(f):
    assert f.submissions == 5 and f.max_score == 10
    assert f.mean == pytest.approx(27.5 / 5)          # (8.5 + 3 + 6 + 0 + 10) / 5
    assert f.median == 6
    assert (f.full_marks, f.zeros) == (1, 1)
    # 20 bins of 0.5 points: 0 -> bin 0, 3 -> 6, 6 -> 12, 8.5 -> 17, 10 (the top edge) -> the last bin
    assert f.histogram.edges[:3] == [0, 0.5, 1.0] and f.histogram.edges[-1] == 10
    assert {i: c for i, c in enumerate(f.histogram.counts) if c} == {0: 1, 6: 1, 12: 1, 17: 1, 19: 1}


def test_exercises_hardest_first(f):
    a, b = f.exercises
    assert (a.name, b.name) == ("ex_a", "ex_b")       # ex_a's mean is 37.5% of its points, ex_b's 66.7%
    assert (a.max_score, a.mean, a.share_full, a.share_zero) == (4, pytest.approx(1.5), 0.2, 0.4)
    assert (b.max_score, b.mean, b.share_full, b.share_zero) == (6, pytest.approx(4.0), 0.6, 0.2)


def test_pass_rates_public_and_hidden_apart(f):
    rates = {(t.visibility, t.name): (t.passed, t.submissions) for t in f.tests}
    assert rates == {("visible", "a_pub"): (3, 5), ("hidden", "a_hid1"): (2, 5), ("hidden", "a_hid2"): (1, 5),
                     ("visible", "b_pub"): (4, 5), ("hidden", "b_hid"): (3, 5)}
    assert [t.name for t in f.tests_of("hidden")] == ["a_hid2", "a_hid1", "b_hid"]   # lowest first
    assert not any(t.nobody_passes for t in f.tests)


def test_a_test_nobody_passes_is_flagged():
    f = class_figures(hand_class()[:4])                # without s5, nobody passes a_hid2
    assert [t.name for t in f.tests if t.nobody_passes] == ["a_hid2"]


def test_mistakes_by_id_and_other_messages_apart(f):
    # failed tests only: a timeout, a crash and an import error are problems, not mistakes
    assert [(m.id, m.en, m.zh, m.submissions, m.failures) for m in f.mistakes] == [
        ("ex_a.m1", "first mistake", "第一个错误", 1, 2), ("ex_a.m2", "second mistake", "第二个错误", 1, 1)]
    assert sorted((m.exercise, m.en, m.zh, m.submissions) for m in f.messages) == [
        ("ex_a", "x has wrong values", "x 的数值不对", 1), ("ex_b", "b wrong", "b 错", 1)]


def test_messages_group_by_their_text_without_numbers():
    reports = hand_class()
    for r, shape in zip(reports[:2], ("[2, 2]", "[1, 3]")):
        r["exercises"][1]["tests"][1].update(status="failed", score=0,
                                             message=f"b raised RuntimeError: tensor {shape} is at version 1")
    f = class_figures(reports)
    grouped = [m for m in f.messages if m.en.startswith("b raised")]
    assert [(m.en, m.submissions) for m in grouped] == [("b raised RuntimeError: tensor [#, #] is at version #", 2)]


def test_problems(f):
    assert [(p.submission, p.kinds, p.details) for p in f.problems] == [
        ("s3", ["timeout", "crash"], ["a_hid1: a did not return within 10.0 s", f"a_hid2: {CRASH}"]),
        ("s4", ["import error"], [IMPORT_ERROR]),
    ]
    assert [r.problems for r in f.rows] == [[], [], ["timeout", "crash"], ["import error"], []]


def test_grading_time_and_sandbox(f):
    assert f.duration_stats == {"median": 3.0, "p90": pytest.approx(7.6), "max": 10.0, "total": 20.0}
    assert quantile([1, 2, 3, 4, 10], 0.9) == pytest.approx(4 + 0.6 * 6)
    assert f.sandboxes == {("cpu", "root-namespaces"): 5}
    assert sum(f.duration_histogram.counts) == 5 and f.duration_histogram.edges[-1] == 10


def test_rows_and_recorded_settings(f):
    s2 = next(r for r in f.rows if r.submission == "s2")
    assert (s2.score, s2.max_score, s2.percent, s2.exercises) == (3, 10, 30, {"ex_a": 1, "ex_b": 2})
    assert f.recorded["seed"] == {"0": 5} and f.recorded["tests_sha256"] == {"not recorded": 5}
    assert not f.has_adjustments


def test_gradebook_adjustments_are_shown():
    reports = hand_class()
    reports[0].update(raw_score=8.5, score=6.5, submitted_at="2026-11-20T23:30:00+08:00",
                      adjustments=[{"kind": "late", "points": -2, "reason": "2 days late"}])
    f = class_figures(reports)
    assert f.has_adjustments
    row = f.rows[0]
    assert (row.score, row.raw_score, row.adjustments[0]["kind"], row.submitted_at) == \
        (6.5, 8.5, "late", "2026-11-20T23:30:00+08:00")


def test_histogram_edges_and_clamping():
    h = histogram([0, 0.49, 0.5, 9.99, 10, 11, -1], 0, 10)
    assert h.counts[0] == 3 and h.counts[1] == 1 and h.counts[19] == 3   # -1 and 11 are clamped


def test_every_chart_draws_one_bar_per_figure(f):
    charts = plots.all_charts(f)
    assert set(charts) == {"scores", "exercises", "durations", "tests-visible", "tests-hidden"}
    expected = {"scores": 20, "exercises": 3 * 2, "durations": 20, "tests-visible": 2, "tests-hidden": 3}
    for name, svg in charts.items():
        assert svg.startswith("<svg ") and f'data-chart="{name}"' in svg
        assert svg.count(f'id="bar-{name}-') == expected[name], name
        assert "<?xml" not in svg and "<metadata" not in svg
        assert not re.search(r"(href|src)=\"(?!#)|url\((?!#)", svg)      # nothing outside the page
