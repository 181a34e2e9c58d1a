"""What a student reads in the terminal: the wrapping rules of Chinese and English, one verdict per
exercise that agrees with the summary, colour only where it belongs, and the first run on the stubs."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from grader import catalog
from grader.display import CLOSING, OPENING, check_table, display_width, exercise_verdict, use_color, wrap

from conftest import ROOT, STUBS

ZH = "只运行公开测试；评分时还会用其他输入运行隐藏测试。backward 之前要对 z 和 a 调用 retain_grad()，否则它们的 .grad 是 None（见文档字符串）。"


@pytest.mark.parametrize("width", range(8, 41))
def test_no_line_starts_with_a_closing_mark_nor_ends_with_an_opening_one(width):
    lines = wrap(ZH * 2, width)
    assert "".join(lines).replace(" ", "") == (ZH * 2).replace(" ", "")
    for line in lines:
        assert display_width(line) <= width, line
        assert line[0].isascii() or line[0] not in CLOSING, lines  # ".grad" may start a line
        assert line.rstrip()[-1] not in OPENING, lines


def test_chinese_breaks_after_punctuation_before_cutting_a_word():
    assert wrap("参数的数值不对，请在副本上计算", 22) == ["参数的数值不对，", "请在副本上计算"]
    assert wrap("的数值不对", 8) == ["的数值不", "对"]  # no break opportunity in a run longer than a line: cut


def test_english_breaks_at_spaces_and_keeps_chinese_punctuation_with_its_word():
    lines = wrap("call retain_grad()，then backward（on the loss）。", 20)
    assert lines == ["call retain_grad()，", "then backward（on", "the loss）。"]
    assert wrap("a b", 80, "  ") == ["  a b"]
    assert wrap("", 80) == [""]


def test_a_word_longer_than_a_line_is_cut_to_fit():
    lines = wrap("x" * 25, 10, "  ")
    assert [display_width(line) for line in lines] == [10, 10, 10, 3] and "".join(lines).replace(" ", "") == "x" * 25


def test_colour_only_on_a_terminal_and_never_with_no_color(monkeypatch):
    class Tty:
        def isatty(self):
            return True
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert use_color(Tty()) and not use_color(sys.stdout if not sys.stdout.isatty() else object())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_color(Tty())
    report = _report(["passed"], ["failed"])
    assert "\033[" in check_table(report, "x", width=80, color=True)
    assert "\033[" not in check_table(report, "x", width=80, color=False)


def _test(name: str, status: str, mistake: str | None = None) -> dict:
    return {"name": name, "status": status, "visibility": "visible", "message": "" if status == "passed" else "m",
            "mistake": {"id": mistake, "en": "e", "zh": "z"} if mistake else None}


def _report(tests: list[str], examples: list[str], mistake: str | None = None) -> dict:
    entry = {"name": "hvp", "module": "grad.py", "score": 0, "max_score": 1,
             "tests": [_test(f"test_hvp_{i}", s, mistake) for i, s in enumerate(tests)]
             + [_test("test_hvp_docstring", s, mistake) for s in examples]}
    return {"exercises": [entry], "score": 0, "max_score": 1}


def test_one_verdict_per_exercise_that_the_summary_counts():
    report = _report(["passed", "passed"], ["failed"])
    out = check_table(report, "x", width=80, totals={"hvp": 5})
    rows = [line for line in out.splitlines() if line.startswith("    hvp ")]
    assert len(rows) == 1 and "FAIL" in rows[0] and "2/2" in rows[0] and "0/1" in rows[0] and "0/5" in rows[0]
    assert exercise_verdict(report["exercises"][0]) == "failed"
    assert "0 of 1 exercises pass every public check" in out


def test_an_exercise_not_started_is_one_line():
    out = check_table(_report(["failed"], ["failed"], "hvp.not_implemented"), "x", width=80)
    assert "TODO" in out and "x test_hvp" not in out and "1 not started yet" in out


def test_failures_name_their_mistake_after_the_table_and_a_long_one_repeats_it():
    report = _report(["failed"] * 12, ["passed"], "hvp.hvp_of_sum")
    lines = check_table(report, "x", width=80).splitlines()
    rows = [i for i, line in enumerate(lines) if line.startswith("    hvp ")]
    first_detail = next(i for i, line in enumerate(lines) if line.startswith("  x "))
    assert len(rows) == 2 and rows[0] < first_detail < rows[1]
    assert "      mistake / 已知错误: hvp.hvp_of_sum" in lines


def test_first_run_on_the_stubs_at_80_columns():
    """A new student's first `grader check`, in a terminal 80 columns wide: the table first, one line
    per exercise (none is started), nothing wider than the terminal."""
    result = subprocess.run([sys.executable, "-m", "grader", "check", str(STUBS)], cwd=ROOT, capture_output=True,
                            text=True, timeout=300, env={**os.environ, "COLUMNS": "80", "NO_COLOR": ""})
    lines = result.stdout.splitlines()
    course = catalog.load()
    assert result.returncode == 1, result.stdout + result.stderr
    assert max(display_width(line) for line in lines) <= 80
    names = [m[1] for m in map(re.compile(r"^    (\w+) +\d+/\d+ ").match, lines) if m]
    assert names[:len(course.exercises)] == [e.name for e in course.exercises]  # the table, first
    assert all(names.count(n) <= 2 for n in names)  # then at most once more, at the end
    repair = {e.name for e in course.exercises if e.repair}
    todo = {line.split()[0] for line in lines if line.rstrip().endswith("TODO 未开始")}
    assert todo == {e.name for e in course.exercises} - repair
    assert len(lines) < 120, result.stdout
    assert f"The course is worth {course.max_score():g} points in all" in " ".join(line.strip() for line in lines)


def test_an_exception_shows_the_students_own_frames(tmp_path):
    """hvp calls a helper that raises: `grader check` shows both frames of the student's file (file, line,
    source line), innermost last, and none of the grader's."""
    from conftest import SOLUTIONS, make_submission

    source = (SOLUTIONS / "grad.py").read_text() + (
        "\n\ndef _helper(g):\n    return g * undefined_name\n\n\n"
        "def hvp(f, x, v):\n    x = x.detach().clone().requires_grad_(True)\n"
        "    (g,) = torch.autograd.grad(f(x), x, create_graph=True)\n    return _helper(g)\n")
    folder = make_submission(tmp_path / "sub", {"grad.py": source})
    lines = source.splitlines()
    result = subprocess.run([sys.executable, "-m", "grader", "check", str(folder), "--exercise", "hvp"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "100"})
    out = result.stdout
    outer, inner = lines.index("    return _helper(g)") + 1, lines.index("    return g * undefined_name") + 1
    expected = (f'File "exercises/grad.py", line {outer}\n          return _helper(g)\n'
                f'        File "exercises/grad.py", line {inner}\n          return g * undefined_name')
    assert expected in out, out
    assert "grader/" not in out and "site-packages" not in out


