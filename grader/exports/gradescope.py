"""`grader export gradescope`, and the grading run inside Gradescope, without otter.

It owns the Gradescope autograder zip (`setup.sh`, `run_autograder`, the package source under
`autograd_lab/`, `requirements.txt` with a CPU torch, `autograd_lab.json` with the seed and
device) and `run(root)`, which `run_autograder` calls: it grades `ROOT/submission` with the
sandboxed engine and writes `ROOT/results/results.json` per Gradescope's specification, one test
entry per test case. Hidden cases are `after_published`, named and with their hint, never their
inputs. A submission the grader could not grade (an ungradable score file, a crash) never gets a
score of its own: the last graded submission's results stand, or no results.json is written, which
Gradescope reports as an autograder error, not a 0 (`ungradable_results`). ROOT is `/autograder` on
Gradescope; `--root` or `AUTOGRADER_ROOT` points it elsewhere (the tests use a temporary folder).

Also shared with `grader.exports.otter`: the package source the instructor zips carry, their pinned CPU
torch, and where the engine must not let a worker look.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

from grader import catalog as catalog_module
from grader import score_files
from grader.errors import UsageError
from grader.policy import limits
from grader.exports.bundle import (CHECKOUT, DEFAULT_COURSE_PARTS, PACKAGE_DIR, add_course_option, course_package_files,
                                   package_files, write_zip)
from grader.safetext import clean_text
from grader.display import counterexample_lines
from grader.student_view import counterexample_view, fixed_texts, shown_message

TORCH_REQUIREMENT = "torch>=2.5,<2.14"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
SOURCE_DIR = "autograd_lab"  # the package source's folder in the instructor zips
CONFIG_FILE = "autograd_lab.json"
DEFAULT_ROOT = "/autograder"
OUTPUT_LIMIT = 10_000  # characters of a submission's text in one test's output
CRASHED = "! The autograder failed while grading. This is not a problem with your submission. / 评分程序出错，不是你的提交的问题。"
NO_RESULTS = ("autograd-lab: no results.json: this submission could not be graded and no earlier one was, so Gradescope "
              "records an autograder error ('The autograder failed to execute correctly'), not a score; fix the cause "
              "and rerun the autograder on it")

SOURCE_README = """\
# autograd-lab (grader package, instructor copy)

The grader package with its public and hidden test cases, shipped inside an autograder zip made by
`grader export gradescope` or `grader export otter`. Not for students: it holds the hidden tests.
"""

SETUP_SH = f"""\
#!/usr/bin/env bash
# autograd-lab: builds the Gradescope image (runs once, as root, with network access).
# A CPU-only torch from PyTorch's index, then this package from the source the zip carries.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends python3 python3-venv python3-pip
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install --upgrade pip
/autograder/venv/bin/pip install "{TORCH_REQUIREMENT}" --index-url {TORCH_CPU_INDEX}
/autograder/venv/bin/pip install -r /autograder/source/requirements.txt
# Workers run student code as an unprivileged user; where Gradescope allows no namespaces to hide
# the hidden tests from them, file permissions do.
chmod -R go-rwx /autograder/source/{SOURCE_DIR}/grader/cases/hidden
"""

RUN_AUTOGRADER = f"""\
#!/usr/bin/env bash
# autograd-lab: Gradescope runs this for every submission, as root, in /autograder. It grades
# submission/ with autograd-lab's sandboxed engine and writes results/results.json. A submission it
# could not grade gets no score of its own: the last graded submission's stands, or, without one (or
# should Python fail to start or die), no results.json at all, which Gradescope reports as an
# autograder error to rerun, not as a 0.
# AUTOGRADER_ROOT replaces /autograder (tests); AUTOGRAD_LAB_PYTHON the Python that grades.
root="${{AUTOGRADER_ROOT:-{DEFAULT_ROOT}}}"
python="${{AUTOGRAD_LAB_PYTHON:-$root/venv/bin/python}}"
[ -x "$python" ] || python=python3
results="$root/results/results.json"
mkdir -p "$root/results"
rm -f "$results"
cd "$root" || exit 1
"$python" -I -c 'import sys; sys.path.insert(0, sys.argv[1]); from grader.exports.gradescope import main; sys.exit(main(sys.argv[2:]))' \\
    "$root/source/{SOURCE_DIR}" --root "$root"
