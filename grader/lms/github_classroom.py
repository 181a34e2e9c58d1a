"""GitHub Classroom autograding: runner results (version 3) for the grading reporter.

In a Classroom workflow each grading step sets an output holding base64(JSON), and the
`classroom-resources/autograding-grading-reporter@v1` step reads it from the environment
variable `<RUNNER>_RESULTS` for every runner named in its `runners` input (docs/lms-formats.md,
GitHub Classroom; read at classroom-resources/autograding-grading-reporter@d13b5912, the `v1` tag: src/main.js,
src/notify-classroom.js, src/console-results.js, src/helpers/test-helpers.js; field set of
`classroom-resources/autograding-python-grader: runner/data.py`):

- G1 `version` is 3, `status` is `pass`, `fail` or `error`;
- G2 `max_score` is a number; the reporter skips a runner whose max_score is 0 or missing;
- G3 `tests` is a list of `{name, status, score, message?, test_code?, filename?, line_no?,
  duration?, task_id?, output?}` with `status` in pass/fail/error and `score` a number;
- G4 the grade (notify-classroom.js) is `Points ${totalPoints}/${maxPoints}`: a running
  floating-point sum, over the runners in the `runners` order, of each runner's `max_score`
  and of every test's `score`, printed with JavaScript's Number-to-string. It is written as
  two notice annotations (`core.notice`: "Points X/Y" titled "Autograding complete", and
  `{"totalPoints":X,"maxPoints":Y}` titled "Autograding report"), which Classroom reads. Sums
  of decimals are not exact in floating point (0.3333 + ... prints 94.99999999999999), so the
  test scores we write are chosen so that this very sum prints the score file's total
  (`exact_points`), and `reporter_points` replays it;
- G5 the reporter's console table instead shows (passed tests / tests) x max_score per runner
  (test-helpers.js getTestScore): with unequal test weights inside one runner it differs from
  G4. We therefore make one runner per exercise, so that the per-exercise maxima are right;
  inside an exercise the console can still differ when its tests have unequal points;
- G6 each output line is `name=value` in `$GITHUB_OUTPUT`, the value base64 on one line;
  runner ids are letters and digits only: when anything fails, main.js tests the `runners`
  input against `/^([a-zA-Z0-9]+,)*[a-zA-Z0-9]+$/` and, if it does not match, reports only
  "The runners input must be a comma-separated list of strings" instead of the real error;
- G8 the reporter reads each output from its environment, `<RUNNER>_RESULTS` (upper case), and
  Linux refuses to start a process with one environment entry of 128 KiB or more (MAX_ARG_STRLEN):
  the reporter step then fails to start and Classroom records no grade. `fit_runner` shortens the
  runner's messages (marked `...[cut]`) until `<RUNNER>_RESULTS=<base64>` is under that;
- G7 the console prints an error test's `message` verbatim (`Error: ${test.message}`), where
  the Actions runner reads workflow commands: every text passes `grader.safetext.clean_text`.

One step of ours writes one output per exercise (`graphNodeCounts=<base64>`, ...), and the
reporter step lists them all (see `workflow_steps_yaml`).
"""

from __future__ import annotations

import base64
import json
import math
import re
from decimal import Decimal
from fractions import Fraction
from typing import Any

from grader.lms import LmsError
from grader.lms.scores import SubmissionScore
from grader.safetext import clean_text

STATUS = {"passed": "pass", "failed": "fail", "error": "error", "timeout": "error"}
MAX_OUTPUT_BYTES = 1_000_000  # GitHub's limit for one job output
ENV_ENTRY_BYTES = 128 * 1024  # Linux's MAX_ARG_STRLEN: one `NAME=value` of a process's environment, its NUL included
MAX_MESSAGE_CHARS = 1_000
DEFAULT_STEP_ID = "autograd"
RUNNERS_INPUT_RE = re.compile(r"^([a-zA-Z0-9]+,)*[a-zA-Z0-9]+$")  # main.js


