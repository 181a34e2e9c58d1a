"""One pytest session per engine grades submission after submission (grader.host.session)."""

from __future__ import annotations

import pytest

from grader.host.plugin import GradingPlugin
from grader.host.runner import Engine, Options

from conftest import SOLUTIONS, STUBS


def all_tests(report: dict) -> list[dict]:
    return [t for e in report["exercises"] for t in e["tests"]]


def test_one_session_grades_each_submission_afresh(engine):
    first = engine.grade(SOLUTIONS)
    session = engine.session
    stubs = engine.grade(STUBS)
    again = engine.grade(SOLUTIONS)
    assert engine.session is session and session.ended is None  # collected once, still running
    assert first["score"] == again["score"] == first["max_score"] and stubs["score"] == 0
    assert [t["status"] for t in all_tests(first)] == [t["status"] for t in all_tests(again)]


def test_a_session_that_stops_mid_submission_is_said_and_the_next_one_is_fresh(monkeypatch):
    setups = []
    original = GradingPlugin.pytest_runtest_protocol

    @pytest.hookimpl(hookwrapper=True)
    def interrupted_on_the_third_test(self, item, nextitem):
        setups.append(item.nodeid)
        if len(setups) == 3:
            raise KeyboardInterrupt("stopped inside pytest")
        yield from original(self, item, nextitem)

    monkeypatch.setattr(GradingPlugin, "pytest_runtest_protocol", interrupted_on_the_third_test)
    engine = Engine(Options(seed=0))
    try:
        broken = engine.grade(SOLUTIONS)
        ended = engine.session.ended
        assert ended is not None and "KeyboardInterrupt" in ended
        not_run = [t for t in all_tests(broken) if t["status"] == "error"]
        assert len(not_run) == len(all_tests(broken)) - 2
        assert all("the pytest session ended" in t["message"] and "KeyboardInterrupt" in t["message"]
                   for t in not_run)
        assert broken["score"] < broken["max_score"]
        report = engine.grade(SOLUTIONS)  # a new session, whole
        assert engine.session.ended is None and report["score"] == report["max_score"]
    finally:
        engine.close()