status=$?
if [ ! -s "$results" ]; then
    rm -f "$results"
    echo "autograd-lab: no results.json (exit status $status): Gradescope records an autograder error, not a score"
fi
if [ -n "${{AUTOGRADER_ROOT:-}}" ] && [ "$status" != 0 ]; then  # a local run: say it failed (Gradescope reads results.json)
    echo "autograd-lab: the autograder failed (exit status $status; the cause is above)" >&2
    echo "  it graded with $python (AUTOGRAD_LAB_PYTHON chooses it), which needs torch and the grader's dependencies" >&2
    exit "$status"
fi
exit 0
"""


# ============================================================================= export

def register(commands, exports) -> None:
    p = exports.add_parser("gradescope", help="a Gradescope autograder zip that runs the sandboxed engine, without otter")
    p.add_argument("--out", required=True, type=Path, help="the .zip to write")
    add_grading_options(p)
    p.set_defaults(func=cmd_export_gradescope)


def add_grading_options(p) -> None:
    p.add_argument("--seed", type=int, default=0, help="seed of the hidden tests' random inputs (default 0, as grader grade)")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda", "auto"],
                   help="where student code runs its tensors when grading (default: cpu)")
    p.add_argument("--max-submissions", type=int, metavar="N",
                   help="grade at most N submissions per student (in each --window); past that a submission is not "
                        "graded, keeps the last graded score and tells the student when the next one counts")
    p.add_argument("--window", type=float, metavar="HOURS",
                   help="with --max-submissions: count the graded submissions of the last HOURS hours "
                        "(default: the whole assignment)")
    add_course_option(p)


def submission_limit(args):
    """The --max-submissions/--window limit of an export, or None."""
    from grader.policy.limits import Limit

    try:
        return Limit.from_options(args.max_submissions, args.window)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def cmd_export_gradescope(args) -> int:
    course = catalog_module.use(args.course)
    out = build_gradescope_zip(args.out, seed=args.seed, device=args.device, limit=submission_limit(args), course=course)
    print(f"wrote {out}: upload it as the autograder of a Gradescope programming assignment; "
          f"students submit the zip that `grader submit` makes")
    return 0


def source_files(course: catalog_module.Catalog | None = None) -> dict[str, bytes]:
    """The package source an instructor zip carries, under autograd_lab/: with the course (public and
    hidden tests) in the place of the package's own."""
    pyproject = CHECKOUT / "pyproject.toml"
    if not pyproject.is_file():
        raise SystemExit(f"no pyproject.toml next to the grader package ({pyproject}): export from a source checkout")
    course = course or catalog_module.load()
    files = {f"{SOURCE_DIR}/{rel}": data for rel, data in package_files(("__pycache__",) + DEFAULT_COURSE_PARTS).items()}
    files.update({f"{SOURCE_DIR}/{rel}": data for rel, data in course_package_files(course, catalog_module.FOLDERS).items()})
    files[f"{SOURCE_DIR}/pyproject.toml"] = pyproject.read_bytes()
    files[f"{SOURCE_DIR}/README.md"] = SOURCE_README.encode()
    return files


def requirements_txt(autograder_dir: str = DEFAULT_ROOT) -> str:
    """A CPU torch and this package, installed from the source in the zip."""
    return (f"--extra-index-url {TORCH_CPU_INDEX}\n"
            f"{TORCH_REQUIREMENT}\n"
            f"-e {autograder_dir}/source/{SOURCE_DIR}\n")