def runner_id(exercise_name: str) -> str:
    """A runner id the reporter accepts (G6): the exercise name in lowerCamelCase, letters and digits."""
    parts = [p for p in re.split(r"[^A-Za-z0-9]+", exercise_name) if p]
    name = "".join([parts[0][:1].lower() + parts[0][1:]] + [p[:1].upper() + p[1:] for p in parts[1:]]) if parts else ""
    return name if re.match(r"[a-z]", name) else f"ex{name[:1].upper()}{name[1:]}"


def _message(test, show_hidden: bool) -> str:
    if test.hidden and not show_hidden:
        return f"hidden test: {test.status}"
    return clean_text(test.message, MAX_MESSAGE_CHARS)


def runner_status(statuses: list[str]) -> str:
    if any(s == "error" for s in statuses):
        return "error"
    return "fail" if any(s == "fail" for s in statuses) else "pass"


def build_runners(score: SubmissionScore, show_hidden: bool = False) -> dict[str, dict[str, Any]]:
    """One v3 runner result per exercise, keyed by runner id, in exercise order."""
    points, maxima = exact_points(score)
    runners: dict[str, dict[str, Any]] = {}
    for task_id, (exercise, test_points, maximum) in enumerate(zip(score.exercises, points, maxima), start=1):
        rid = runner_id(exercise.name)
        if rid in runners:
            raise LmsError(f"{score.path.name}: exercises {exercise.name!r} and another one share the runner "
                           f"name {rid!r}")
        tests = [{
            "name": test.name,
            "status": STATUS[test.status],
            "message": _message(test, show_hidden),
            "test_code": "",
            "task_id": task_id,
            "filename": exercise.module,
            "line_no": 0,
            "duration": test.duration_s,
            "score": given,
        } for test, given in zip(exercise.tests, test_points)]
        runner: dict[str, Any] = {
            "version": 3,
            "status": runner_status([t["status"] for t in tests]),
            "max_score": maximum,
            "tests": tests,
        }
        if score.submission_errors and runner["status"] != "pass":
            runner["message"] = clean_text("Problems with the submission: " + " | ".join(score.submission_errors),
                                           MAX_MESSAGE_CHARS, one_line=True)
        runners[rid] = fit_runner(rid, runner)
    expected = f"Points {js_number(score.score)}/{js_number(score.max_score)}"
    if reporter_points(runners) != expected:  # exact_points failed its one job: never send a wrong grade
        raise LmsError(f"{score.path.name}: the reporter would show {reporter_points(runners)}, not {expected}")
    return runners


# ----------------------------------------------------------------------------- exact totals (G4)


def exact_points(score: SubmissionScore) -> tuple[list[list[float]], list[float]]:
    """Test scores and runner maxima whose running float sums, in the reporter's order, are
    exactly the score file's total and maximum.

    Each test keeps its own score, except: when the total differs from the tests' sum (a score
    file adjusted by `grader gradebook`, or clamped), the difference is taken from (or added to)
    the last tests first, within [0, the test's maximum]; then the last test with points, and
    the last runner's maximum, move by a few units in the last place so that the sums land
    exactly on the file's numbers.
    """
    points = [[Fraction(t.score) for t in ex.tests] for ex in score.exercises]
    maxima = [[Fraction(t.max_score) for t in ex.tests] for ex in score.exercises]
    _move_difference(points, maxima, Fraction(score.score) - sum(sum(p) for p in points))
    test_points = [[float(p) for p in row] for row in points]
    flat = [(i, j) for i, row in enumerate(test_points) for j in range(len(row))]
    with_points = [(i, j) for i, j in flat if test_points[i][j] > 0]
    if with_points:
        i, j = with_points[-1]
        before = _running_sum(test_points[a][b] for a, b in flat[:flat.index((i, j))])
        test_points[i][j] = _addend_for(before, float(score.score), test_points[i][j])
    runner_max = [ex.max_score for ex in score.exercises]
    runner_max[-1] = _addend_for(_running_sum(runner_max[:-1]), float(score.max_score), runner_max[-1])
    return test_points, runner_max


