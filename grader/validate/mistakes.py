"""The course's learner mistakes: a folder of realistic wrong submissions, one mistake a file.

Each file holds one learner mistake: the wrong function or class, a one-sentence docstring, and four
constants, read without running the file: EXERCISE (the exercise it breaks), MODULE (where that
exercise lives), PUBLIC ("pass" if `grader check` still passes the exercise, "fail" otherwise) and
MISTAKE (the id, `<exercise>.<key>` of the course file's mistakes, that a failed test of the exercise
must carry). The submission is the reference everywhere else: its MODULE is the solution's source
followed by the file's, whose later definitions replace the solution's.

A device-specific mistake (torch.zeros(n) on the default device, .numpy() on a GPU tensor, ...) is right
on the CPU and wrong on a GPU only. Its file adds DEVICE = "cuda" and ON_DEVICE: what the mistake does
there, either torch's error as recorded on a GPU ("Type: message") or RETURNS_ON_CPU (its result is
left on the CPU). PUBLIC then says what `grader check` does on that device.
"""

from __future__ import annotations

from pathlib import Path

from grader.catalog import Catalog, CatalogError, device_only, learner_mistakes, read_learner_mistake

CONSTANTS = ("EXERCISE", "MODULE", "PUBLIC", "MISTAKE")
RETURNS_ON_CPU = "returns a tensor on cpu"
read_entry = read_learner_mistake  # the course's reader (grader/catalog.py): the report reads the same files


def read_folder(folder: Path) -> dict[str, dict]:
    """Every learner mistake of the folder, by name (the file's stem)."""
    return learner_mistakes(folder)


def problems(entry: dict, course: Catalog) -> list[str]:
    """What is wrong with an entry itself (before grading it)."""
    missing = [c for c in CONSTANTS if c not in entry]
    if missing:
        return [f"missing {', '.join(missing)}"]
    if entry["EXERCISE"] not in course.modules_by_function:
        return [f"unknown exercise {entry['EXERCISE']!r}"]
    found = []
    exercise = course.exercise(entry["EXERCISE"])
    if exercise.module != entry["MODULE"]:
        found.append(f"{entry['EXERCISE']} lives in {exercise.module}, not {entry['MODULE']}")
    if entry["PUBLIC"] not in ("pass", "fail"):
        found.append("PUBLIC is 'pass' or 'fail'")
    prefix, _, key = str(entry["MISTAKE"]).partition(".")
    if prefix != entry["EXERCISE"]:
        found.append(f"the mistake id {entry['MISTAKE']!r} starts with its exercise")
    else:
        try:
            course.mistake(prefix, key)
        except CatalogError:
            found.append(f"the mistake {entry['MISTAKE']!r} is not in {course.path.name}")
    if not entry["doc"] or len(entry["doc"].splitlines()) != 1:
        found.append("say the mistake in a one-sentence docstring")
    if "DEVICE" in entry or "ON_DEVICE" in entry:
        if entry.get("DEVICE") != "cuda":
            found.append("DEVICE = 'cuda' is the only device-specific kind")
        on_device = str(entry.get("ON_DEVICE", ""))
        if on_device != RETURNS_ON_CPU and ": " not in on_device:
            found.append(f"ON_DEVICE is the error raised there ('Type: message') or {RETURNS_ON_CPU!r}")
    return found


device_of = device_only


def submission_modules(entry: dict, course: Catalog) -> dict[str, str]:
    """Module file -> source of the mistake's submission, for the module it changes (the reference's
    source, then the file's); the other modules are the reference's."""
    module = entry["MODULE"]
    source = (course.place("solutions") / module).read_text(encoding="utf-8") + "\n\n" + \
        Path(entry["path"]).read_text(encoding="utf-8")
    return {module: source}
