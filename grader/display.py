"""What people read in the terminal: the student's check table and the instructor's summary.

Plain text that works in any terminal (students install no UI library); every line a
student reads is in English and 简体中文. Columns and wrapping count display width (a Chinese
character takes two columns) and fit the terminal (COLUMNS, else its size).
"""

from __future__ import annotations

import os
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


# Chinese line breaking: no line starts with a closing mark nor ends with an opening one, and a line
# breaks at a space, after a punctuation mark or where the script changes before it cuts a run of
# Chinese characters (only a run longer than a whole line is cut).
CLOSING = frozenset("。，、；：？！）」』》〉】〕”’…%)]}:;,.!?")
OPENING = frozenset("（「『《〈【〔“‘")


def _wide(ch: str) -> bool:
    return unicodedata.east_asian_width(ch) in "WF"


def _tokens(text: str) -> list[tuple[str, bool]]:
    """(piece, a space before it): the pieces between which a line may break."""
    pieces: list[tuple[str, bool]] = []
    current, spaced, previous = "", False, ""
    for ch in text:
        if ch.isspace():
            if current:
                pieces.append((current, spaced))
                current = ""
            spaced = True
            continue
        breaks = bool(current) and ch not in CLOSING and previous not in OPENING and (
            previous in CLOSING and _wide(previous) or _wide(ch) != _wide(previous) or ch in OPENING)
        if breaks:
            pieces.append((current, spaced))
            current, spaced = "", False
        current += ch
        previous = ch
    if current:
        pieces.append((current, spaced))
    return pieces


def _cut(piece: str, room: int) -> int:
    """Where to cut a piece too long for a line: as much as fits in `room`, never leaving a closing mark
    to start the next line; at least one character."""
    cut = 0
    while cut < len(piece) and display_width(piece[: cut + 1]) <= room:
        cut += 1
    while 1 < cut < len(piece) and (piece[cut] in CLOSING or piece[cut - 1] in OPENING):
        cut -= 1
    return max(cut, 1)


def wrap(text: str, width: int, indent: str = "", subsequent: str | None = None) -> list[str]:
    """Greedy wrapping by display width (see CLOSING and OPENING for the rules of Chinese)."""
    subsequent = indent if subsequent is None else subsequent
    lines, line, prefix = [], "", indent
    for piece, spaced in _tokens(text):
        joined = line + (" " if spaced and line else "") + piece
        if display_width(prefix + joined) <= width:
            line = joined
            continue
        if line and display_width(subsequent + piece) <= width:
            lines.append(prefix + line)
            line, prefix = piece, subsequent
            continue
        line = line + (" " if spaced and line else "")  # longer than a line: fill this one, then go on
        while display_width(prefix + line + piece) > width:
            room = width - display_width(prefix + line)
            if room < 2 and line:
                lines.append(prefix + line.rstrip())
                line, prefix = "", subsequent
                continue
            cut = _cut(piece, max(1, room))
            if line.strip() and (piece[cut - 1] in OPENING or piece[cut:cut + 1] in CLOSING):
                lines.append(prefix + line.rstrip())
                line, prefix = "", subsequent
                continue
            lines.append(prefix + line + piece[:cut])
            line, piece, prefix = "", piece[cut:], subsequent
        line += piece
    if line or not lines:
        lines.append(prefix + line.rstrip())
    return lines


def terminal_width() -> int:
    """COLUMNS when set, else the terminal's width (80 when there is none), never below the table's 64."""
    return max(64, shutil.get_terminal_size((80, 24)).columns)