def grading_config(seed: int, device: str, limit=None) -> bytes:
    config = {"seed": seed, "device": device, **(limit.as_config() if limit else {})}
    return (json.dumps(config, indent=2) + "\n").encode()


def build_gradescope_zip(out: Path, seed: int = 0, device: str = "cpu", limit=None,
                         course: catalog_module.Catalog | None = None) -> Path:
    files = {
        "setup.sh": SETUP_SH.encode(),
        "run_autograder": RUN_AUTOGRADER.encode(),
        "requirements.txt": requirements_txt().encode(),
        CONFIG_FILE: grading_config(seed, device, limit),
        **source_files(course),
    }
    return write_zip(out, files, executable=("setup.sh", "run_autograder"))


# ============================================================================= the run

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="grader.exports.gradescope", description="grade ROOT/submission for Gradescope")
    parser.add_argument("--root", type=Path, default=Path(os.environ.get("AUTOGRADER_ROOT", DEFAULT_ROOT)),
                        help=f"the autograder folder (default: $AUTOGRADER_ROOT or {DEFAULT_ROOT})")
    results = run(parser.parse_args(argv).root)
    return 1 if results is None or is_ungradable(results) else 0


def is_ungradable(results: dict) -> bool:
    """Whether a results.json stands for a submission the grader could not grade (its first line says so)."""
    return results.get("output", "").split("\n", 1)[0] == limits.UNGRADABLE


def say_failure(cause: str) -> None:
    """On stderr (the instructor's; hidden from students on Gradescope): the cause of a failed run, and
    what to change when it is the grading Python that lacks a module."""
    if not cause:
        return
    print(f"autograd-lab: the autograder could not grade: {cause}", file=sys.stderr)
    if "ModuleNotFoundError" in cause or "No module named" in cause:
        print(f"  the Python that grades ({sys.executable}) lacks it: install torch and the grader's dependencies "
              "there, or point AUTOGRAD_LAB_PYTHON at a Python that has them (the venv of `make setup`: "
              ".venv/bin/python)", file=sys.stderr)


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def run(root: Path) -> dict | None:
    """Grade ROOT/submission and write ROOT/results/results.json; returns what was written, or None when
    nothing was: a submission the grader could not grade, with no earlier graded one (`ungradable_results`)."""
    from grader.host.intake import load
    from grader.host.results import write_atomic

    root = Path(root)
    start = time.monotonic()
    cause = ""
    try:
        config = json.loads((root / "source" / CONFIG_FILE).read_text(encoding="utf-8"))
        limit = limits.Limit.from_config(config)
        verdict = limits.decide(limits.read_metadata(root), limit) if limit else None
        if verdict and not verdict.graded:
            results = limits.kept_results(verdict, time.monotonic() - start)
        else:
            protect_hidden_tests(root, zip_course(root))
            sub = load(submission_path(root / "submission"))
            with tempfile.TemporaryDirectory(prefix="autograd-lab-zip-course-") as tmp:
                report = grade(sub, seed=config.get("seed", 0), device=config.get("device", "cpu"),
                               secrets=secret_paths(root), course=course_to_grade(zip_course(root), Path(tmp)))
            if score_files.is_ungradable(report):
                cause = last_line(next(iter(report.get("submission_errors", [])), "")) or "ungradable"
                results = ungradable_results(student_summary(report), root, time.monotonic() - start)
            else:
                results = gradescope_results(report, time.monotonic() - start)
                if verdict:
                    results["output"] += "\n" + verdict.note
    except Exception:
        trace = traceback.format_exc()
        print(trace, file=sys.stderr)
        cause = last_line(trace)
        results = ungradable_results("\n".join([limits.UNGRADABLE, CRASHED]), root, time.monotonic() - start)
    target = root / "results" / "results.json"
    if results is None:
        target.unlink(missing_ok=True)
        print(NO_RESULTS)
    else:
        write_atomic(target, json.dumps(results, indent=2, ensure_ascii=False) + "\n")
        print(results.get("output", ""))
    say_failure(cause)
    return results


