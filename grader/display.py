"""What people read in the terminal: the student's check table and the instructor's summary.

Plain text that works in any terminal (students install no UI library); every line a
student reads is in English and 简体中文. Columns and wrapping count display width (a Chinese
character takes two columns) and fit the terminal (COLUMNS, else its size).
"""

from __future__ import annotations

import re
import shutil
import unicodedata

from grader.safetext import clean_text

STATUS_WORD = {"passed": "PASS 通过", "failed": "FAIL 未通过", "error": "ERROR 错误", "timeout": "TIMEOUT 超时"}
DOCSTRING_SUFFIX = "_docstring"


def display_width(text: str) -> int:
    """Columns `text` takes in a terminal: two for wide and full-width characters, none for combining ones."""
    return sum(0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
               for ch in text)


def pad(text: str, width: int) -> str:
    return text + " " * max(0, width - display_width(text))


_TOKENS = re.compile(r"[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\u3000-\u303f]|[^\s\u2e80-\u9fff\uff00-\uffef\u3000-\u303f]+|\s+")


def wrap(text: str, width: int, indent: str = "", subsequent: str | None = None) -> list[str]:
    """Greedy wrapping by display width: breaks at spaces, and between Chinese characters."""
    subsequent = indent if subsequent is None else subsequent
    lines, line, prefix = [], "", indent
    for token in _TOKENS.findall(text):
        if token.isspace():
            if line:
                line += " "
            continue
        while display_width(prefix + line + token) > width and (line or display_width(prefix + token) > width):
            if line:
                lines.append(prefix + line.rstrip())
                line, prefix = "", subsequent
                continue
            room = max(1, width - display_width(prefix))  # a single token longer than a line: cut it
            cut = 0
            while cut < len(token) and display_width(token[: cut + 1]) <= room:
                cut += 1
            lines.append(prefix + token[: max(cut, 1)])
            token, prefix = token[max(cut, 1):], subsequent
        line += token
    if line or not lines:
        lines.append(prefix + line.rstrip())
    return lines


def terminal_width() -> int:
    """COLUMNS when set, else the terminal's width (80 when there is none), never below the table's 64."""
    return max(64, shutil.get_terminal_size((80, 24)).columns)


def check_table(report: dict, path: str, width: int | None = None) -> str:
    """The result of `grader check`: a line per exercise, a line for its docstring's examples, and under
    a failure what went wrong and a hint."""
    width = width or terminal_width()
    columns = (16, 26, 8)  # module, exercise, checks; then the result, 12 at most: 64 columns
    lines = [
        f"autograd-lab check: {path}",
        *wrap("Public tests only; hidden tests with other inputs run when your work is graded.", width),
        *wrap("只运行公开测试；评分时还会用其他输入运行隐藏测试。", width),
        "",
        "  " + "".join(pad(h, w) for h, w in zip(("module", "exercise", "checks"), columns)) + "result",
        "  " + "".join("-" * (w - 1) + " " for w in columns) + "-" * 12,
    ]
    module = None
    for exercise in report["exercises"]:
        tests = [t for t in exercise["tests"] if not t["name"].split("[")[0].endswith(DOCSTRING_SUFFIX)]
        examples = [t for t in exercise["tests"] if t["name"].split("[")[0].endswith(DOCSTRING_SUFFIX)]
        shown_module = exercise["module"] if exercise["module"] != module else ""
        module = exercise["module"]
        for label, group, first in ((exercise["name"], tests, shown_module), ("  docstring examples", examples, "")):
            if not group:
                continue
            passed = sum(1 for t in group if t["status"] == "passed")
            worst = next((t["status"] for t in group if t["status"] != "passed"), "passed")
            lines.append("  " + pad(first, columns[0]) + pad(label, columns[1]) + pad(f"{passed}/{len(group)}", columns[2])
                         + STATUS_WORD[worst])
            for test in group:
                if test["status"] != "passed":
                    lines += _failure_lines(test, width)
    for problem in report.get("submission_errors", []):
        lines += wrap(problem, width, "  ! ", "    ")
    exercises_ok = sum(1 for e in report["exercises"] if all(t["status"] == "passed" for t in e["tests"]))
    lines += [
        "",
        *wrap(f"{exercises_ok} of {len(report['exercises'])} exercises pass their public checks "
              f"({_num(report['score'])}/{_num(report['max_score'])} public points).", width),
        *wrap(f"{len(report['exercises'])} 道题中有 {exercises_ok} 道通过了公开检查"
              f"（公开测试得分 {_num(report['score'])}/{_num(report['max_score'])}）。", width),
    ]
    return "\n".join(lines)


