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


def outcomes(report: dict) -> dict:
    """Every test's status, points, message and mistake, and each exercise's counterexample."""
    tests = {(e["name"], t["name"]): (t["status"], t["score"], t.get("message", ""), str(t.get("mistake")))
             for e in report["exercises"] for t in e["tests"]}
    found = {e["name"]: str(e.get("counterexample")) for e in report["exercises"]}
    return {"tests": tests, "counterexamples": found, "score": report["score"]}


SAMPLE_MISTAKES = ["hvp_sum_instead_of_v", "partial_grads_none_for_unused", "jacobian_rows_constant_f_raises",
                   "add_into_rebind", "dynamic_doubling_steps_off_by_one", "microbatches_float32_accumulator"]


def test_plain_tests_run_without_pytests_phases_and_grade_exactly_as_with_them(tmp_path, monkeypatch):
    """The course's tests take only the plugin's fixtures: they run directly (`pytest_runtest_protocol_direct`),
    and every outcome, message, mistake and counterexample is the one pytest's setup, call and teardown give."""
    from grader.host import session as session_module
    from test_pipeline import WRONG, wrong_submission

    mistakes = [m for m in SAMPLE_MISTAKES if (WRONG / f"{m}.py").is_file()]
    assert len(mistakes) >= 4
    submissions = [SOLUTIONS, STUBS, *(wrong_submission(tmp_path, m) for m in mistakes)]
    graded = {}
    for direct in (True, False):
        if not direct:
            monkeypatch.setattr(session_module, "plain", lambda item: False)
        engine = Engine(Options(seed=0))
        try:
            graded[direct] = [outcomes(engine.grade(s)) for s in submissions]
            assert engine.session.plugin.direct is direct
        finally:
            engine.close()
    assert graded[True] == graded[False]
    assert graded[True][0]["score"] > 0 and graded[True][1]["score"] == 0
    assert all(g["score"] < graded[True][0]["score"] for g in graded[True][2:])


def test_a_course_whose_test_takes_a_fixture_of_its_own_gets_pytests_phases(tmp_path):
    """A test that asks for pytest's `tmp_path` is not plain: every test of the course runs pytest's own
    protocol, the fixture is given, and the reference still gets full marks."""
    import course_copy

    course_file = course_copy.copy_course(tmp_path / "course")
    cases = course_file.parent / "public" / "test_grad.py"
    source = cases.read_text(encoding="utf-8")
    assert "def test_hvp_small(student):" in source
    cases.write_text(source.replace("def test_hvp_small(student):",
                                    "def test_hvp_small(student, tmp_path):\n"
                                    "    (tmp_path / 'given').write_text('yes')\n"
                                    "    assert (tmp_path / 'given').read_text() == 'yes'\n", 1), encoding="utf-8")
    engine = Engine(Options(seed=0, course=str(course_file)))
    try:
        report = engine.grade(course_file.parent.parent / "solutions")
        assert engine.session.plugin.direct is False
    finally:
        engine.close()
    assert report["score"] == report["max_score"] > 0
    hvp_small = [t for e in report["exercises"] for t in e["tests"] if t["name"].startswith("test_hvp_small")]
    assert hvp_small and all(t["status"] == "passed" for t in hvp_small)
