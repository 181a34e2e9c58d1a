"""Command line: `grader check`, `grader grade`, `grader export ...`.

Only argument parsing and printing live here; the work is done by the modules it calls.
Commands contributed by other modules register through `register(commands, exports)`.
Exit codes: 0 success; 1 a check that did not pass (`grade`: a submission got no score file);
2 bad usage or input (`grade`: nothing was graded or written); 3 a grading run stopped part-way by
a fault of the machine (a full disk); 70 a bug in the grader; 128+N a run stopped by signal N
(130: Ctrl-C, 143: SIGTERM). A stopped run keeps every score file it finished; `--resume` goes on.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shlex
import sys
import traceback
from pathlib import Path

from grader.errors import GraderError, RunStopped, UsageError

# Modules that add commands: each defines register(commands, exports), where `commands`
# is the top-level subparsers object and `exports` the subparsers of `grader export`.
EXTENSIONS: list[str] = ["grader.exports.bundle", "grader.exports.submit", "grader.exports.gradescope",
                         "grader.exports.otter", "grader.exports.notebook", "grader.validate.cli", "grader.lms.cli",
                         "grader.report.cli", "grader.policy.cli", "grader.similarity.cli"]


def _add_limit_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda", "auto"],
                   help="where student code runs its tensors (default: cpu)")
    p.add_argument("--timeout", type=float, default=None, metavar="S",
                   help="seconds one call into student code may take (default 10)")
    p.add_argument("--memory-mb", type=int, default=None, metavar="MB",
                   help="memory a worker may allocate beyond its start, CPU only (default 2048)")
    p.add_argument("--course", metavar="PATH", default=None,
                   help="the course file (or its folder) to use instead of the package's own course")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="grader", description="autograd-lab: check and grade the autograd problem set")
    commands = parser.add_subparsers(dest="command", required=True)

    check = commands.add_parser("check", help="run the public tests on your exercises (students)")
    check.add_argument("path", nargs="?", default="exercises", help="folder with your exercise modules (default: ./exercises)")
    check.add_argument("--exercise", action="append", metavar="NAME", help="only this exercise (repeatable)")
    check.add_argument("--watch", action="store_true",
                       help="stay on: check again each time you save a module (Ctrl-C to stop)")
    check.add_argument("-v", "--verbose", action="store_true",
                       help="show what passing tests printed too / 也显示通过的测试的输出")
    check.add_argument("--seed", type=int, default=None, metavar="N",
                       help="seed of the property checks' random inputs, to repeat a check (default: a fresh one, "
                            "printed) / 性质检查随机输入的种子，用于重现（默认每次新取并打印）")
    _add_limit_options(check)
    check.set_defaults(func=cmd_check)

    grade = commands.add_parser("grade", help="grade submissions with public and hidden tests (instructors)")
    grade.add_argument("submissions", nargs="+", metavar="SUBMISSION",
                       help="a submission folder or .zip; a folder of submissions is expanded")
    grade.add_argument("--out", required=True, type=Path, help="folder for <submission>.json and summary.csv")
    grade.add_argument("--jobs", "--workers", dest="jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                       help="grading processes run in parallel (default: CPU count; --workers is the old spelling)")
    grade.add_argument("--seed", type=int, default=0, help="seed of the hidden tests' random inputs (default 0)")
    grade.add_argument("--resume", action="store_true", help="keep score files that are done and current (same submission, seed, device and tests); "
                       "regrade the others and say why")
    grade.add_argument("--dask", metavar="ADDRESS", help="grade on a Dask cluster (tcp://host:8786), or 'local' "
                       "for a local cluster of --jobs processes (pip install 'autograd-lab[distributed]')")
    grade.add_argument("--worker-per-module", action="store_true",
                       help="run each module in a worker of its own (stronger isolation between modules, slower)")
    grade.add_argument("--hide", action="append", default=[], metavar="PATH",
                       help="another path workers must not see (the submissions and --out are never visible)")
    grade.add_argument("--debug", action="store_true",
                       help="print the traceback when the run stops on an error (to report a bug)")
    grade.add_argument("--no-counterexamples", dest="counterexamples", action="store_false",
                       help="no search for the smallest failing input of a failed exercise, and none in the score "
                            "files (an exam; the course file's `counterexamples: show: false` does the same)")
    _add_limit_options(grade)
    grade.set_defaults(func=cmd_grade)

    export = commands.add_parser("export", help="write a bundle or a gradebook file")
    exports = export.add_subparsers(dest="export_kind", required=True)
    for name in EXTENSIONS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if not (exc.name == name or name.startswith(f"{exc.name}.")):  # there, but lacks a dependency: say so
                raise
            continue  # the student bundle leaves the instructors' commands out
        module.register(commands, exports)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:  # every bad input (CatalogError, PolicyError, ReportError, LmsError...): one way
        if getattr(args, "debug", False):
            traceback.print_exc()
        print(f"grader: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted / 已中断", file=sys.stderr)
        return 130


def _options(args, folders: tuple[str, ...], exercises=None):
    from grader.host.options import Options, resolve_device
    from grader.protocol.limits import Limits

    limits = Limits()
    if args.timeout is not None:
        limits.call_timeout_s = args.timeout
        limits.exercise_budget_s = max(limits.exercise_budget_s, 2 * args.timeout)
    if args.memory_mb is not None:
        limits.memory_mb = args.memory_mb
    limits.worker_per_module = getattr(args, "worker_per_module", False)
    try:
        device = resolve_device(args.device)
    except GraderError as exc:
        raise UsageError(str(exc)) from None
    return Options(device=device, seed=getattr(args, "seed", 0), folders=folders, exercises=exercises,
                   limits=limits, extra_hidden=getattr(args, "hide", []),
                   counterexamples=getattr(args, "counterexamples", True),
                   course=str(Path(args.course).resolve()) if getattr(args, "course", None) else None)


# ----------------------------------------------------------------------------- grader check

def cmd_check(args) -> int:
    from grader import catalog

    path = Path(args.path)
    if not path.exists():
        raise UsageError(f"{path} does not exist: run this where your exercises/ folder is, or give its path "
                         f"/ 找不到 {path}：请在 exercises/ 所在目录运行，或给出它的路径")
    course = catalog.use(args.course)
    unknown = course.unknown_exercises(args.exercise or [])
    if unknown:  # said before torch and pytest are imported
        raise UsageError(unknown)
    if args.seed is None:
        import secrets

        args.seed = secrets.randbelow(1_000_000)
    if args.watch:
        from grader.host.watch import watch

        return watch(path, args.exercise, _options(args, ("public",)))
    from grader.display import check_table, use_color
    from grader.host.launcher import launcher_for
    from grader.host.lifecycle import stop_on_signals

    options = _options(args, ("public",), set(args.exercise) if args.exercise else None)
    options.show_output = options.fork_zygote = options.properties = True
    launcher = launcher_for(options, course)  # the zygote forked now: its warm-up overlaps pytest's import
    from grader.host.runner import Engine

    try:
        engine = Engine(options, launcher=launcher)
    except BaseException:
        launcher.close()
        raise
    try:
        with stop_on_signals():  # Ctrl-C stops the check, instead of failing the test it interrupted
            report = engine.grade(path)
    except GraderError as exc:
        raise UsageError(str(exc)) from None
    finally:
        engine.close()
    print(check_table(report, str(path), totals={e.name: e.max_score for e in course.exercises},
                      color=use_color(sys.stdout), verbose=args.verbose,
                      property_seed=options.seed if ran_properties(report, course) else None))
    return check_status(report)


def ran_properties(report: dict, course) -> bool:
    """Whether the check ran a property of at least one exercise."""
    named = {e.property_name for e in course.exercises if e.property_name}
    return any(t["name"] in named for e in report["exercises"] for t in e["tests"])


def check_status(report: dict) -> int:
    """`grader check`'s exit status: 0 when every check passed and the submission had no problem."""
    every_check_passed = all(t["status"] == "passed" for e in report["exercises"] for t in e["tests"])
    return 0 if every_check_passed and not report.get("submission_errors") else 1


