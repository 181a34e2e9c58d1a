"""`grader validate`: the course audit, run on this course as an instructor runs it, and the failures it names."""

from __future__ import annotations

from grader import catalog
from grader.validate import audit, lazy

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
