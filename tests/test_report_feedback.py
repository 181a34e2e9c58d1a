"""`grader feedback`: what a student reads, and that it never carries a hidden input back to them.

The leaky submission of tests/report_class.py sends its hidden arguments through every channel a
student might read: it prints them (the score file's `output`), raises an exception that quotes
them, returns an object whose type name spells them, and exits with a status made from them.
"""

from __future__ import annotations

import html
import json
import re

import pytest

from grader.report import feedback
from grader.report.scores import load
from grader.safetext import clean_text
from grader.student_view import fixed_texts, hidden_message, student_view
from report_class import IMPORT_ERROR, M1, graded_class, hand_class, load_folder  # noqa: F401  (fixture)


@pytest.fixture(scope="module")
def reports(graded_class):
    return load_folder(graded_class)


def page_text(page: str) -> str:
    """What a reader sees: the page without its markup, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def hidden_failures(report: dict) -> list[dict]:
    return [t for e in report["exercises"] for t in e["tests"] if t["visibility"] == "hidden" and t["status"] != "passed"]


def test_the_leaky_submission_really_leaks_into_its_score_file(reports):
    """The instructor's score file holds what the submission sent: otherwise the test below proves nothing."""
    leaky = reports["leaky"]
    assert "LEAKPRINT" in leaky["output"]
    messages = [t["message"] for t in hidden_failures(leaky)]
    assert any("LEAKRAISE" in m for m in messages)
    assert any("LEAKTYPE_" in m for m in messages)
    assert any(re.search(r"exited with status \d+", m) for m in messages)


@pytest.mark.parametrize("fmt", ["html", "md"])
def test_no_hidden_input_reaches_the_feedback_page(reports, fmt):
    leaky = reports["leaky"]
    page = feedback.page(leaky, fmt)
    text = page_text(page) if fmt == "html" else page
    assert "LEAKPRINT" not in text and leaky["output"].strip().splitlines()[0] not in text
    public_messages = [t["message"] for e in leaky["exercises"] for t in e["tests"]
                       if t["visibility"] == "visible" and t["status"] != "passed"]
    # every trace of the submission's own text comes from a public test, whose inputs are public, or from a
    # counterexample, whose call ran on the fresh input its snippet shows, in a worker that held no hidden input
    shown = [str(c.get(k, "")) for e in leaky["exercises"] if (c := e.get("counterexample")) for k in ("got", "reason")]
    for marker in ("LEAKRAISE", "LEAKTYPE_", "exited with status"):
        assert text.count(marker) == sum(m.count(marker) for m in public_messages + shown), marker
    for e in leaky["exercises"]:
        if e.get("counterexample"):
            c = e["counterexample"]
            numbers = lambda t: {round(float(n), 4) for n in re.findall(r"-?\d+\.\d*", t)}  # noqa: E731
            assert numbers(c["got"]) <= numbers(c["snippet"]) | {0.0, 1.0}, (c["got"], c["snippet"])
    fixed = fixed_texts()
    for t in hidden_failures(leaky):
        if t["message"] not in fixed and len(t["message"]) > 20:
            assert t["message"] not in text, t["name"]
    # what the hidden tests do show: the exception's built-in type, the test's hint
    assert "hvp raised ValueError" in text
    assert "What it checks" in text


def test_public_tests_show_their_whole_message(reports):
    view = student_view(reports["wrong-hvp_sum_instead_of_v"])
    hvp = next(e for e in view["exercises"] if e["name"] == "hvp")
    assert hvp["score"] < hvp["max_score"] and hvp["not_passed"]
    leaky = student_view(reports["leaky"])
    public = [t for e in leaky["exercises"] for t in e["not_passed"] if not t["hidden"]]
    assert any("LEAKRAISE" in t["message"] for t in public)


def test_known_mistakes_and_fixed_messages_are_shown_for_hidden_tests(reports):
    """A hidden failure that matched a known mistake shows the mistake's text (a literal of the cases),
    not the numbers around it."""
    view = student_view(reports["wrong-hvp_sum_instead_of_v"])
    hidden = [t for e in view["exercises"] for t in e["not_passed"] if t["hidden"]]
    assert any(t["mistake"] and "this is H @ ones" in t["mistake"]["en"] for t in hidden)
    assert not any("this is H @ ones" in t["message"] for t in hidden)  # shown once, as the likely mistake
    fixed = fixed_texts()
    assert "the result shares storage with t / 结果与 t 共享存储" in fixed
    test = {"visibility": "hidden", "status": "failed", "message": "the result shares storage with t / 结果与 t 共享存储"}
    assert hidden_message(test, {"make_leaf"}, fixed) == test["message"]
    built = {"visibility": "hidden", "status": "failed",
             "message": "H @ v has wrong values / H @ v 的数值不对\nthis is H @ ones, the derivative of g.sum(), whatever v is: "
                        "differentiate g with grad_outputs=v / 这是 H @ ones，即 g.sum() 的导数，与 v 无关：请以 grad_outputs=v 对 g 求导"}
    assert hidden_message(built, {"hvp"}, fixed) == built["message"]  # a label and a catalogue text, line by line
    forged = {**built, "message": built["message"] + "\nx = [0.123] / 0.123"}
    assert hidden_message(forged, {"hvp"}, fixed) == ""  # one line that is not the grader's own text hides it all


