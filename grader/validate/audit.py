"""The audit `grader validate` runs on a course, and its table.

It checks, and names every failure:
- the course file, the stubs and the solutions agree: every exercise is defined in its module of
  both, and neither defines a public function or class the course does not list (a removed
  exercise's stub left behind), nor holds a module the course does not list; every exercise names
  its general case and shows a docstring example;
- the course file and the test folders agree, read before anything is graded: a test function the
  file does not list, or a listed test no file defines, stops the audit at once (the engine would
  refuse them after grading a whole submission);
- a worker-side helper (a function, graph or probe of the course's helper files) that no test
  names is reported as a warning, not a failure;
- the reference gets full marks, every test passed (docstring examples included), at each seed and
  on every device present; the stubs get 0;
- every learner mistake of the folder is well formed, loses points on its own exercise and no other,
  and a failed test of that exercise names its mistake id; every exercise has at least one; a
  device-specific one (DEVICE) loses nothing on the CPU and is checked so on its device where present;
- lazy answers derived from the reference (zeros, ones, random values of its structure, the right
  answers for public inputs only) score 0 on every exercise;
- the student bundle holds no hidden test, no solution, and only stubs.

Everything is graded by the engine, as `grader grade` grades: one pool of grading processes for the
submissions at the first seed, then the reference at the other seeds and devices. `only` (`grader
validate --exercise NAME`) grades that exercise's tests alone, with its own learner mistakes: the quick
check while writing one exercise; the full audit is still the one before a release.
"""

from __future__ import annotations

import ast
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from grader.catalog import FOLDERS, Catalog
from grader.cases import examples
from grader.display import pad
from grader.errors import GraderError, UsageError
from grader.exports import bundle
from grader.host.runner import Engine, Options, grade_many
from grader.validate import lazy, mistakes

DEFAULT_SEEDS = (0, 1, 2)
REFERENCE, STUBS = "reference", "stubs"


@dataclass
class Row:
    exercise: str
    module: str
    tests: str  # "public+hidden"
    points: float
    examples: int = 0
    mistakes_made: int = 0
    mistakes_caught: int = 0
    lazy_held: int = 0


@dataclass
class Audit:
    course: Catalog
    rows: list[Row] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    graded: int = 0  # submissions graded
    seconds: float = 0.0
    seeds: tuple[int, ...] = DEFAULT_SEEDS
    devices: tuple[str, ...] = ("cpu",)
    workers: int = 1
    warnings: list[str] = field(default_factory=list)  # worth a look, not a failure
    notes: list[str] = field(default_factory=list)  # what the table cannot say (device-specific mistakes)
    only: str | None = None  # the one exercise audited (--exercise)

    @property
    def ok(self) -> bool:
        return not self.problems


def devices_present() -> tuple[str, ...]:
    return ("cpu", "cuda") if torch.cuda.is_available() else ("cpu",)