def use_color(stream) -> bool:
    """Colour for a terminal that shows it: never with NO_COLOR set (https://no-color.org), TERM=dumb,
    or output that is not a terminal."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


VERDICT = {"passed": ("PASS 通过", "32"), "failed": ("FAIL 未通过", "31"), "todo": ("TODO 未开始", "33")}
COLUMNS = (28, 6, 9, 8)  # exercise, tests, examples, points; then the verdict, 11 at most: 64 columns
LONG_DETAILS = 30  # lines of details after which the table is shown again at the end


def _is_example(test: dict) -> bool:
    return test["name"].split("[")[0].endswith(DOCSTRING_SUFFIX)


def _not_started(tests: list[dict]) -> bool:
    """Every check failed on NotImplementedError: the exercise is not written yet."""
    return bool(tests) and all(t["status"] != "passed" and str((t.get("mistake") or {}).get("id", "")).endswith(
        ".not_implemented") for t in tests)


def exercise_verdict(exercise: dict) -> str:
    """One verdict per exercise, the one the summary counts: passed only when its tests and its
    docstring examples all pass."""
    tests = exercise["tests"]
    if all(t["status"] == "passed" for t in tests):
        return "passed"
    return "todo" if _not_started(tests) else "failed"


def _painted(verdict: str, color: bool) -> str:
    word, code = VERDICT[verdict]
    return f"\033[{code}m{word}\033[0m" if color else word


def _table(report: dict, totals: dict[str, float], color: bool) -> list[str]:
    heads = ("exercise", "tests", "examples", "points")
    lines = ["  " + "".join(pad(h, w) for h, w in zip(heads, COLUMNS)) + "result",
             "  " + "".join("-" * (w - 1) + " " for w in COLUMNS) + "-" * 11]
    module = None
    for exercise in report["exercises"]:
        if exercise["module"] != module:
            module = exercise["module"]
            lines.append(f"  {module}")
        tests = [t for t in exercise["tests"] if not _is_example(t)]
        examples = [t for t in exercise["tests"] if _is_example(t)]
        total = totals.get(exercise["name"], exercise.get("max_score", 0))
        cells = (f"  {exercise['name']}", _count(tests), _count(examples) if examples else "-",
                 f"{_num(exercise.get('score', 0))}/{_num(total)}")
        lines.append("  " + "".join(pad(c, w) for c, w in zip(cells, COLUMNS)) + _painted(exercise_verdict(exercise), color))
    return lines


def _count(tests: list[dict]) -> str:
    return f"{sum(1 for t in tests if t['status'] == 'passed')}/{len(tests)}"


def check_table(report: dict, path: str, width: int | None = None, totals: dict[str, float] | None = None,
                color: bool = False, verbose: bool = False, property_seed: int | None = None) -> str:
    """The result of `grader check`: the table (a line per exercise), then what went wrong in each
    exercise that is started and does not pass, then (when that is long) the table again, then the
    summary. `totals`: each exercise's points in the course (public and hidden tests); `verbose`:
    passing tests' output too; `property_seed`: the seed of the property checks that ran."""
    width = width or terminal_width()
    totals = totals or {}
    table = _table(report, totals, color)
    lines = [f"autograd-lab check: {path}",
             *wrap("Public tests only; hidden tests with other inputs run when your work is graded.", width),
             *wrap("只运行公开测试；评分时还会用其他输入运行隐藏测试。", width)]
    if property_seed is not None:
        lines += [*wrap(f"Property checks (worth no points) ran on fresh random inputs, seed {property_seed}: "
                        f"grader check --seed {property_seed} repeats them.", width),
                  *wrap(f"性质检查（不计分）使用了新的随机输入，种子 {property_seed}：grader check --seed {property_seed} "
                        "可以重现。", width)]
    lines += ["", *table]
    details = []
    for exercise in report["exercises"]:
        details += _details(exercise, width, verbose)
    for problem in report.get("submission_errors", []):
        details += wrap(problem, width, "  ! ", "    ")
    lines += details
    if len(details) > LONG_DETAILS:
        lines += ["", *table]
    quiet = [t for e in report["exercises"] for t in e["tests"] if t.get("output") and not verbose
             and (t["status"] == "passed" or exercise_verdict(e) != "failed")]
    if quiet:
        checks = "1 passing check" if len(quiet) == 1 else f"{len(quiet)} passing checks"
        lines += ["", *wrap(f"Your code printed or warned during {checks}: grader check -v shows it.", width),
                  *wrap(f"你的代码在 {len(quiet)} 项通过的检查中有输出或警告：grader check -v 可以查看。", width)]
    lines += ["", *_summary(report, totals, width)]
    return "\n".join(lines)


def _details(exercise: dict, width: int, verbose: bool) -> list[str]:
    verdict = exercise_verdict(exercise)
    shown = [t for t in exercise["tests"] if (verdict == "failed" and t["status"] != "passed")
             or (verbose and t.get("output"))]
    if not shown:
        return []
    out = ["", *wrap(f"{exercise['name']} ({exercise['module']}): {VERDICT[verdict][0]}", width)]
    for test in shown:
        out += _failure_lines(test, width) if test["status"] != "passed" else [f"  v {test['name']}: passed / 通过"]
        out += _output_lines(test, width)
    if exercise.get("counterexample"):
        out += ["  " + line for line in counterexample_lines(exercise["counterexample"])]
    return out