def _move_difference(points: list[list[Fraction]], maxima: list[list[Fraction]], difference: Fraction) -> None:
    """Add `difference` to the tests' points, last tests first, keeping each in [0, its maximum]."""
    for row, limits in zip(reversed(points), reversed(maxima)):
        for k in reversed(range(len(row))):
            if difference == 0:
                return
            room = (limits[k] - row[k]) if difference > 0 else -row[k]
            step = min(difference, room) if difference > 0 else max(difference, room)
            row[k] += step
            difference -= step


def _running_sum(values) -> float:
    total = 0.0  # JavaScript's numbers are IEEE 754 doubles, as Python's floats
    for value in values:
        total += value
    return total


def _addend_for(before: float, target: float, near: float) -> float:
    """The double x closest to `near` with before + x == target in floating point."""
    candidates = [target - before, near]
    for start in candidates:
        lower = upper = start
        for _ in range(64):
            for x in (lower, upper):
                if x >= 0 and before + x == target:
                    return x
            lower, upper = math.nextafter(lower, -math.inf), math.nextafter(upper, math.inf)
    return near  # unreachable for finite scores; build_runners checks the result


def js_number(value: float) -> str:
    """JavaScript's Number::toString (ECMA-262 §6.1.6.1.20) of a finite double.

    Python's repr and JavaScript both give the shortest digits that round-trip; only the layout
    differs (JavaScript writes 95 for 95.0, and exponents from 1e21 and below 1e-6).
    """
    if value == 0:
        return "0"
    if not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    sign = "-" if value < 0 else ""
    digits_tuple, exponent = Decimal(repr(abs(value))).normalize().as_tuple()[1:]
    digits = "".join(map(str, digits_tuple))
    k, n = len(digits), len(digits) + exponent
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        text = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return sign + text


def reporter_totals(runners: dict[str, dict[str, Any]]) -> tuple[float, float]:
    """G4: the running sums of notify-classroom.js, in the order the runners are listed."""
    total = maximum = 0.0
    for runner in runners.values():
        if not runner.get("max_score"):
            continue
        maximum += runner["max_score"]
        for test in runner["tests"]:
            total += test["score"]
    return total, maximum


def reporter_points(runners: dict[str, dict[str, Any]]) -> str:
    """G4: the text of the reporter's "Autograding complete" notice."""
    total, maximum = reporter_totals(runners)
    return f"Points {js_number(total)}/{js_number(maximum)}"


def console_score(runner: dict[str, Any]) -> float:
    """G5: what the reporter's console table shows for one runner."""
    passed = sum(1 for t in runner["tests"] if t["status"] == "pass")
    return passed / len(runner["tests"]) * (runner.get("max_score") or 1)


# ----------------------------------------------------------------------------- the output


def encode(runner: dict[str, Any]) -> str:
    return base64.b64encode(json.dumps(runner, separators=(",", ":")).encode("utf-8")).decode("ascii")


def env_entry_bytes(rid: str, encoded: str) -> int:
    """G8: the bytes of the reporter's environment entry `<RUNNER>_RESULTS=<value>`, its NUL included."""
    return len(f"{rid.upper()}_RESULTS=".encode()) + len(encoded.encode()) + 1


def fit_runner(rid: str, runner: dict[str, Any]) -> dict[str, Any]:
    """G8: the runner with its messages shortened (halved each round) until its entry fits."""
    limit = MAX_MESSAGE_CHARS
    while env_entry_bytes(rid, encode(runner)) >= ENV_ENTRY_BYTES and limit > 20:
        limit //= 2
        for test in runner["tests"]:
            test["message"] = clean_text(test["message"], limit)
        if "message" in runner:
            runner["message"] = clean_text(runner["message"], limit)
    return runner


def output_lines(runners: dict[str, dict[str, Any]]) -> list[str]:
    """The `$GITHUB_OUTPUT` lines, `<runner>=<base64 JSON>`."""
    return [f"{rid}={encode(runner)}" for rid, runner in runners.items()]