def submission_path(folder: Path) -> Path:
    """The submission folder, or the one zip in it when it holds no modules (an upload not unpacked)."""
    from grader.host.intake import load

    zips = sorted(p for p in folder.glob("*.zip") if p.is_file() and not p.is_symlink())
    if len(zips) == 1 and not load(folder).files:
        return zips[0]
    return folder


def secret_paths(root: Path) -> list[str]:
    """What a worker must not see beyond the engine's own list, in an autograder folder (ours or
    otter's): the submission as uploaded, the results, the run's configuration (its seed) and the
    students' names. The package it imports stays visible."""
    return [str(root / "submission"), str(root / "results"), str(root / "source" / CONFIG_FILE),
            str(root / "source" / "otter_config.json"), str(root / "submission_metadata.json")]


def zip_course(root: Path) -> Path | None:
    """The course file an autograder zip carries, unpacked under ROOT (its package's own course, in
    ROOT/source/autograd_lab/grader/cases/), or None. Grading uses it whichever grader package runs
    the zip: on Gradescope the zip's own, installed; in a local `otter run`, the instructor's."""
    found = Path(root) / "source" / SOURCE_DIR / "grader" / "cases" / "course.yaml"
    return found.resolve() if found.is_file() else None


def course_to_grade(course: Path | None, folder: Path) -> Path | None:
    """The course file that grades with the zip's course `course`: itself where the running grader is the
    zip's own package (Gradescope), else a copy of its folder in `folder` (a local run with the
    instructor's grader: the zip's course sits in a package named `grader` too, whose test modules
    would be taken for the installed one's)."""
    if course is None or course.parent.resolve() == catalog_module.DEFAULT_COURSE.parent.resolve():
        return course
    import shutil

    copy = Path(folder) / "zip_course"
    shutil.copytree(course.parent, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return copy / course.name


def grade(sub, seed: int, device: str, secrets: list[str], name: str = "submission",
          course: Path | None = None) -> dict:
    """One loaded submission through the engine, public and hidden tests: the score file that
    `grader grade` writes. A crash of the grader itself gives the complete score file of zeros
    that `grader grade` gives. `course`: the course file to grade with (the zip's, `zip_course`)."""
    from grader.host.runner import Engine, Options, failure_report, resolve_device

    sub.name = name
    options = Options(device=resolve_device(device), seed=seed, folders=("public", "hidden"),
                      extra_hidden=secrets, course=str(course) if course else None)
    engine = None
    try:
        engine = Engine(options, slot=os.getpid() % 4000)
        return engine.grade_loaded(sub)
    except Exception:
        return failure_report(name, options, "internal grader error:\n" + traceback.format_exc()[-3000:])
    finally:
        if engine is not None:
            engine.close()


def protect_hidden_tests(root: Path, course: Path | None = None) -> None:
    """Where no namespace hides them (a container that forbids unshare), the hidden tests are kept
    from the unprivileged worker user by their permissions: for the package copy under ROOT and the
    course the zip carries, never an instructor's own installation."""
    folders = [PACKAGE_DIR / "cases" / "hidden"] + ([catalog_module.load(course).folder("hidden")] if course else [])
    for hidden in dict.fromkeys(folders):
        if hidden.is_dir() and hidden.resolve().is_relative_to(Path(root).resolve()):
            os.chmod(hidden, 0o700)


# ============================================================================= results.json

def gradescope_results(report: dict, execution_time: float) -> dict:
    """A score file as Gradescope's results.json: one test entry per test case."""
    tests = []
    for i, exercise in enumerate(report["exercises"], 1):
        first_failed = next((t for t in exercise["tests"] if t["status"] != "passed" and t["visibility"] == "hidden"), None)
        for j, test in enumerate(exercise["tests"], 1):
            hidden = test["visibility"] == "hidden"
            tests.append({
                "name": clean_text(f"{exercise['name']}: {test['name']}", 200, one_line=True),
                "number": f"{i}.{j}",
                "score": test["score"],
                "max_score": test["max_score"],
                "status": "passed" if test["status"] == "passed" else "failed",
                "visibility": "after_published" if hidden else "visible",
                "output": case_output(test, report) + (counterexample_output(exercise) if test is first_failed else ""),
                "tags": [exercise["module"], exercise["name"]],
            })
    return {
        "score": report["score"],
        "execution_time": round(execution_time, 3),
        "output": student_summary(report),
        "output_format": "text",
        "test_output_format": "text",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {"autograd_lab": {
            key: [clean_text(e, OUTPUT_LIMIT) for e in report[key]] if key == "submission_errors" else report[key]
            for key in ("status", "max_score", "device", "torch_version", "grader_version", "seed", "source_sha256",
                        "submission_errors", "sandbox") if key in report}},
    }


def student_summary(report: dict) -> str:
    """What a student may read before grades are published: public results and submission problems."""
    public = [t for e in report["exercises"] for t in e["tests"] if t["visibility"] == "visible"]
    passed = sum(t["status"] == "passed" for t in public)
    if score_files.is_ungradable(report):  # the first line, where the submission limit looks (limits.was_graded)
        return "\n".join([limits.UNGRADABLE] + [f"! {clean_text(p, OUTPUT_LIMIT)}" for p in report.get("submission_errors", [])])
    lines = [f"autograd-lab: {passed} of {len(public)} public tests passed. Hidden tests, with other inputs, "
             f"show when grades are published.",
             f"公开测试通过 {passed}/{len(public)}；隐藏测试的结果在成绩发布后显示。"]
    problems = [f"! {clean_text(problem, OUTPUT_LIMIT)}" for problem in report.get("submission_errors", [])]
    return "\n".join(lines + problems)


def case_output(test: dict, report: dict) -> str:
    """Status, the message as its student may read it, and the hint (the test's docstring).

    A hidden test's message is shown only where it is the grader's own text (grader.student_view):
    messages can quote what the submission raised or chose while it held a hidden test's inputs,
    and a student must not read those inputs back from Gradescope. A submission's text is cleaned
    (grader.safetext) before Gradescope stores and shows it."""
    parts = [test["status"]]
    message = shown_message(test, {e["name"] for e in report["exercises"]}, fixed_texts(),
                            tuple(report.get("submission_errors", [])))
    if message:
        parts.append(clean_text(message, OUTPUT_LIMIT))
    if test.get("hint"):
        parts.append("checks: " + test["hint"])
    return "\n".join(parts)


def counterexample_output(exercise: dict) -> str:
    """The exercise's counterexample (grader.student_view.counterexample_view: shown whole), cleaned, on
    its first failed hidden test's output (shown when grades are published, as the hidden tests are); "" without one."""
    view = counterexample_view(exercise.get("counterexample"))
    if view is None:
        return ""
    return "\n" + clean_text("\n".join(counterexample_lines(view)), OUTPUT_LIMIT)


def ungradable_results(reason: str, root: Path, execution_time: float) -> dict | None:
    """What Gradescope gets for a submission the grader could not grade (`reason`: the student's summary,
    its first line limits.UNGRADABLE): never a score of its own, for Gradescope's results.json has no such
    status and any score it holds is the student's grade. With an earlier graded submission in the
    metadata, that one's results and score stand, `reason` first (Gradescope's documented way for a
    student to keep their last valid score, as past the submission limit). Without one, None: no
    results.json, which Gradescope reports as "The autograder failed to execute correctly", an autograder
    error the instructor can rerun, which the submission limit does not count."""
    kept = limits.last_graded(limits.read_metadata(root))
    return None if kept is None else limits.kept_when_ungradable(kept, reason, execution_time)


if __name__ == "__main__":
    sys.exit(main())