def counterexample_lines(counterexample: dict) -> list[str]:
    """A failed exercise's counterexample as the student reads it (check, feedback, Gradescope, otter): the
    call to paste into Python in the exercises folder, what it should give, and what it gave."""
    lines = ["smallest failing input found (run it in your exercises folder) / 找到的最小反例（在 exercises 文件夹中运行）:"]
    lines += ["    " + line for line in counterexample["snippet"].splitlines()]
    if counterexample.get("expected") is not None:
        lines.append(f"  expected / 应为:     {counterexample['expected']}")
    lines.append(f"  got / 实际得到:      {counterexample['got']}")
    if counterexample.get("reason"):
        lines.append(f"  why / 原因:          {counterexample['reason']}")
    mistake = counterexample.get("mistake") or {}
    if mistake.get("id"):
        lines.append(f"  mistake / 已知错误:  {mistake['id']}: {mistake.get('en', '')} / {mistake.get('zh', '')}")
    return lines


def _summary(report: dict, totals: dict[str, float], width: int) -> list[str]:
    verdicts = [exercise_verdict(e) for e in report["exercises"]]
    n, passed, todo = len(verdicts), verdicts.count("passed"), verdicts.count("todo")
    course_points = sum(totals.values()) if totals else report["max_score"]
    score, public = _num(report["score"]), _num(report["max_score"])
    todo_en = f"; {todo} not started yet (TODO: still raises NotImplementedError)" if todo else ""
    todo_zh = f"；{todo} 道尚未开始（TODO：仍抛出 NotImplementedError）" if todo else ""
    return [
        *wrap(f"{passed} of {n} exercises pass every public check, its tests and its docstring examples"
              f"{todo_en}.", width),
        *wrap(f"{n} 道题中有 {passed} 道通过了全部公开检查（公开测试和文档字符串示例）{todo_zh}。", width),
        *wrap(f"Public tests gave {score} of their {public} points; points: an exercise's public points "
              f"out of its total. The course is worth {_num(course_points)} points in all; docstring "
              "examples are worth none; hidden tests give the rest when your work is graded.", width),
        *wrap(f"公开测试得分 {score}/{public}；points 一栏是每道题的公开测试得分与该题总分。整门作业共 "
              f"{_num(course_points)} 分；文档字符串示例不计分；其余分数由评分时的隐藏测试给出。", width),
    ]


def _failure_lines(test: dict, width: int) -> list[str]:
    mistake = (test.get("mistake") or {}).get("id")
    out = wrap(f"x {test['name']}: {test['status']}", width, "  ", "      ")
    if mistake:
        out += wrap(f"mistake / 已知错误: {mistake}", width, "      ", "        ")
    for paragraph in test["message"].splitlines():
        lead = " " * (len(paragraph) - len(paragraph.lstrip()))  # a traceback's indentation is kept
        out += wrap(paragraph, width, "      " + lead, "        " + lead)
    if test.get("hint"):
        hint = test["hint"].splitlines()
        out += wrap(hint[0], width, "      checks: ", "              ")
        for line in hint[1:]:
            out += wrap(line, width, "              ")
    return out


def _output_lines(test: dict, width: int) -> list[str]:
    """What the student's code printed or warned during the test (public tests of `grader check` only)."""
    text = test.get("output") or ""
    if not text:
        return []
    out = ["      your code printed / 你的代码输出了:"]
    for line in text.splitlines():
        out += wrap(line, width, "      | ", "      | ")
    return out


def _num(x: float) -> str:
    return f"{x:g}"


PUBLIC_ONLY = ("this course file has no hidden tests (a student's copy): these scores come from the public tests "
               "only and are not the grade / 此课程文件没有隐藏测试（学生版）：以上分数只来自公开测试，不是成绩")


def shown_name(name: str) -> str:
    """A submission's name as a terminal or CI log shows it: one line, control characters and
    workflow commands neutralised (a file named "a\n::error::x" must not write a CI command)."""
    return clean_text(name, 200, one_line=True)


def grading_summary(reports: list[dict], skipped: int, seconds: float, out_dir: str,
                    regraded: dict[str, str] | None = None, public_only: bool = False) -> str:
    """After `grader grade`: count, mean score, what --resume regraded and why, and where submissions
    lost points, by exercise. `public_only`: the course has no hidden tests (the student bundle), said
    first and last, so that no one reads these scores as the grade."""
    if not reports:
        return "no submissions graded"
    if public_only:
        text = grading_summary(reports, skipped, seconds, out_dir, regraded)
        return f"{PUBLIC_ONLY}\n{text}\n{PUBLIC_ONLY}"
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