def run(course: Catalog, mistakes_dir: Path | None, seeds: tuple[int, ...] = DEFAULT_SEEDS, workers: int | None = None,
        devices: tuple[str, ...] | None = None, scores_dir: Path | None = None,
        say=lambda line: print(line, file=sys.stderr), only: str | None = None) -> Audit:
    """Audit the course; every failure found is in the result's `problems`. `scores_dir`: keep the score
    files of the submissions graded at the first seed there (reference.json, stubs.json,
    mistake-<name>.json, lazy-<mode>.json, summary.csv). `only`: one exercise's tests and mistakes."""
    start = time.perf_counter()
    if only is not None and course.unknown_exercises([only]):
        raise UsageError(course.unknown_exercises([only]))
    audit = Audit(course, seeds=tuple(seeds), devices=devices or devices_present(),
                  workers=max(1, workers or os.cpu_count() or 1), only=only)
    rows = {e.name: Row(e.name, e.module, "+".join(str(sum(t.folder == f for t in e.tests)) for f in ("public", "hidden")),
                        e.max_score, len(examples.load(course).get(e.name, []))) for e in course.exercises
            if only in (None, e.name)}
    audit.rows = list(rows.values())
    audit.problems += agreement_problems(course, rows)
    tests_disagree = test_problems(course)
    audit.problems += tests_disagree
    audit.warnings += unused_helpers(course)
    corpus = mistakes.read_folder(mistakes_dir) if mistakes_dir else {}
    for name, entry in corpus.items():
        audit.problems += [f"learner mistake {name}: {p}" for p in mistakes.problems(entry, course)]
    usable = {name: e for name, e in corpus.items() if not mistakes.problems(e, course)
              and only in (None, e["EXERCISE"])}
    audit.notes += device_notes(usable, audit.devices)
    for entry in usable.values():  # a device-specific mistake counts where its device is present
        if mistakes.device_of(entry) in (None, *audit.devices):
            rows[entry["EXERCISE"]].mistakes_made += 1
    audit.problems += [f"{r.exercise}: no learner mistake in {mistakes_dir}" for r in rows.values() if not r.mistakes_made]
    if tests_disagree:
        say("validate: the course file and its tests disagree; nothing graded")
    elif all(course.place(p) is not None and course.place(p).is_dir() for p in ("stubs", "solutions")):
        with tempfile.TemporaryDirectory(prefix="autograd-lab-validate-") as tmp:
            grade_everything(course, Path(tmp), usable, audit, rows, say, scores_dir)
    audit.problems += bundle_problems(course)
    audit.seconds = time.perf_counter() - start
    return audit


