"""GitHub Classroom autograding: runner results (version 3) for the grading reporter.

In a Classroom workflow each grading step sets an output holding base64(JSON) and the
`classroom-resources/autograding-grading-reporter` step reads it from the environment variable
`<RUNNER>_RESULTS` for every runner named in its `runners` input (shared/research/lms.md §10;
`github-education-resources/autograding-grading-reporter: src/main.js, src/notify-classroom.js,
src/aggregate-results.js`; field set of `classroom-resources/autograding-python-grader:
runner/data.py`):

- G1 `version` is 3, `status` is `pass`, `fail` or `error`;
- G2 `max_score` is a number; the reporter skips a runner whose max_score is 0 or missing;
- G3 `tests` is a list of `{name, status, score, message?, test_code?, filename?, line_no?,
  duration?, task_id?, output?}` with `status` in pass/fail/error and `score` a number;
- G4 the grade sent to Classroom ("Points X/Y") is the sum of all tests' `score` over the sum
  of the runners' `max_score` (notify-classroom.js), so our test scores must add up to the
  exercise score;
- G5 the reporter's console table instead shows (passed tests / tests) x max_score per runner
  (aggregate-results.js): with unequal test weights inside one runner it differs from G4. We
  therefore make one runner per exercise (lms.md's advice), so that the per-exercise maxima are
  right; inside an exercise the console can still differ when its tests have unequal points;
- G6 each output line is `name=value` in `$GITHUB_OUTPUT`, value base64 on one line (as
  `jq -sRr @base64` writes it), names made of letters, digits and `_`.

One step of ours writes one output per exercise (`graph_node_counts=<base64>`, ...), and the
reporter step lists them all (see `workflow_steps_yaml`).
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from grader.lms import LmsError
from grader.lms.scores import SubmissionScore

STATUS = {"passed": "pass", "failed": "fail", "error": "error", "timeout": "error"}
MAX_OUTPUT_BYTES = 1_000_000  # GitHub's limit for one job output
MAX_MESSAGE_CHARS = 1_000
DEFAULT_STEP_ID = "autograd"


def runner_id(exercise_name: str) -> str:
    """A runner / output name: lowercase letters, digits and '_', starting with a letter."""
    name = re.sub(r"[^a-z0-9_]+", "_", exercise_name.lower()).strip("_")
    return name if re.match(r"[a-z]", name or "") else f"ex_{name}"


def _message(test, show_hidden: bool) -> str:
    if test.hidden and not show_hidden:
        return f"hidden test: {test.status}"
    text = test.message.replace("\0", "\ufffd")
    return text if len(text) <= MAX_MESSAGE_CHARS else text[: MAX_MESSAGE_CHARS - 15] + " ...[truncated]"


def runner_status(statuses: list[str]) -> str:
    if any(s == "error" for s in statuses):
        return "error"
    return "fail" if any(s == "fail" for s in statuses) else "pass"


def build_runners(score: SubmissionScore, show_hidden: bool = False) -> dict[str, dict[str, Any]]:
    """One v3 runner result per exercise, keyed by runner id, in exercise order."""
    runners: dict[str, dict[str, Any]] = {}
    for task_id, exercise in enumerate(score.exercises, start=1):
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
            "score": test.score,
        } for test in exercise.tests]
        runner: dict[str, Any] = {
            "version": 3,
            "status": runner_status([t["status"] for t in tests]),
            "max_score": exercise.max_score,
            "tests": tests,
        }
        if score.submission_errors and runner["status"] != "pass":
            runner["message"] = "Problems with the submission: " + " | ".join(score.submission_errors)[:MAX_MESSAGE_CHARS]
        runners[rid] = runner
    return runners


def encode(runner: dict[str, Any]) -> str:
    return base64.b64encode(json.dumps(runner, separators=(",", ":")).encode("utf-8")).decode("ascii")


def output_lines(runners: dict[str, dict[str, Any]]) -> list[str]:
    """The `$GITHUB_OUTPUT` lines, `<runner>=<base64 JSON>`."""
    return [f"{rid}={encode(runner)}" for rid, runner in runners.items()]


def reporter_totals(runners: dict[str, dict[str, Any]]) -> tuple[float, float]:
    """G4: what notify-classroom.js sends as 'Points X/Y'."""
    total = maximum = 0.0
    for runner in runners.values():
        if not runner.get("max_score"):
            continue
        maximum += runner["max_score"]
        total += sum(test["score"] for test in runner["tests"])
    return total, maximum


def console_score(runner: dict[str, Any]) -> float:
    """G5: what aggregate-results.js prints for one runner."""
    passed = sum(1 for t in runner["tests"] if t["status"] == "pass")
    return passed / len(runner["tests"]) * (runner.get("max_score") or 1)


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
        if not sep or not re.fullmatch(r"[a-z][a-z0-9_]*", name):
            problems.append(f"G6: line {number}: output name {name!r} is not letters, digits and '_'")
            continue
        if "\n" in value or len(value.encode()) >= MAX_OUTPUT_BYTES:
            problems.append(f"G6: output {name}: value must be one line under 1 MB")
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