# ----------------------------------------------------------------------------- grader grade

def expand_submissions(paths: list[str]) -> list[str]:
    """Each path is a submission, except a folder that holds no modules but holds submissions."""
    from grader.display import shown_name
    from grader.host.intake import PREFIXES, module_files

    out = []
    for p in paths:
        path = Path(p)
        if path.is_dir() and not any((path / prefix / m).exists() for prefix in PREFIXES for m in module_files()):
            children = sorted(c for c in path.iterdir()
                              if not c.name.startswith(".") and (c.is_dir() or c.suffix.lower() in (".zip", ".ipynb")))
            if children:
                print(f"{shown_name(str(path))}: a folder of {len(children)} submissions", file=sys.stderr)
                out += [str(c) for c in children]
                continue
        out.append(str(path))
    return out


def cmd_grade(args) -> int:
    from grader.display import grading_summary, stopped_run, vanished_submissions
    from grader.host.lifecycle import claim_out
    from grader.host.runner import grade_many

    from grader import catalog

    course = catalog.use(args.course)  # the modules that make a submission
    submissions = expand_submissions(args.submissions)
    missing = [s for s in submissions if not Path(s).exists()]
    if missing:
        raise UsageError(f"not found: {', '.join(missing)}")
    options = _options(args, ("public", "hidden"))
    options.extra_hidden += [str(Path(s).resolve()) for s in submissions] + [str(args.out.resolve())]
    workers = max(1, min(args.jobs, len(submissions)))
    resume = resume_command(args.argv)
    try:
        out_lock = claim_out(args.out)  # before the progress bar: a folder that cannot be used stops here
    except GraderError as exc:
        raise UsageError(str(exc)) from None
    try:
        with progress_display(len(submissions)) as progress:
            summary = grade_many(submissions, args.out, options, workers=workers, resume=args.resume,
                                 progress=progress, dask=args.dask, out_lock=out_lock)
    except RunStopped as exc:
        if args.debug:
            traceback.print_exc()
        done = exc.summary
        print(stopped_run(str(exc), len(done.written), len(done.skipped), done.total, done.summary_error,
                          exc.remedy, resume), file=sys.stderr)
        return 128 + exc.signum if exc.signum else 3
    except GraderError as exc:
        raise UsageError(str(exc)) from None
    except Exception as exc:  # a bug in the grader: say what to do, keep the traceback for --debug
        if args.debug:
            raise
        print(f"grader: internal error: {type(exc).__name__}: {exc}\n"
              f"  every score file written is complete; to go on, run: {resume}\n"
              "  to report it, run the same command with --debug for the traceback", file=sys.stderr)
        return 70
    finally:
        out_lock.release()
    for note in summary.notes:
        print(note, file=sys.stderr)
    print(grading_summary(summary.outlines, len(summary.skipped), summary.seconds, str(args.out), summary.regraded,
                          public_only=course.max_score(("hidden",)) == 0))
    if summary.vanished:
        print(vanished_submissions([(v.submission, v.message) for v in summary.vanished], resume), file=sys.stderr)
        return 1
    return 0