@pytest.mark.parametrize("message", [
    "hvp raised ValueError: [0.123, -1.5]",
    "hvp raised Leak_0_123: x",                                       # a class the submission named
    "the worker process ended while hvp (it exited with status 37: os._exit or a fatal error)",
    "hvp did not return within 7.3 s",                                 # a time the submission can steer
    "H @ v is a Leak_0_123 object (not a plain torch.Tensor), not a torch.Tensor / H @ v 应为 torch.Tensor",
    "the keys must be exactly 'z', 'a', 'w', 'b' (got ['0.123']) / 键必须恰好是 z、a、w、b",
    "hvp raised ValueError: x\nHint: 0.123 / 0.123",                 # a forged hint
])
def test_hidden_messages_that_quote_the_submission_are_not_shown(message):
    test = {"visibility": "hidden", "status": "failed", "message": message}
    shown = hidden_message(test, {"hvp"}, fixed_texts())
    assert "0.123" not in shown and "37" not in shown and "7.3" not in shown and "Leak" not in shown
    assert shown in ("", "hvp raised ValueError")


def test_mistake_and_hint_in_both_languages_and_parameter_cases_grouped():
    s2 = hand_class()[1]
    for t in s2["exercises"][0]["tests"]:
        t["hint"] = "What a checks.\n检查 a。"
    view = student_view(s2)
    a = view["exercises"][0]
    assert [t["name"] for t in a["not_passed"]] == ["a_hid1", "a_hid2"]
    t = a["not_passed"][0]
    assert t["mistake"] == M1 and (t["hint_en"], t["hint_zh"]) == ("What a checks.", "检查 a。")
    assert t["message"] == ""                 # "m1" quotes nothing fixed: the mistake says it all
    for i, test in enumerate(s2["exercises"][0]["tests"][1:]):
        test["name"] = f"a_hid[case{i}]"
    grouped = student_view(s2)["exercises"][0]["not_passed"]
    assert [(g["name"], g["cases"], g["score"], g["max_score"]) for g in grouped] == [("a_hid", ["case0", "case1"], 0, 3)]


def test_html_escapes_what_a_submission_chose(tmp_path):
    report = hand_class()[2]
    report["submission"] = "<script>alert(1)</script>"
    report["exercises"][0]["tests"][0]["message"] = "<img src=x onerror=alert(1)>"
    page = feedback.page(report, "html")
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "Content-Security-Policy" in page and "script-src" not in page   # no script may run at all


def test_import_errors_and_gradebook_adjustments(tmp_path):
    s4 = hand_class()[3]
    s4.update(raw_score=0, submitted_at="2026-11-20T23:30:00+08:00",
              adjustments=[{"kind": "override", "points": 5, "reason": "regraded by hand"}], score=5)
    view = student_view(s4)
    assert view["problems"] == [IMPORT_ERROR]
    hidden = [t for e in view["exercises"] for t in e["not_passed"] if t["hidden"]]
    assert all(t["message"] == IMPORT_ERROR for t in hidden)     # listed on the page anyway
    md = feedback.page(s4, "md")
    assert "regraded by hand" in md and "2026-11-20T23:30:00+08:00" in md and "before adjustments" in md


def test_write_pages_names_them_like_the_score_files(graded_class, tmp_path):
    scores = load([graded_class])
    written = feedback.write_pages(scores, tmp_path / "fb")
    assert sorted(p.name for p in written) == sorted(p.stem + ".html" for p in graded_class.glob("*.json"))
    reference = (tmp_path / "fb" / "reference.html").read_text(encoding="utf-8")
    assert "Every test passed" in reference and "seed: 0" in reference


def test_gradescope_and_otter_outputs_carry_no_hidden_input(reports):
    """The same rule for what Gradescope shows (results.json) and what otter writes for its questions:
    a hidden test's message reaches the student only where it is the grader's own text."""
    from grader.exports.gradescope import gradescope_results

    leaky = reports["leaky"]
    results = gradescope_results(leaky, 1.0)
    hidden_outputs = "\n".join(t["output"] for t in results["tests"] if t["visibility"] == "after_published")
    assert any(m in t["message"] for t in hidden_failures(leaky) for m in ("LEAKRAISE", "LEAKTYPE_"))  # it did leak
    # a counterexample's text is the student's code on the fresh input its snippet shows (a worker that
    # held no hidden input): the only place the submission's own text may appear
    shown = [clean_text(str(c.get(k, "")), 10_000) for e in leaky["exercises"] if (c := e.get("counterexample"))
             for k in ("got", "reason")]
    for marker in ("LEAKPRINT", "LEAKRAISE", "LEAKTYPE_", "exited with status"):
        assert hidden_outputs.count(marker) == sum(t.count(marker) for t in shown), marker
    assert "LEAKPRINT" not in json.dumps(results)  # the captured output is the instructor's only
    from grader.exports.otter import question_result

    otter_text = "\n".join(r.message for e in leaky["exercises"] for r in question_result(e, leaky).test_case_results)
    assert "hvp" in otter_text
    for marker in ("LEAKPRINT", "LEAKRAISE", "LEAKTYPE_", "exited with status"):
        assert otter_text.count(marker) == sum(t["message"].count(marker) for e in leaky["exercises"]
                                               for t in e["tests"] if t["visibility"] == "visible"
                                               and t["status"] != "passed") + sum(t.count(marker) for t in shown), marker
    # the wrong-hvp submission's hidden failures still name the mistake
    named = gradescope_results(reports["wrong-hvp_sum_instead_of_v"], 1.0)
    assert any("this is H @ ones" in t["output"] for t in named["tests"] if t["visibility"] == "after_published")