def validate_runner(runner: Any) -> list[str]:
    """G1-G3 on one runner result."""
    if not isinstance(runner, dict):
        return ["a runner result must be a JSON object"]
    problems = []
    if runner.get("version") != 3:
        problems.append("G1: version must be 3")
    if runner.get("status") not in ("pass", "fail", "error"):
        problems.append(f"G1: status {runner.get('status')!r} is not pass, fail or error")
    maximum = runner.get("max_score")
    if not isinstance(maximum, (int, float)) or isinstance(maximum, bool) or maximum <= 0:
        problems.append("G2: max_score must be a number > 0, or the reporter ignores the runner")
    tests = runner.get("tests")
    if not isinstance(tests, list) or not tests:
        return problems + ["G3: tests must be a non-empty list"]
    for i, test in enumerate(tests):
        if not isinstance(test, dict) or not isinstance(test.get("name"), str):
            problems.append(f"G3: tests[{i}] needs a name")
            continue
        if test.get("status") not in ("pass", "fail", "error"):
            problems.append(f"G3: tests[{i}].status {test.get('status')!r} is not pass, fail or error")
        score = test.get("score")
        if not isinstance(score, (int, float)) or isinstance(score, bool) or score < 0:
            problems.append(f"G3: tests[{i}].score must be a number >= 0")
        for key in ("message", "test_code", "filename", "output"):
            if key in test and test[key] is not None and not isinstance(test[key], str):
                problems.append(f"G3: tests[{i}].{key} must be a string")
        for key in ("line_no", "task_id"):
            if key in test and (not isinstance(test[key], int) or isinstance(test[key], bool)):
                problems.append(f"G3: tests[{i}].{key} must be an integer")
        if "duration" in test and not isinstance(test["duration"], (int, float)):
            problems.append(f"G3: tests[{i}].duration must be a number")
    return problems


def validate_output_lines(lines: list[str]) -> list[str]:
    """G6 and, through decoding, G1-G3 for every line."""
    problems = []
    for number, line in enumerate(lines, start=1):
        name, sep, value = line.partition("=")
        if not sep or not re.fullmatch(r"[a-z][A-Za-z0-9]*", name):
            problems.append(f"G6: line {number}: runner id {name!r} is not letters and digits (the reporter's regex)")
            continue
        if "\n" in value or len(value.encode()) >= MAX_OUTPUT_BYTES:
            problems.append(f"G6: output {name}: value must be one line under 1 MB")
            continue
        if env_entry_bytes(name, value) >= ENV_ENTRY_BYTES:
            problems.append(f"G8: output {name}: {env_entry_bytes(name, value)} bytes as the reporter's environment "
                            f"variable, the limit is {ENV_ENTRY_BYTES}")
            continue
        try:
            runner = json.loads(base64.b64decode(value, validate=True))
        except (ValueError, TypeError) as exc:
            problems.append(f"G6: output {name}: not base64 JSON ({exc})")
            continue
        problems += [f"{name}: {p}" for p in validate_runner(runner)]
    return problems


def workflow_steps_yaml(runner_ids: list[str], step_id: str = DEFAULT_STEP_ID, scores_dir: str = "scores") -> str:
    """The grading and reporter steps for `.github/workflows/classroom.yml` (docs/lms.md)."""
    env = "\n".join(f"          {rid.upper()}_RESULTS: \"${{{{ steps.{step_id}.outputs.{rid} }}}}\"" for rid in runner_ids)
    return (
        f"      - name: Grade\n"
        f"        id: {step_id}\n"
        f"        run: |\n"
        f"          python -m grader grade . --out {scores_dir}\n"
        f"          python -m grader export github-classroom {scores_dir} --github-output \"$GITHUB_OUTPUT\"\n"
        f"      - name: Autograding Reporter\n"
        f"        uses: classroom-resources/autograding-grading-reporter@v1\n"
        f"        env:\n{env}\n"
        f"        with:\n"
        f"          runners: {','.join(runner_ids)}\n"
    )