def resume_command(argv: list[str]) -> str:
    """The command line that goes on with a stopped run: the same one, with --resume."""
    return shlex.join(["grader", *argv] + ([] if "--resume" in argv else ["--resume"]))


class progress_display:
    """A rich progress bar with rate and time left when rich is installed, plain lines otherwise."""

    def __init__(self, total: int):
        self.total = total
        self.bar = None

    def __enter__(self):
        try:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                       TimeRemainingColumn)
        except ImportError:
            return self._plain
        self.bar = Progress(TextColumn("grading"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("left"),
                            TimeRemainingColumn(), TextColumn("{task.fields[last]}"), transient=False)
        self.bar.start()
        self.task = self.bar.add_task("grading", total=self.total, rate="", last="")
        return self._rich

    def _plain(self, report: dict, done: int, total: int) -> None:
        from grader.display import shown_name

        print(f"[{done}/{total}] {shown_name(report['submission'])}: {report['score']:g}/{report['max_score']:g}",
              file=sys.stderr)

    def _rich(self, report: dict, done: int, total: int) -> None:
        from rich.markup import escape  # a name is text, never rich markup

        from grader.display import shown_name

        last = f"{escape(shown_name(report['submission']))} {report['score']:g}"
        self.bar.update(self.task, total=total, completed=done, last=last)
        elapsed = self.bar.tasks[0].elapsed or 0
        if elapsed:
            self.bar.update(self.task, rate=f"{done / elapsed:.1f}/s")

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.stop()


if __name__ == "__main__":
    sys.exit(main())