def test_messages_have_their_grammar_and_a_public_only_grade_says_it_is_not_the_grade():
    from grader.display import PUBLIC_ONLY, grading_summary
    from grader.exports.submit import still_raises

    assert still_raises(["hvp"]) == "hvp still raises NotImplementedError: it scores 0"
    assert still_raises(["hvp", "gd_fit"]) == "hvp, gd_fit still raise NotImplementedError: they score 0"
    report = {"submission": "s", "score": 20, "max_score": 20, "exercises": []}
    summary = grading_summary([report], 0, 1.0, "out", public_only=True).splitlines()
    assert summary[0] == summary[-1] == PUBLIC_ONLY and "not the grade" in PUBLIC_ONLY and "不是成绩" in PUBLIC_ONLY
    assert PUBLIC_ONLY not in grading_summary([report], 0, 1.0, "out")


def test_a_docstring_row_whose_code_prints_compares_the_value_and_shows_the_prints(tmp_path):
    """Debug prints do not fail the docstring row (its value is compared, as the interpreter shows it);
    `grader check` says the prints are there, and -v shows them under the check."""
    from conftest import SOLUTIONS, make_submission

    source = (SOLUTIONS / "grad.py").read_text().replace(
        "def hvp(f, x: Tensor, v: Tensor) -> Tensor:\n", "def hvp(f, x: Tensor, v: Tensor) -> Tensor:\n    print('debug')\n")
    assert "print('debug')" in source
    folder = make_submission(tmp_path / "sub", {"grad.py": source})
    result = subprocess.run([sys.executable, "-m", "grader", "check", str(folder), "--exercise", "hvp", "-v"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "200"})
    assert result.returncode == 0 and "x test_hvp_docstring" not in result.stdout, result.stdout
    after = result.stdout.split("v test_hvp_docstring: passed / 通过", 1)[1]
    assert after.splitlines()[1:3] == ["      your code printed / 你的代码输出了:", "      | debug"], result.stdout