"""What every student reads of a test: the status text of a hidden test (on Gradescope and the
feedback page), one diagnosis per mistake, no line said twice, no `0 / 0` for a check without points.

Reports are made by hand from the course file (no exercise named here), so these tests run in a
fraction of a second."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grader import catalog
from grader.exports.gradescope import case_output
from grader.display import withheld_message
from grader.report import feedback
from grader.student_view import STATUS_TEXT, fixed_texts, shown_message, student_view

SCHEMA = Path(catalog.__file__).resolve().parent / "schema" / "score.schema.json"
DID_NOT_PASS = STATUS_TEXT["failed"][0]


def schema_statuses() -> list[str]:
    return json.loads(SCHEMA.read_text(encoding="utf-8"))["$defs"]["test"]["properties"]["status"]["enum"]


def an_exercise_with_two_hidden_tests() -> tuple[catalog.Exercise, str, str]:
    """An exercise of the course, its general test, and one of its other hidden tests."""
    for e in catalog.load().exercises:
        others = [t.name for t in e.tests if t.folder == "hidden" and t.name not in e.general and t.points > 0]
        if e.general and others:
            return e, e.general[0], others[0]
    raise AssertionError("the course has no exercise with a general test and another hidden test")


def entry(name, status="passed", message="", visibility="hidden", points=1.0, mistake=None):
    t = {"name": name, "status": status, "score": points if status == "passed" else 0, "max_score": points,
         "visibility": visibility, "message": message}
    if mistake:
        t["mistake"] = mistake
    return t


def report_of(exercise: catalog.Exercise, tests: list[dict]) -> dict:
    score, top = sum(t["score"] for t in tests), sum(t["max_score"] for t in tests)
    return {"schema_version": "1.1", "submission": "s", "score": score, "max_score": top, "device": "cpu",
            "submission_errors": [], "exercises": [{"name": exercise.name, "module": exercise.module,
                                                     "score": score, "max_score": top, "tests": tests}]}


@pytest.mark.parametrize("status", ["passed", "failed", "error", "timeout"])
def test_every_status_of_the_schema_has_its_own_text(status):
    assert status in schema_statuses()
    assert set(schema_statuses()) <= set(STATUS_TEXT)
    shown = shown_message(entry("t", status), {"x"}, fixed_texts())
    assert shown == " / ".join(STATUS_TEXT[status])
    assert (DID_NOT_PASS in shown) == (status == "failed")


def test_a_passed_hidden_test_on_gradescope_does_not_read_as_failed():
    e, general, _ = an_exercise_with_two_hidden_tests()
    report = report_of(e, [entry(general)])
    output = case_output(report["exercises"][0]["tests"][0], report)
    assert output.startswith("passed") and DID_NOT_PASS not in output and "未通过" not in output


def test_a_hidden_check_that_held_but_was_withheld_says_why():
    e, general, other = an_exercise_with_two_hidden_tests()
    withheld = entry(other, "failed", withheld_message([general]))
    report = report_of(e, [entry(general, "failed"), withheld])
    assert shown_message(withheld, {e.name}, fixed_texts()) == withheld_message([general])
    assert "points withheld" in case_output(withheld, report)
    forged = entry(other, "failed", withheld_message(["LEAK_0.123"]))   # names no test of the course
    assert "0.123" not in shown_message(forged, {e.name}, fixed_texts())


def test_one_error_gets_the_general_tests_diagnosis_on_every_test_of_the_exercise():
    e, general, other = an_exercise_with_two_hidden_tests()
    raised = f"{e.name} raised RuntimeError: element 0 of tensors does not require grad"
    real = {"id": f"{e.name}.real", "en": "the real mistake", "zh": "真正的错误"}
    guess = {"id": f"{e.name}.guess", "en": "a guess from one test", "zh": "某个测试的猜测"}
    tests = [entry(f"{general}[a]", "error", raised, mistake=real),
             entry(f"{general}[b]", "error", raised, mistake=real),
             entry(f"{other}[c]", "error", raised, mistake=guess)]
    view = student_view(report_of(e, tests))
    assert {t["mistake"]["id"] for t in view["exercises"][0]["not_passed"]} == {real["id"]}
    page = feedback.page(report_of(e, tests), "md")
    assert "a guess from one test" not in page and "the real mistake" in page


@pytest.mark.parametrize("visibility", ["visible", "hidden"])
@pytest.mark.parametrize("fmt", ["md", "html"])
def test_the_likely_mistake_is_not_repeated_in_the_message_under_it(visibility, fmt):
    e, general, _ = an_exercise_with_two_hidden_tests()
    m = next(iter(e.mistakes.values()))
    mistake = m.described(e.name)
    message = f"H @ v has wrong values: {mistake['en']} / {mistake['zh']}"
    page = feedback.page(report_of(e, [entry(general, "failed", message, visibility, mistake=mistake)]), fmt)
    assert page.count(mistake["en"]) == 1 and page.count(mistake["zh"]) == 1


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_a_check_without_points_shows_no_points_not_0_of_0(fmt):
    e, general, _ = an_exercise_with_two_hidden_tests()
    tests = [entry(general), entry("test_docstring_like", "failed", "a docstring example failed", "visible", 0)]
    page = feedback.page(report_of(e, tests), fmt)
    assert "0 / 0" not in page and "no points" in page and "不计分" in page
