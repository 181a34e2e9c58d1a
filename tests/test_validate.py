"""`grader validate`: the course audit, run on this course as an instructor runs it, and the failures it names."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import course_copy
from grader import catalog
from grader.validate import audit, lazy

from conftest import ROOT

COURSE = catalog.load()


def test_validate_passes_on_this_course_and_prints_its_table(validated):
    assert validated.returncode == 0, validated.stdout + validated.stderr
    lines = validated.stdout.splitlines()
    header = lines[0].split()
    assert header[:4] == ["exercise", "module", "tests", "points"] and "caught" in lines[0] and "held" in lines[0]
    rows = {line.split()[0]: line.split() for line in lines[2:] if line.split() and line.split()[0] in COURSE.modules_by_function}
    assert list(rows) == [e.name for e in COURSE.exercises]
    for e in COURSE.exercises:
        row = rows[e.name]
        assert row[1] == e.module and row[3] == f"{e.max_score:g}"
        made, caught = row[-2].split("/")[1], row[-2].split("/")[0]
        assert int(made) >= 1 and caught == made, row
        assert row[-1] == f"{len(lazy.MODES)}/{len(lazy.MODES)}", row
    assert "every check held" in validated.stdout
    assert f"the reference at seeds {', '.join(str(s) for s in audit.DEFAULT_SEEDS)} on cpu" in validated.stdout


def test_validate_kept_the_score_files_it_graded(validated):
    reference, stubs = validated.report("reference"), validated.report("stubs")
    assert reference["score"] == reference["max_score"] == COURSE.max_score() and stubs["score"] == 0
    assert (validated.scores / "summary.csv").is_file()


def report(scores: dict[str, float], failed: dict[str, str] | None = None) -> dict:
    """A score file's shape, enough for the audit's checks: exercise -> score (max 5)."""
    failed = failed or {}
    return {"score": sum(scores.values()), "max_score": 5.0 * len(scores), "exercises": [
        {"name": name, "score": score, "max_score": 5.0, "tests": [
            {"name": "test_x", "status": "passed" if score == 5 else "failed", "message": "m",
             **({"mistake": {"id": failed[name]}} if name in failed else {})}]}
        for name, score in scores.items()]}


def test_a_mistake_must_cost_its_own_exercise_only_and_be_named():
    entry = {"EXERCISE": "hvp", "MISTAKE": "hvp.hvp_of_sum"}
    assert audit.mistake_problems("m", entry, report({"hvp": 2, "partial_grads": 5}, {"hvp": "hvp.hvp_of_sum"})) == []
    assert "loses on hvp, partial_grads" in audit.mistake_problems("m", entry, report({"hvp": 2, "partial_grads": 1}))[0]
    assert "loses on nothing" in audit.mistake_problems("m", entry, report({"hvp": 5, "partial_grads": 5}))[0]
    assert "names hvp.hvp_of_sum" in audit.mistake_problems("m", entry, report({"hvp": 0, "partial_grads": 5}))[0]


def test_a_reference_that_fails_a_test_is_a_problem():
    found = audit.Audit(COURSE)
    audit.reference_problems(report({"hvp": 5}), "seed 1 on cpu", found)
    assert found.problems == []
    audit.reference_problems(report({"hvp": 4}), "seed 1 on cpu", found)
    assert found.problems == ["the reference at seed 1 on cpu: hvp/test_x failed: m"]


# ============================================================================= a course that shrinks (read, not graded)

def test_an_exercise_left_in_the_stubs_and_tests_after_leaving_the_course_file_stops_the_audit_at_once(tmp_path):
    """Removing an exercise from the course file only: its stub and solution still define it (the bundle would
    tell students it "still raises NotImplementedError"), its tests are still in the test files. The audit
    names each, before grading anything (no table of zeros)."""
    course_file = course_copy.copy_course(tmp_path)
    data = course_copy.read(course_file)
    gone = next(n for n, e in data["exercises"].items() if e["module"] == COURSE.modules[-1])
    module, tests = data["exercises"][gone]["module"], [t.name for t in COURSE.exercise(gone).tests]
    del data["exercises"][gone]
    course_copy.write(course_file, data)
    said = []
    started = time.perf_counter()
    found = audit.run(catalog.load(course_file), None, say=said.append)
    assert time.perf_counter() - started < 60 and found.graded == 0, said
    assert not any("grading" in line for line in said) and any("nothing graded" in line for line in said)
    for place in ("stubs", "solutions"):
        assert any(p.startswith(f"{place}/{module}: defines {gone}, which course.yaml does not list") for p in found.problems)
    for test in tests:
        assert any(f": {test} is not listed in course.yaml" in p for p in found.problems), (test, found.problems)


def test_a_listed_test_no_file_defines_and_an_unused_helper_are_named_before_grading(tmp_path):
    course_file = course_copy.copy_course(tmp_path)
    data = course_copy.read(course_file)
    first = COURSE.exercises[0]
    data["exercises"][first.name]["hidden"]["test_nobody_wrote_this"] = 1
    course_copy.write(course_file, data)
    helpers = tmp_path / "cases" / COURSE.helper_files[0]
    helpers.write_text(helpers.read_text().replace("FUNCTIONS = {", 'FUNCTIONS = {\n    "left_behind": abs,', 1))
    course = catalog.load(course_file)
    assert audit.test_problems(course) == [
        f"{first.name}: hidden test test_nobody_wrote_this is listed in course.yaml but no test file of hidden/ defines it"]
    before = audit.unused_helpers(COURSE)
    warned = audit.unused_helpers(course)
    assert len(warned) == 1 and warned[0].startswith(f"{helpers.name}: no test names ") and "FUNCTIONS['left_behind']" in warned[0]
    assert warned[0].endswith(": remove it if its exercise left the course") and not any("left_behind" in w for w in before)


def test_an_exercise_removed_as_the_authoring_guide_says_leaves_nothing_to_report(tmp_path):
    course_file = course_copy.copy_course(tmp_path)
    gone = COURSE.exercises[-1].name
    course_copy.remove_exercise(course_file, gone)
    course = catalog.load(course_file)
    assert gone not in course.modules_by_function
    rows = {e.name: audit.Row(e.name, e.module, "", 0, 1) for e in course.exercises}
    assert audit.agreement_problems(course, rows) == [] and audit.test_problems(course) == []
    assert audit.unused_helpers(catalog.load(catalog.DEFAULT_COURSE)) == []  # this project's course uses all its helpers


def test_an_exercise_added_at_the_end_of_the_course_file_sits_with_its_module():
    data = course_copy.read(COURSE.path)
    first = next(iter(data["exercises"]))
    moved = {**{n: e for n, e in data["exercises"].items() if n != first}, first: data["exercises"][first]}
    course = catalog.parse({**data, "exercises": moved}, COURSE.path)
    module = COURSE.exercise(first).module
    others = [e.name for e in COURSE.exercises if e.name != first]
    after = max(i for i, n in enumerate(others) if COURSE.exercise(n).module == module)
    assert [e.name for e in course.exercises] == others[:after + 1] + [first] + others[after + 1:]
    assert [e.module for e in course.exercises] == sorted((e.module for e in course.exercises), key=course.modules.index)


def test_validate_one_exercise_grades_its_tests_and_mistakes_only(tmp_path):
    """`grader validate --exercise NAME`: the quick check while writing one exercise."""
    name = COURSE.exercises[0].name
    done = subprocess.run([sys.executable, "-m", "grader", "validate", "--exercise", name, "--seeds", "0",
                           "--scores", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [line.split()[0] for line in done.stdout.splitlines()[2:] if line.split() and line.split()[0] in COURSE.modules_by_function]
    assert rows == [name], done.stdout
    assert f"the exercise {name} alone" in done.stdout and "every check held" in done.stdout
    reference = json.loads((tmp_path / "reference.json").read_text())
    assert [e["name"] for e in reference["exercises"]] == [name]
    assert reference["score"] == reference["max_score"] == COURSE.exercise(name).max_score
    mistakes = {p.stem for p in tmp_path.glob("mistake-*.json")}
    assert mistakes and all(json.loads((tmp_path / f"{m}.json").read_text())["exercises"][0]["name"] == name for m in mistakes)


def test_device_specific_mistakes_are_explained_by_validate_and_by_the_demos_samples(tmp_path):
    """`make demo` grades the device-specific learner mistakes on the CPU, where they are right and score full marks:
    validate's summary and the sample maker both say so, naming them."""
    from grader.validate import mistakes

    corpus = mistakes.read_folder(COURSE.place("learner_mistakes"))
    device_specific = sorted(n for n, e in corpus.items() if mistakes.device_of(e))
    assert device_specific
    notes = audit.device_notes(corpus, ("cpu",))
    assert len(notes) == 1 and all(name in notes[0] for name in device_specific) and "score full marks" in notes[0]
    assert audit.device_notes(corpus, ("cpu", "cuda")) == []
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "make_submissions.py"), "--out", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"{len(device_specific)} of them" in done.stdout and "score full marks" in done.stdout
    assert all(f"wrong-{name}" in done.stdout for name in device_specific)
