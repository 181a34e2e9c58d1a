"""What people read in the terminal: the student's check table and the instructor's summary.

Plain text that works in any terminal (students install no UI library); every line a
student reads is in English and 简体中文.
"""

from __future__ import annotations

import textwrap

STATUS_WORD = {"passed": "PASS 通过", "failed": "FAIL 未通过", "error": "ERROR 错误", "timeout": "TIMEOUT 超时"}


def check_table(report: dict, path: str, width: int = 100) -> str:
    """The result of `grader check`: one line per exercise, and under a failure what went wrong and a hint."""
    lines = [
        f"autograd-lab check: {path}",
        "Public tests only; hidden tests with other inputs run when your work is graded.",
        "只运行公开测试；评分时还会用其他输入运行隐藏测试。",
        "",
        f"  {'module':<16}{'exercise':<28}{'public tests':<14}result",
        f"  {'-' * 16}{'-' * 28}{'-' * 14}{'-' * 12}",
    ]
    module = None
    for exercise in report["exercises"]:
        passed = sum(1 for t in exercise["tests"] if t["status"] == "passed")
        total = len(exercise["tests"])
        worst = next((t["status"] for t in exercise["tests"] if t["status"] != "passed"), "passed")
        shown_module = exercise["module"] if exercise["module"] != module else ""
        module = exercise["module"]
        lines.append(f"  {shown_module:<16}{exercise['name']:<28}{f'{passed}/{total}':<14}{STATUS_WORD[worst]}")
        for test in exercise["tests"]:
            if test["status"] != "passed":
                lines += _failure_lines(test, width)
    for problem in report.get("submission_errors", []):
        lines.append(f"  ! {problem}")
    exercises_ok = sum(1 for e in report["exercises"] if all(t["status"] == "passed" for t in e["tests"]))
    lines += [
        "",
        f"{exercises_ok} of {len(report['exercises'])} exercises pass their public tests "
        f"({_num(report['score'])}/{_num(report['max_score'])} public points).",
        f"{len(report['exercises'])} 道题中有 {exercises_ok} 道通过了公开测试"
        f"（公开测试得分 {_num(report['score'])}/{_num(report['max_score'])}）。",
    ]
    return "\n".join(lines)


def _failure_lines(test: dict, width: int) -> list[str]:
    out = [f"      x {test['name']}: {test['status']}"]
    for paragraph in test["message"].splitlines():
        out += textwrap.wrap(paragraph, width, initial_indent="        ", subsequent_indent="          ") or [""]
    if test.get("hint"):
        hint = test["hint"].splitlines()
        out += textwrap.wrap(hint[0], width, initial_indent="        checks: ", subsequent_indent="                ")
        for line in hint[1:]:
            out += textwrap.wrap(line, width, initial_indent="                ", subsequent_indent="                ")
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
        for r in problems[:10]:
            lines.append(f"  {r['submission']}: {r['submission_errors'][0]}")
        if len(problems) > 10:
            lines.append(f"  ... and {len(problems) - 10} more (see summary.csv)")
    return "\n".join(lines)