def agreement_problems(course: Catalog, rows: dict[str, Row]) -> list[str]:
    """The course file against the stubs, the solutions and its own rules, read without running anything."""
    found = []
    for place in ("stubs", "solutions"):
        folder = course.place(place)
        if folder is None or not folder.is_dir():
            found.append(f"the course's {place} folder ({folder}) is not there: name it with `{place}:` in {course.path.name}")
            continue
        found += [f"{place}/{p.name}: a module {course.path.name} does not list (remove it, or list it under `modules:`)"
                  for p in sorted(folder.glob("*.py")) if p.name not in course.modules and p.name != "__init__.py"]
        for module in course.modules:
            path = folder / module
            try:
                defined = {n.name for n in ast.parse(path.read_text(encoding="utf-8")).body
                           if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
            except (OSError, SyntaxError) as exc:
                found.append(f"{place}/{module}: cannot be read ({type(exc).__name__}: {exc})")
                continue
            listed = course.exercises_in(module)
            found += [f"{e}: not defined in {place}/{module}" for e in listed if e not in defined and e in rows]
            found += [f"{place}/{module}: defines {name}, which {course.path.name} does not list: remove it (an exercise "
                      f"taken out of the course), list it under `exercises:`, or name it _{name} (a private helper)"
                      for name in sorted(defined) if name not in listed and not name.startswith("_")]
    for e in course.exercises:
        if e.name not in rows:
            continue
        if any(t.folder == "hidden" for t in e.tests) and not e.general:
            found.append(f"{e.name}: names no general case (`general:`), so no test's points depend on work")
        if not rows[e.name].examples:
            found.append(f"{e.name}: its stub's docstring shows no example (>>>)")
    return found


def test_functions(course: Catalog) -> dict[tuple[str, str], str]:
    """(folder, test name) -> the file defining it: every module-level `def test_*` of the course's test
    files (test_*.py in its public and hidden folders), read without importing them."""
    found = {}
    for folder in FOLDERS:
        base = course.folder(folder)
        for path in sorted(base.glob("test_*.py")) if base and base.is_dir() else []:
            try:
                tree = ast.parse(path.read_text(encoding="utf-8"))
            except (OSError, SyntaxError):
                continue  # the engine reports a file it cannot collect, with pytest's words
            for node in tree.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                    found.setdefault((folder, node.name), path.name)
    return found


def test_problems(course: Catalog) -> list[str]:
    """The course file against its test files, before anything is graded: a test the file does not list,
    and a listed test no test file defines."""
    defined = test_functions(course)
    listed = {(t.folder, t.name): e.name for e in course.exercises for t in e.tests}
    properties = {("public", e.property_name): e.name for e in course.exercises if e.property_name}
    found = [f"{folder}/{where}: {name} is not listed in {course.path.name}: list it under its exercise's "
             f"`{folder}:` with its points, or remove it" for (folder, name), where in sorted(defined.items())
             if (folder, name) not in listed and (folder, name) not in properties]
    found += [f"{exercise}: its property {name} is named in {course.path.name} but no test file of public/ "
              f"defines it" for (folder, name), exercise in sorted(properties.items()) if (folder, name) not in defined]
    found += [f"{exercise}: {folder} test {name} is listed in {course.path.name} but no test file of "
              f"{folder}/ defines it" for (folder, name), exercise in sorted(listed.items()) if (folder, name) not in defined]
    return found


HELPER_TABLES = ("FUNCTIONS", "GRAPHS", "PROBES")


def helper_names(path: Path) -> dict[str, str]:
    """Name -> table (FUNCTIONS, GRAPHS, PROBES) of a helper file's entries, read without running it."""
    names = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
            node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and target.id in HELPER_TABLES and isinstance(node.value, ast.Dict):
            names.update({k.value: target.id for k in node.value.keys
                          if isinstance(k, ast.Constant) and isinstance(k.value, str)})
    return names


def unused_helpers(course: Catalog) -> list[str]:
    """Helpers no test names: no string in the course's test folders (their tests and oracle) is their name."""
    strings: set[str] = set()
    for folder in FOLDERS:
        base = course.folder(folder)
        for path in sorted(base.rglob("*.py")) if base and base.is_dir() else []:
            if path.resolve() in {h.resolve() for h in course.helpers}:
                continue
            try:
                tree = ast.parse(path.read_text(encoding="utf-8"))
            except (OSError, SyntaxError):
                continue
            strings |= {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    found = []
    for helper in course.helpers:
        try:
            names = helper_names(helper)
        except (OSError, SyntaxError) as exc:
            found.append(f"{helper.name}: cannot be read ({type(exc).__name__})")
            continue
        unused = [f"{table}[{name!r}]" for name, table in names.items() if name not in strings]
        if unused:
            found.append(f"{helper.name}: no test names {', '.join(unused)}: remove it if its exercise left the course")
    return found


def device_notes(corpus: dict[str, dict], devices: tuple[str, ...]) -> list[str]:
    """Why a device-specific learner mistake scores full marks here, where its device is absent."""
    absent = {}
    for name, entry in corpus.items():
        device = mistakes.device_of(entry)
        if device and device not in devices:
            absent.setdefault(device, []).append(name)
    return [f"{len(names)} device-specific learner mistake(s) ({', '.join(names)}) are right on the CPU and "
            f"score full marks here: they are checked to lose nothing on the CPU, and caught on {device} only "
            f"where one is present (not on this machine)" for device, names in absent.items()]


def grade_everything(course: Catalog, tmp: Path, corpus: dict[str, dict], audit: Audit, rows: dict[str, Row], say,
                     scores_dir: Path | None) -> None:
    solutions, stubs = course.place("solutions"), course.place("stubs")
    paths = [write_submission(tmp / REFERENCE, course, solutions), write_submission(tmp / STUBS, course, stubs)]
    paths += [write_submission(tmp / f"mistake-{name}", course, solutions, mistakes.submission_modules(entry, course))
              for name, entry in corpus.items()]
    paths += [write_submission(tmp / f"lazy-{mode}", course, solutions, lazy.lazy_modules(course, mode))
              for mode in lazy.MODES]
    only = {audit.only} if audit.only else None
    options = Options(course=str(course.path), seed=audit.seeds[0], exercises=only)
    say(f"validate: grading {len(paths)} submissions (the reference, the stubs, {len(corpus)} learner mistakes, "
        f"{len(lazy.MODES)} lazy answers) with {audit.workers} workers")
    try:
        summary = grade_many([str(p) for p in paths], scores_dir or tmp / "scores", options, workers=audit.workers)
    except GraderError as exc:
        audit.problems.append(f"the course's tests cannot be graded: {exc}")
        return
    reports = {r["submission"]: r for r in summary.reports}
    audit.graded = len(reports)
    reference_problems(reports[REFERENCE], f"seed {audit.seeds[0]} on cpu", audit)
    if reports[STUBS]["score"] != 0:
        earned = {e["name"]: e["score"] for e in reports[STUBS]["exercises"] if e["score"]}
        audit.problems.append(f"the stubs earn points: {earned}")
    for name, entry in corpus.items():
        if mistakes.device_of(entry):  # right here on the CPU; caught on its device, below
            audit.problems += right_on_the_cpu_problems(name, entry, reports[f"mistake-{name}"])
            continue
        caught = mistake_problems(name, entry, reports[f"mistake-{name}"])
        audit.problems += caught
        rows[entry["EXERCISE"]].mistakes_caught += not caught
    for mode in lazy.MODES:
        for e in reports[f"lazy-{mode}"]["exercises"]:
            if e["score"]:
                audit.problems.append(f"{e['name']}: the lazy answer '{mode}' earns {e['score']:g} points")
            elif e["name"] in rows:
                rows[e["name"]].lazy_held += 1
    more = [(seed, device) for device in audit.devices for seed in audit.seeds if (seed, device) != (audit.seeds[0], "cpu")]
    for device in dict.fromkeys(d for _, d in more):
        say(f"validate: the reference at seeds {', '.join(str(s) for s, d in more if d == device)} on {device}")
        engine = Engine(Options(course=str(course.path), device=device, exercises=only))
        try:
            for seed in [s for s, d in more if d == device]:
                engine.options.seed = seed
                reference_problems(engine.grade(paths[0]), f"seed {seed} on {device}", audit)
                audit.graded += 1
        finally:
            engine.close()
    device_specific(course, tmp, corpus, audit, rows, say, only)


def device_specific(course: Catalog, tmp: Path, corpus: dict[str, dict], audit: Audit, rows: dict[str, Row], say,
                    only: set[str] | None = None) -> None:
    """The device-specific mistakes, graded on their device where it is present (elsewhere they are
    neither made nor caught in the table: only checked to lose nothing on the CPU)."""
    for device in dict.fromkeys(d for e in corpus.values() if (d := mistakes.device_of(e)) in audit.devices):
        names = [n for n, e in corpus.items() if mistakes.device_of(e) == device]
        say(f"validate: {len(names)} device-specific learner mistakes on {device}")
        engine = Engine(Options(course=str(course.path), device=device, seed=audit.seeds[0], exercises=only))
        try:
            for name in names:
                caught = mistake_problems(name, corpus[name], engine.grade(tmp / f"mistake-{name}"))
                audit.problems += caught
                rows[corpus[name]["EXERCISE"]].mistakes_caught += not caught
                audit.graded += 1
        finally:
            engine.close()


def write_submission(folder: Path, course: Catalog, base: Path, overrides: dict[str, str] | None = None) -> Path:
    """A submission folder: the course's modules from `base`, some replaced by `overrides`."""
    folder.mkdir(parents=True)
    for module in course.modules:
        if (base / module).is_file():
            shutil.copy(base / module, folder / module)
    for module, source in (overrides or {}).items():
        (folder / module).write_text(source, encoding="utf-8")
    return folder


def reference_problems(report: dict, where: str, audit: Audit) -> None:
    failing = [f"{e['name']}/{t['name']} {t['status']}: {t['message'].splitlines()[0][:160] if t['message'] else ''}"
               for e in report["exercises"] for t in e["tests"] if t["status"] != "passed"]
    audit.problems += [f"the reference at {where}: {f}" for f in failing]
    audit.problems += [f"the reference at {where}: {p}" for p in report.get("submission_errors", [])]
    if not failing and report["score"] != report["max_score"]:
        audit.problems.append(f"the reference at {where} scores {report['score']:g} of {report['max_score']:g}")


def mistake_problems(name: str, entry: dict, report: dict) -> list[str]:
    """Why the learner mistake is not caught as it should be ([] when it is)."""
    own = entry["EXERCISE"]
    lost = sorted(e["name"] for e in report["exercises"] if e["score"] < e["max_score"])
    if lost != [own]:
        return [f"learner mistake {name} should lose points on {own} only; it loses on {', '.join(lost) or 'nothing'}"]
    failed = [t for e in report["exercises"] if e["name"] == own for t in e["tests"] if t["status"] != "passed"]
    if not any((t.get("mistake") or {}).get("id") == entry["MISTAKE"] for t in failed):
        return [f"learner mistake {name}: no failed test of {own} names {entry['MISTAKE']}"]
    return []


def right_on_the_cpu_problems(name: str, entry: dict, report: dict) -> list[str]:
    """A device-specific mistake loses nothing on the CPU (one that does is an ordinary mistake)."""
    lost = sorted(e["name"] for e in report["exercises"] if e["score"] < e["max_score"])
    return [f"learner mistake {name} (DEVICE = {entry['DEVICE']!r}) loses points on the CPU, on {', '.join(lost)}: "
            "an ordinary mistake, without DEVICE"] if lost else []


def bundle_problems(course: Catalog) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="autograd-lab-validate-bundle-") as tmp:
        try:
            out = bundle.build_student_bundle(Path(tmp) / "student.zip", course)
        except UsageError as exc:
            return [f"the student bundle cannot be built: {exc}"]
        return [f"the student bundle: {p}" for p in bundle.check_bundle(out, course)]


# ============================================================================= the table

COLUMNS = ("exercise", "module", "tests", "points", "examples", "mistakes caught", "lazy answers held")


def table(audit: Audit) -> str:
    modes = len(lazy.MODES)
    cells = [COLUMNS] + [(r.exercise, r.module, r.tests, f"{r.points:g}", str(r.examples),
                          f"{r.mistakes_caught}/{r.mistakes_made}", f"{r.lazy_held}/{modes}") for r in audit.rows]
    audited = [e for e in audit.course.exercises if e.name in {r.exercise for r in audit.rows}]
    cells.append(("total", f"{len(dict.fromkeys(e.module for e in audited))} module{'' if len(dict.fromkeys(e.module for e in audited)) == 1 else 's'}", "+".join(
        str(sum(t.folder == f for e in audited for t in e.tests)) for f in ("public", "hidden")),
        f"{sum(e.max_score for e in audited):g}", str(sum(r.examples for r in audit.rows)),
        f"{sum(r.mistakes_caught for r in audit.rows)}/{sum(r.mistakes_made for r in audit.rows)}",
        f"{sum(r.lazy_held for r in audit.rows)}/{modes * len(audit.rows)}"))
    widths = [max(len(row[i]) for row in cells) for i in range(len(COLUMNS))]
    right = {2, 3, 4, 5, 6}
    lines = []
    for n, row in enumerate(cells):
        lines.append("  ".join(c.rjust(w) if i in right else pad(c, w) for i, (c, w) in enumerate(zip(row, widths))).rstrip())
        if n in (0, len(cells) - 2):
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def summary(audit: Audit) -> str:
    seeds = ", ".join(str(s) for s in audit.seeds)
    which = f"the exercise {audit.only} alone (the full audit: without --exercise)" if audit.only else \
        f"{len(audit.course.exercises)} exercises"
    lines = [f"course {audit.course.name} ({audit.course.path}): {which}; "
             f"{audit.graded} gradings in {audit.seconds:.1f} s with {audit.workers} workers; "
             f"the reference at seeds {seeds} on {', '.join(audit.devices)}"]
    lines += [f"  note: {n}" for n in audit.notes]
    lines += [f"  warning: {w}" for w in audit.warnings]
    if audit.ok:
        lines.append("every check held")
    else:
        lines.append(f"{len(audit.problems)} problem(s):")
        lines += [f"  ! {p}" for p in audit.problems]
    return "\n".join(lines)