def _failure_lines(test: dict, width: int) -> list[str]:
    out = [f"      x {test['name']}: {test['status']}"]
    for paragraph in test["message"].splitlines():
        out += wrap(paragraph, width, "        ", "          ")
    if test.get("hint"):
        hint = test["hint"].splitlines()
        out += wrap(hint[0], width, "        checks: ", "                ")
        for line in hint[1:]:
            out += wrap(line, width, "                ")
    return out


def _num(x: float) -> str:
    return f"{x:g}"


def grading_summary(reports: list[dict], skipped: int, seconds: float, out_dir: str,
                    regraded: dict[str, str] | None = None) -> str:
    """After `grader grade`: count, mean score, what --resume regraded and why, and where submissions
    lost points, by exercise."""
    if not reports:
        return "no submissions graded"
    n = len(reports)
    mean = sum(r["score"] for r in reports) / n
    max_score = reports[0]["max_score"]
    lines = [f"graded {n - skipped} submissions in {seconds:.1f} s"
             + (f" ({skipped} unchanged, kept from an earlier run)" if skipped else "")
             + f"; mean score {mean:.2f}/{_num(max_score)}; score files in {out_dir}"]
    if regraded:
        reasons: dict[str, int] = {}
        for why in regraded.values():
            reasons[why] = reasons.get(why, 0) + 1
        lines.append(f"--resume regraded {len(regraded)} with a score file already there: "
                     + ", ".join(f"{count} {why}" for why, count in sorted(reasons.items(), key=lambda kv: -kv[1])))
    lost: dict[str, int] = {}
    for r in reports:
        for e in r["exercises"]:
            if e["score"] < e["max_score"]:
                lost[e["name"]] = lost.get(e["name"], 0) + 1
    if lost:
        lines.append("submissions that lost points, by exercise:")
        for name, count in sorted(lost.items(), key=lambda kv: -kv[1]):
            lines.append(f"  {name:<28}{count:>5} of {n}")
    problems = [r for r in reports if r.get("submission_errors")]
    if problems:
        lines.append(f"{len(problems)} submissions have problems (missing modules, import errors, rejected files):")
        for r in problems[:10]:  # a submission's text, printed where a CI runner may read commands in it
            lines.append("  " + clean_text(f"{r['submission']}: {r['submission_errors'][0]}", limit=300, one_line=True))
        if len(problems) > 10:
            lines.append(f"  ... and {len(problems) - 10} more (see summary.csv)")
    return "\n".join(lines)


def stopped_run(what: str, written: int, kept: int, total: int, summary_error: str, remedy: str,
                resume_command: str) -> str:
    """A grading run that stopped part-way: what happened, what was written, how to go on."""
    lines = [f"grader: stopped: {what}",
             f"  score files: {written} written by this run" + (f", {kept} kept from an earlier run" if kept else "")
             + "; each is complete (a score file is written whole or not at all)",
             f"  summary.csv: {summary_error}" if summary_error else
             f"  summary.csv: written, one row per score file ({written + kept})" if written + kept
             else "  summary.csv: none written"]
    if total - written - kept > 0:
        lines.append(f"  no score file yet: {total - written - kept} of {total} submissions")
    lines.append(f"  to go on: {remedy}, then run: {resume_command}" if remedy else f"  to go on, run: {resume_command}")
    return "\n".join(lines)


def vanished_submissions(vanished: list[tuple[str, str]], resume_command: str) -> str:
    """Submissions that were gone when their turn came: (name, what happened) for each."""
    lines = [(f"{len(vanished)} submissions have no score file: they" if len(vanished) > 1 else
              "1 submission has no score file: it") + " vanished during the run (moved or deleted while it ran; "
             "not a fault of the student's work):"]
    lines += ["  " + clean_text(f"{name}: {message}", limit=300, one_line=True) for name, message in vanished[:10]]
    if len(vanished) > 10:
        lines.append(f"  ... and {len(vanished) - 10} more")
    them = 'them' if len(vanished) > 1 else 'it'
    lines.append(f"to grade {them}: put {them} back, then run: {resume_command}")
    return "\n".join(lines)


def withheld_message(waiting_for: list[str]) -> str:
    """Why a check that held earned nothing (grader.host.scoring): a fixed sentence with the names of
    the course's general tests it waits for, which the student views recognise and show."""
    names = ", ".join(waiting_for)
    return (f"points withheld: this check held, but its points count only when {names} earns points too; an "
            f"edge case, a conventions check or a fixed public input earns nothing on its own (no points without "
            f"work) / 本项检查通过，但只有 {names} 也得分时才计分：边界情况、约定检查和固定的公开输入不能单独得分")
