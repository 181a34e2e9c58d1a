"""The project's course-dependent tests stay green on a changed course: a copy with an exercise removed and
points changed, named by AUTOGRAD_LAB_TEST_COURSE (tests/conftest.py grades it instead of this one).

Those tests read the course (its exercises, points, solutions, stubs) rather than naming exercises:
the reference's full marks, the stubs' zero, every exercise and test listed, validate's reading of a
course that shrinks. A course changed as docs/authoring.md says must leave them green.

The LMS and gradebook tests take their class from tests/lms_factory.py, whose exercises are the course's:
they name exercises by role (WRONG, FIRST...), never by a name of this course, and pass on a changed one.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import course_copy
from grader import catalog

from conftest import ROOT

COURSE_DEPENDENT = ["tests/test_reference.py", "tests/test_validate.py"]
NEEDS_THIS_COURSE = "not validate_passes_on_this and not kept_the_score and not one_exercise"  # run `grader validate` on the default course


@pytest.mark.slow
def test_the_course_dependent_tests_pass_on_a_course_with_an_exercise_removed_and_points_changed(tmp_path):
    course_file = course_copy.copy_course(tmp_path / "course")
    this = catalog.load()
    gone = next(e.name for e in reversed(this.exercises) if e.name != "hvp")  # test_reference reads hvp's messages
    course_copy.remove_exercise(course_file, gone)
    data = course_copy.read(course_file)
    first = next(iter(data["exercises"]))
    test = next(iter(data["exercises"][first]["hidden"]))
    data["exercises"][first]["hidden"][test] += 2
    course_copy.write(course_file, data)
    changed = catalog.load(course_file)
    assert gone not in changed.modules_by_function
    assert changed.max_score() == this.max_score() - this.exercise(gone).max_score + 2
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *COURSE_DEPENDENT,
                           "-k", NEEDS_THIS_COURSE], cwd=ROOT, capture_output=True, text=True, timeout=1200,
                          env={**os.environ, "AUTOGRAD_LAB_TEST_COURSE": str(course_file)})
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert f"course: {course_file} ({len(changed.exercises)} exercises, {changed.max_score():g} points)" in done.stdout
    passed = re.search(r"(\d+) passed", done.stdout)
    assert passed and int(passed.group(1)) >= 10 and "failed" not in done.stdout.splitlines()[-1], done.stdout[-2000:]


# The tests whose score files come from tests/lms_factory.py: the class's exercises are the course's.
FACTORY_TESTS = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").glob("test_*.py")
                       if p.name != Path(__file__).name and "lms_factory" in p.read_text(encoding="utf-8"))

# of those, the ones that read score files (the documented commands and the browser are tested elsewhere)
SCORE_FILE_TESTS = [p for p in FACTORY_TESTS if p not in ("tests/test_doc_commands.py", "tests/test_report_browser.py")]
# Two report tests read this course's make-demo class (tests/report_class.py: its 7 submissions and the
# corpus's device-only mistakes), not the factory's: not yet derived from a changed course (issue 27's note).
NOT_ON_A_CHANGED_COURSE = ["tests/test_report_cli.py::test_markdown_goes_to_the_terminal",
                           "tests/test_report_cli.py::test_the_page_says_which_mistakes_only_show_on_a_device_naming_the_demos_samples"]


def exercise_names_in(path) -> set[str]:
    """The course's exercise names that a file's code or strings (not its comments) spell out."""
    import io
    import tokenize

    names = {e.name for e in catalog.load().exercises}
    found = set()
    for token in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline):
        if token.type in (tokenize.NAME, tokenize.STRING):
            found |= names & set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*", token.string))
    return found


def test_the_lms_factory_and_its_tests_name_no_exercise():
    """They take the class's exercises from the course (by role: WRONG, FIRST...), so that a changed course
    keeps them meaningful; a name of this course written into them would not be in another one."""
    assert len(FACTORY_TESTS) >= 10, FACTORY_TESTS
    spelled = {path: exercise_names_in(ROOT / path) for path in ["tests/lms_factory.py", *FACTORY_TESTS]}
    assert {path: names for path, names in spelled.items() if names} == {}


@pytest.mark.slow
def test_the_lms_tests_pass_on_a_course_with_exercises_removed_and_points_changed(tmp_path):
    """The first exercise and the factory's WRONG one removed, a test's points changed: the factory's class
    is the changed course's, and every test of SCORE_FILE_TESTS passes on it."""
    import lms_factory

    course_file = course_copy.copy_course(tmp_path / "course")
    for name in (lms_factory.FIRST, lms_factory.WRONG):
        course_copy.remove_exercise(course_file, name)
    data = course_copy.read(course_file)
    last = list(data["exercises"])[-1]
    test = next(iter(data["exercises"][last]["public"]))
    data["exercises"][last]["public"][test] += 1
    course_copy.write(course_file, data)
    catalog._load.cache_clear()
    changed = catalog.load(course_file)
    env = {**os.environ, "AUTOGRAD_LAB_TEST_COURSE": str(course_file)}
    names = subprocess.run([sys.executable, "-c", "import lms_factory; print(lms_factory.NAMES)"],
                           cwd=ROOT / "tests", capture_output=True, text=True, timeout=300, env=env)
    assert names.stdout.strip() == str([e.name for e in changed.exercises]), names.stdout + names.stderr
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *SCORE_FILE_TESTS,
                           *(f"--deselect={t}" for t in NOT_ON_A_CHANGED_COURSE)],
                          cwd=ROOT, capture_output=True, text=True, timeout=1200, env=env)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    passed = re.search(r"(\d+) passed", done.stdout)
    assert passed and int(passed.group(1)) >= 150 and "failed" not in done.stdout.splitlines()[-1], done.stdout[-2000:]
