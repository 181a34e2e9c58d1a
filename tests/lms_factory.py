"""Realistic score files and rosters for the LMS tests (schema-valid by construction, and checked).

The class's exercises are the course's (tests/conftest.py's COURSE: this project's, or the changed course
AUTOGRAD_LAB_TEST_COURSE names), by name and module in the course's order; their points are the factory's
own: a visible test worth 2 points and a hidden test worth 3 per exercise (so the total is 5 per exercise,
95 for this course's 19, and test weights differ inside an exercise). The tests name exercises by their
role (WRONG, the one most hand-ins get wrong; FIRST, SECOND...), never by a name of the course.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Iterable

import jsonschema

from grader.lms.scores import SCHEMA_PATH

from conftest import COURSE

EXERCISES = [(exercise.name, exercise.module) for exercise in COURSE.exercises]
NAMES = [name for name, _ in EXERCISES]
# 11 at least: the roles below stay distinct, and twice the total is above Moodle's limit of 100 (test_lms_moodle)
assert len(NAMES) >= 11, f"the LMS tests need a course of 11 exercises at least, {COURSE.path} has {len(NAMES)}"
MODULE = dict(EXERCISES)
PER_EXERCISE = 5.0
FIRST, SECOND, LAST = NAMES[0], NAMES[1], NAMES[-1]
WRONG = NAMES[len(NAMES) // 2]  # the exercise the tests' hand-ins get wrong: neither first nor last
AFTER_WRONG = NAMES[NAMES.index(WRONG) + 1]  # the next one in the course's order (a correct one)
THREE_WRONG = (WRONG, NAMES[-2], LAST)  # bob's three wrong exercises (15 points lost)
HIDDEN_WRONG = (SECOND, NAMES[-3])  # chen gets only these exercises' hidden tests wrong (2 x 3 points)
TESTS = [("test_public", 2.0, "visible"), ("test_hidden", 3.0, "hidden")]
MAX_SCORE = PER_EXERCISE * len(EXERCISES)
SCHEMA = json.loads(SCHEMA_PATH.read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
HIDDEN_SECRET = "expected tensor([0.1234]) for hidden seed 987"


def make_score(submission: str, failed: Iterable[str] = (), status: str = "failed",
               submission_errors: Iterable[str] = ()) -> dict:
    """A score file; `failed` names exercises (WRONG) or single tests (f"{WRONG}::test_hidden")."""
    failed = set(failed)
    exercises = []
    for name, module in EXERCISES:
        tests = []
        for test_name, points, visibility in TESTS:
            fails = name in failed or f"{name}::{test_name}" in failed
            message = ""
            if fails:
                message = HIDDEN_SECRET if visibility == "hidden" else f"{name} returned the wrong gradient"
            tests.append({"name": test_name, "status": status if fails else "passed",
                          "score": 0.0 if fails else points, "max_score": points,
                          "visibility": visibility, "message": message, "duration_s": 0.01})
        exercises.append({"name": name, "module": module, "score": sum(t["score"] for t in tests),
                          "max_score": sum(t["max_score"] for t in tests), "tests": tests})
    data = {
        "schema_version": "1.0", "submission": submission,
        "score": sum(e["score"] for e in exercises), "max_score": MAX_SCORE,
        "device": "cpu", "torch_version": "2.13.0", "duration_s": 3.2, "seed": 1234,
        "graded_at": "2026-06-01T12:00:00Z", "exercises": exercises,
    }
    if submission_errors:
        data["submission_errors"] = list(submission_errors)
    VALIDATOR.validate(data)  # the factory only makes schema-valid files
    return data


def score_from_points(submission: str, exercises: list) -> dict:
    """A score file from [name, module, [[score, max_score], ...]] per exercise (real engine points)."""
    data = make_score(submission)
    data["exercises"] = []
    for name, module, tests in exercises:
        data["exercises"].append({
            "name": name, "module": module, "score": round(sum(t[0] for t in tests), 4),
            "max_score": round(sum(t[1] for t in tests), 4),
            "tests": [{"name": f"test_{i}", "status": "passed" if got == most else "failed", "score": got,
                       "max_score": most, "visibility": "visible" if i == 0 else "hidden",
                       "message": "" if got == most else "wrong", "duration_s": 0.01}
                      for i, (got, most) in enumerate(tests)]})
    data["score"] = round(sum(e["score"] for e in data["exercises"]), 4)
    data["max_score"] = round(sum(e["max_score"] for e in data["exercises"]), 4)
    VALIDATOR.validate(data)
    return data


def adjusted(data: dict, *adjustments: tuple[str, float, str], submitted_at: str | None = None) -> dict:
    """`data` as `grader gradebook` writes it: raw_score, adjustments, the clamped adjusted score."""
    data = {**data, "raw_score": data["score"],
            "adjustments": [{"kind": k, "points": p, "reason": r} for k, p, r in adjustments]}
    total = data["raw_score"] + sum(a["points"] for a in data["adjustments"])
    data["score"] = min(max(total, 0), data["max_score"])
    if submitted_at is not None:
        data["submitted_at"] = submitted_at
    VALIDATOR.validate(data)
    return data


def write_scores(directory: Path, submissions: dict[str, Iterable[str]]) -> Path:
    """DIR/<submission>.json for each, plus a summary.csv as `grader grade` writes."""
    directory.mkdir(parents=True, exist_ok=True)
    lines = ["submission,score,max_score"]
    for name, failed in submissions.items():
        data = make_score(name, failed)
        (directory / f"{name}.json").write_text(json.dumps(data, indent=1))
        lines.append(f"{name},{data['score']},{data['max_score']}")
    (directory / "summary.csv").write_text("\n".join(lines) + "\n")
    return directory


ROSTER_COLUMNS = ["submission", "name", "lms_user_id", "sis_user_id", "login", "email", "section", "lti_user_id"]
STUDENTS = [
    # submission, name, canvas id, sis id, login, email, section, lti sub
    ("ada", "Lovelace, Ada", "4711", "s1001", "alovelace", "ada@example.edu", "Section A", "lti-ada-6f1c"),
    ("bob", "Bob Stone", "4712", "s1002", "bstone", "bob@example.edu", "Section A", "lti-bob-77aa"),
    ("chen", 'Chen "CJ" Jun', "4713", "s1003", "cjun", "chen@example.edu", "Section B", "lti-chen-1b2c"),
    ("dara", "O'Neil, Dara", "4714", "s1004", "doneil", "dara@example.edu", "Section B", "lti-dara-9e8d"),
    ("eve", "Eve Noshow", "4715", "s1005", "enoshow", "eve@example.edu", "Section B", "lti-eve-0000"),
]


def write_roster(path: Path, students=STUDENTS, columns=ROSTER_COLUMNS) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for student in students:
            writer.writerow(student)
    return path


def class_scores(directory: Path) -> Path:
    """ada: all correct; bob: three exercises wrong; chen: hidden tests of two exercises wrong;
    dara: nothing right; eve: no submission; zed: a submission with no roster row."""
    return write_scores(directory, {
        "ada": [],
        "bob": list(THREE_WRONG),
        "chen": [f"{name}::test_hidden" for name in HIDDEN_WRONG],
        "dara": list(NAMES),
        "zed": [WRONG],
    })


def run_grader(capsys, *args) -> tuple[int, str, str]:
    """Run `grader ...` in-process; return (exit status, stdout, stderr)."""
    from grader.cli import main

    capsys.readouterr()
    try:
        code = main([str(a) for a in args])
    except SystemExit as exc:  # argparse refuses an argument: usage error, exit status 2
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err
