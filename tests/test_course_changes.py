"""The project's course-dependent tests stay green on a changed course: a copy with an exercise removed and
points changed, named by AUTOGRAD_LAB_TEST_COURSE (tests/conftest.py grades it instead of this one).

Those tests read the course (its exercises, points, solutions, stubs) rather than naming exercises:
the reference's full marks, the stubs' zero, every exercise and test listed, validate's reading of a
course that shrinks. A course changed as docs/authoring.md says must leave them green.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

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
