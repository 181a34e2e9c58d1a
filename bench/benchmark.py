"""Benchmark: grading a class with `grader grade` against `otter run`, and the in-process floor.

    make bench                                # 200 submissions, both sides on 2 CPUs; README's table
    python bench/benchmark.py --n 50 --otter-sample 4

It makes N submissions (cycling through the reference, the stubs and every learner mistake of
tests/submissions/wrong/), pins itself and everything it starts to --cpus CPUs, then measures,
on this machine, in one run:

1. `grader grade CLASS --jobs W`: wall time from the command's start to its end (process
   start, imports, zygotes and pool included), divided by N.
2. `otter run -a <our otter autograder> SUBMISSION` on a sample of the same submissions, W at a
   time (each run starts a fresh kernel and imports torch; our plugin then grades with the same
   tests), wall time divided by the sample size. The `otter` is the one installed beside this
   Python (the venv's, whatever PATH says); without it, or when a run fails, the benchmark fails
   and says why: a comparison that did not run is never reported as one.
3. The in-process floor: one process grading the reference with the same pytest run over the
   same hidden cases, but with the student code called directly in that process (no worker,
   no sandbox, no socket). Next to it, the same process grading the reference with isolation,
   so that the difference is the cost of isolation per submission.
4. How far from the limit: the student code's own time per reference submission, as the worker
   measures each call (its `elapsed`: finding the function, running it and its probe), and the
   ratio of each per-submission time above to it; and what the worker's integrity checks after
   each call and each step of student code (the seal, torch's namespaces, settling) cost a reference
   submission: the calls and steps of one grading counted, each check timed in a process like a worker's.
5. One late hand-in: `grader grade one.zip` (the reference, zipped; process start-up included)
   against a cold `grader check` of the same code, each --single-runs times (median).

Results go to stdout (the figures and the machine) and to <out>/benchmark.json; with --readme,
the table between README's `bench:begin` and `bench:end` markers is regenerated from them, with
the date and the machine. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from make_submissions import make_class  # noqa: E402


def grader_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "grader", *args]


def time_grader(klass: Path, out: Path, workers: int, *extra: str, cpu: list | None = None) -> float:
    """Wall seconds of one `grader grade` of the class; its CPU seconds (user and system, of it and of what
    it started and waited for) appended to `cpu`."""
    shutil.rmtree(out, ignore_errors=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    run_checked(grader_command("grade", str(klass), "--out", str(out), "--jobs", str(workers), *extra), "grader grade")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if cpu is not None:
        cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    graded = len([p for p in out.glob("*.json")])
    expected = len(list(klass.iterdir()))
    if graded != expected:
        raise BenchmarkError(f"grader grade wrote {graded} score files for {expected} submissions")
    return wall


def floor_and_isolated(repeats: int) -> dict[str, float]:
    """Seconds per reference submission in one process: no isolation at all, then isolated; and,
    for the isolated one, where its extra time goes: starting the worker (the zygote's fork,
    namespaces, limits, seal, loading the submission), ending it (its exit and its namespace's
    clean-up), and the rest (the calls' round trips to another process instead of a thread)."""
    from inprocess import InProcessEngine

    from grader.host import student_code
    from grader.host.runner import Engine, Options

    out: dict[str, float] = {}
    spent = {"start": 0.0, "end": 0.0}
    student = {"s": 0.0}
    for label, cls in (("in_process_floor_s", InProcessEngine), ("isolated_same_process_s", Engine)):
        engine = cls(Options()) if cls is InProcessEngine else cls(Options(), ahead=True)  # as `grader grade` a class
        try:
            engine.grade(ROOT / "solutions")  # first run imports the test modules
            spent.update(start=0.0, end=0.0)
            student["s"] = 0.0
            with timed(student_code.StudentCode, "_ensure_worker", spent, "start", only_if=lambda s, m: s._slot(m) not in s.workers), \
                    timed(student_code.StudentCode, "close", spent, "end"), summed_elapsed(student):
                start = time.perf_counter()
                for _ in range(repeats):
                    report = engine.grade(ROOT / "solutions")
                out[label] = (time.perf_counter() - start) / repeats
            assert report["score"] == report["max_score"], report["score"]
            if cls is Engine:
                out["student_code_s"] = student["s"] / repeats
            else:
                out.update(integrity_checks(engine))
        finally:
            engine.close()
    out["isolated_worker_start_s"] = spent["start"] / repeats
    out["isolated_worker_end_s"] = spent["end"] / repeats
    return out


# Timed in a process of its own that imports what a worker imports: the seal's snapshot covers every
# grader module loaded, and this process has loaded many more than a worker has.
_CHECKS_TIMER = """
import json, sys, tempfile, timeit
from grader.sandboxed import guard, worker, zygote  # noqa: F401  (what a worker's zygote imports)
worker.prepare_process(sys.argv[1:])
guarded = worker.Worker(None, tempfile.mkdtemp()).guarded()
def each(check, n=400):
    check()
    return timeit.timeit(check, number=n) / n
print(json.dumps({"seal_s": each(lambda: guarded.check(guarded.snapshot)),
                  "namespaces_s": each(lambda: guarded.restore_namespaces(guarded.namespaces)),
                  "settle_s": each(lambda: guard.settle(guarded.relied))}))
"""


def integrity_checks(engine) -> dict[str, float]:
    """What the worker's integrity checks cost one reference submission, in seconds: after each call,
    the seal (`grader.sandboxed.seal.check`) and torch's namespaces put back
    (`guard.restore_namespaces`); after each step of student code, `guard.settle`. The calls and
    steps of one grading by `engine` (the in-process one, warm) are counted; each check is timed in
    a process like a worker's."""
    from grader.sandboxed import guard, worker

    counts = {"calls": 0, "steps": 0}
    original_step, original_call = guard.step, worker.Worker.call

    def counted_step(*args, **kwargs):
        counts["steps"] += 1
        return original_step(*args, **kwargs)

    def counted_call(self, *args, **kwargs):
        counts["calls"] += 1
        return original_call(self, *args, **kwargs)

    guard.step, worker.Worker.call = counted_step, counted_call
    try:
        engine.grade(ROOT / "solutions")
    finally:
        guard.step, worker.Worker.call = original_step, original_call
    helpers = [str(p) for p in engine.catalog.helpers]
    result = subprocess.run([sys.executable, "-c", _CHECKS_TIMER, *helpers], capture_output=True, text=True,
                            cwd=ROOT)
    if result.returncode != 0:
        raise BenchmarkError(f"timing the worker's checks failed: {result.stderr.strip()[-2000:]}")
    each = json.loads(result.stdout)
    total = counts["calls"] * (each["seal_s"] + each["namespaces_s"]) + counts["steps"] * each["settle_s"]
    return {"checks_calls": counts["calls"], "checks_steps": counts["steps"], "checks_seal_s": each["seal_s"],
            "checks_namespaces_s": each["namespaces_s"], "checks_settle_s": each["settle_s"],
            "integrity_checks_s": total}


@contextlib.contextmanager
def summed_elapsed(total: dict):
    """Add every call's `elapsed` (the student code's own time, measured inside the worker) to total["s"]."""
    from grader.host import student_code

    original = student_code.StudentCode.call

    def wrapper(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        total["s"] += result.elapsed
        return result

    student_code.StudentCode.call = wrapper
    try:
        yield
    finally:
        student_code.StudentCode.call = original


def median_wall(command: list[str], runs: int, cwd: Path, what: str) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True, cwd=cwd)
        times.append(time.perf_counter() - start)
        if result.returncode not in (0, 1):  # grader check exits 1 when a check fails
            raise BenchmarkError(f"{what} failed (exit {result.returncode}): {' '.join(command)}\n  "
                                 + "\n  ".join((result.stdout + result.stderr).strip().splitlines()[-15:]))
    return sorted(times)[len(times) // 2]


def single_and_check(runs: int, work: Path) -> dict[str, float]:
    """`grader grade one.zip` (the reference, zipped) and a cold `grader check` of the same code."""
    import zipfile

    one = work / "one.zip"
    with zipfile.ZipFile(one, "w") as z:
        for path in sorted((ROOT / "solutions").glob("*.py")):
            z.write(path, path.name)
    out = work / "single-out"
    grade = median_wall(grader_command("grade", str(one), "--out", str(out), "--jobs", "1"), runs, work,
                        "grader grade one.zip")
    check = median_wall(grader_command("check", str(ROOT / "solutions")), runs, work, "grader check")
    return {"single_grade_s": grade, "cold_check_s": check, "single_to_check": grade / check}


@contextlib.contextmanager
def timed(cls, name: str, totals: dict, key: str, only_if=None):
    """Add the wall time of `cls.name`'s calls (those for which only_if(self, ...) holds) to totals[key]."""
    original = getattr(cls, name)

    def wrapper(self, *args, **kwargs):
        if only_if is not None and not only_if(self, *args, **kwargs):
            return original(self, *args, **kwargs)
        start = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            totals[key] += time.perf_counter() - start

    setattr(cls, name, wrapper)
    try:
        yield
    finally:
        setattr(cls, name, original)


class BenchmarkError(Exception):
    """The comparison cannot run as asked: said on stderr, and the benchmark exits 1."""


def venv_otter() -> Path:
    """The `otter` installed beside this Python (the venv's bin/); never one found on PATH."""
    path = Path(sys.executable).parent / "otter"
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise BenchmarkError(f"otter-grader is not installed beside {sys.executable} (no {path}): "
                             "`make setup` installs it (the [dev] extra), or pass --otter-sample 0 to leave "
                             "the comparison out knowingly")
    return path


def run_checked(command: list[str], what: str) -> None:
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip().splitlines()[-15:]
        raise BenchmarkError(f"{what} failed (exit {result.returncode}): {' '.join(command)}\n  "
                             + "\n  ".join(output))


def time_otter(klass: Path, sample: int, workers: int, work: Path) -> tuple[float, int]:
    """Seconds per submission of `otter run`, `workers` runs at a time, on `sample` submissions."""
    otter = venv_otter()
    autograder = work / "otter-autograder.zip"
    run_checked(grader_command("export", "otter", "--out", str(autograder)), "grader export otter")
    folders = sorted(klass.iterdir())
    chosen = folders[:: max(1, len(folders) // sample)][:sample]
    forms = []
    for folder in chosen:
        form = work / "forms" / f"{folder.name}.zip"
        form.parent.mkdir(parents=True, exist_ok=True)
        run_checked(grader_command("submit", str(folder), "--out", str(form)), "grader submit")
        forms.append(form)

    def run(form: Path) -> None:
        out = work / "otter-out" / form.stem
        out.mkdir(parents=True, exist_ok=True)
        run_checked([str(otter), "run", "-a", str(autograder), "-o", str(out), "--no-logo", str(form)], "otter run")
        if not (out / "results.json").is_file() and not any(out.iterdir()):
            raise BenchmarkError(f"otter run wrote no results for {form.name}")

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(run, forms))
    return (time.perf_counter() - start) / len(forms), len(forms)


def pin_cpus(count: int) -> list[int]:
    """Run this process and all it starts on `count` of the CPUs it may use; the CPUs chosen."""
    available = sorted(os.sched_getaffinity(0))
    if count > len(available):
        raise BenchmarkError(f"--cpus {count}: only {len(available)} CPUs are available here")
    chosen = available[:count]
    os.sched_setaffinity(0, chosen)
    return chosen


def describe_machine(cpus: list[int]) -> str:
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        memory_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
        memory = f", {memory_gib:.0f} GiB memory"
    except (ValueError, OSError):
        memory = ""
    import torch
    return (f"{model}, {platform.machine()}, {len(cpus)} of {os.cpu_count()} CPUs{memory}, "
            f"{platform.system()} {platform.release()}, Python {platform.python_version()}, torch {torch.__version__}")


def with_and_without(klass: Path, args) -> dict:
    """Grading time with and without counterexamples (the search for a failed exercise's smallest failing
    input), interleaved: without, with, without, ... (--rounds runs with, one more without), so that a change
    of the machine's load shows as the "without" runs disagreeing; wall and CPU seconds of each run."""
    without, with_, cpu_without, cpu_with = [], [], [], []
    for _ in range(args.rounds):
        without.append(time_grader(klass, args.out / "scores-plain", args.workers, "--no-counterexamples", cpu=cpu_without))
        with_.append(time_grader(klass, args.out / "scores", args.workers, cpu=cpu_with))
    without.append(time_grader(klass, args.out / "scores-plain", args.workers, "--no-counterexamples", cpu=cpu_without))
    wall = sum(with_) / len(with_)
    found = [json.loads(p.read_text()) for p in (args.out / "scores").glob("*.json")]
    return {"grader_wall_s": wall, "grader_s_per_submission": wall / args.n,
            "with_counterexamples_wall_s": with_, "without_counterexamples_wall_s": without,
            "with_counterexamples_cpu_s": cpu_with, "without_counterexamples_cpu_s": cpu_without,
            "counterexample_cost_share": wall / mean(without) - 1,
            "counterexample_cpu_share": mean(cpu_with) / mean(cpu_without) - 1,
            "load_average_at_end_of_with_and_without": os.getloadavg()[0],
            "counterexamples_found": sum(1 for r in found for e in r["exercises"] if "counterexample" in e)}


def seconds(values: list[float]) -> str:
    return " and ".join(f"{v:.1f} s" for v in values)


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def measure(args) -> dict:
    cpus = pin_cpus(args.cpus)
    args.out.mkdir(parents=True, exist_ok=True)
    klass = args.out / "class"
    shutil.rmtree(klass, ignore_errors=True)
    make_class(klass, total=args.n)
    figures = {"date": time.strftime("%Y-%m-%d", time.gmtime()), "machine": describe_machine(cpus),
               "load_average_at_start": os.getloadavg()[0],
               "submissions": args.n, "workers": args.workers, "cpus": len(cpus)}
    if args.otter_sample and not args.counterexamples_only:
        venv_otter()  # before the long part: a missing otter fails now, not after minutes
    figures.update(with_and_without(klass, args))
    if args.counterexamples_only:
        return figures
    figures.update(floor_and_isolated(args.repeats))
    figures["isolation_overhead_s"] = figures["isolated_same_process_s"] - figures["in_process_floor_s"]
    figures["isolation_overhead_share"] = figures["isolation_overhead_s"] / figures["in_process_floor_s"]
    if figures.get("student_code_s"):
        for key in ("grader_s_per_submission", "in_process_floor_s", "isolated_same_process_s"):
            figures[f"{key}_to_student"] = figures[key] / figures["student_code_s"]
    if args.single_runs:
        with tempfile.TemporaryDirectory() as work:
            figures.update(single_and_check(args.single_runs, Path(work)))
    if args.otter_sample:
        with tempfile.TemporaryDirectory() as work:
            per, count = time_otter(klass, args.otter_sample, args.workers, Path(work))
        figures["otter_s_per_submission"] = per
        figures["otter_sample"] = count
        figures["throughput_ratio"] = per / figures["grader_s_per_submission"]
    return figures


def table(f: dict) -> str:
    """README's table: the figures of one run, its date and its machine."""
    rows = [f"Measured with `make bench` (`bench/benchmark.py`) on {f['date']}, on {f['machine']}; "
            f"{f['submissions']} submissions (the reference, the stubs and the learner mistakes, cycled), "
            f"both sides on the same {f['cpus']} CPUs, {f['workers']} at a time, in one run "
            f"(load average {f['load_average_at_start']:.2f} at its start):",
            "",
            "| | seconds per submission |",
            "| --- | --- |",
            f"| `grader grade --jobs {f['workers']}` (start-up included: {seconds(f['with_counterexamples_wall_s'])} for the "
            f"class, {seconds(f['with_counterexamples_cpu_s'])} CPU; {f['counterexamples_found']} counterexamples found) "
            f"| {f['grader_s_per_submission']:.3f} |",
            f"| the same with `--no-counterexamples` (one run before each of those and one after: "
            f"{seconds(f['without_counterexamples_wall_s'])}, {seconds(f['without_counterexamples_cpu_s'])} CPU) "
            f"| {mean(f['without_counterexamples_wall_s']) / f['submissions']:.3f} |",
            f"| counterexamples' cost (target: at most 15% more) | {100 * f['counterexample_cost_share']:+.1f}% wall, "
            f"{100 * f['counterexample_cpu_share']:+.1f}% CPU |"]
    if "in_process_floor_s" not in f:  # --counterexamples-only
        return "\n".join(rows)
    if "otter_s_per_submission" in f:
        rows += [f"| `otter run` with the exported autograder, {f['workers']} at a time (sample of {f['otter_sample']}) "
                 f"| {f['otter_s_per_submission']:.3f} |",
                 f"| throughput ratio | {f['throughput_ratio']:.1f}x |"]
    else:
        rows.append("| `otter run` | not measured (--otter-sample 0) |")
    rows += [f"| in-process floor: the reference over the same cases, no isolation, one process | {f['in_process_floor_s']:.3f} |",
             f"| the same with isolation, one process | {f['isolated_same_process_s']:.3f} |",
             f"| isolation overhead (fork, namespaces, limits, socket round trips) | {f['isolation_overhead_s']:.3f} "
             f"({100 * f['isolation_overhead_share']:.0f}% of the floor) |",
             f"| of the isolated time: starting the worker (fork, namespaces, limits, seal, loading the submission) "
             f"| {f['isolated_worker_start_s']:.3f} |",
             f"| of the isolated time: ending it (its exit, its namespace's clean-up) | {f['isolated_worker_end_s']:.3f} |"]
    if f.get("student_code_s"):
        rows += [f"| the student code's own time (the reference; every call's time measured inside the worker) "
                 f"| {f['student_code_s']:.4f} |",
                 f"| the worker's integrity checks (the seal, {1e3 * f['checks_seal_s']:.3f} ms, and torch's namespaces, "
                 f"{1e3 * f['checks_namespaces_s']:.3f} ms, after each of {f['checks_calls']} calls; settling, "
                 f"{1e3 * f['checks_settle_s']:.3f} ms, after each of {f['checks_steps']} steps of student code) "
                 f"| {f['integrity_checks_s']:.4f} |",
                 f"| how far from it: `grader grade`, the floor, the isolated grading | "
                 f"{f['grader_s_per_submission_to_student']:.0f}x, {f['in_process_floor_s_to_student']:.0f}x, "
                 f"{f['isolated_same_process_s_to_student']:.0f}x |"]
    if "single_grade_s" in f:
        rows += [f"| one hand-in: `grader grade one.zip --jobs 1` (start-up included; median) | {f['single_grade_s']:.2f} |",
                 f"| a cold `grader check` of the same code (median) | {f['cold_check_s']:.2f} "
                 f"(the grade takes {f['single_to_check']:.2f}x) |"]
    return "\n".join(rows)


BEGIN, END = "<!-- bench:begin (make bench writes this table) -->", "<!-- bench:end -->"


def update_readme(readme: Path, text: str) -> None:
    content = readme.read_text(encoding="utf-8")
    if BEGIN not in content or END not in content:
        raise BenchmarkError(f"{readme} has no {BEGIN} ... {END} markers to put the table between")
    head, rest = content.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    readme.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="submissions in the class (default 200)")
    parser.add_argument("--cpus", type=int, default=2, help="CPUs both sides run on (default 2)")
    parser.add_argument("--workers", type=int, default=None, help="parallelism for both sides (default: --cpus)")
    parser.add_argument("--otter-sample", type=int, default=10,
                        help="submissions otter runs on (default 10; 0 leaves the comparison out)")
    parser.add_argument("--repeats", type=int, default=20, help="reference gradings for the floor")
    parser.add_argument("--single-runs", type=int, default=3,
                        help="runs of `grader grade one.zip` and of a cold `grader check` (default 3; 0 leaves them out)")
    parser.add_argument("--rounds", type=int, default=1,
                        help="gradings with counterexamples, each after one without (and one more without at the end)")
    parser.add_argument("--counterexamples-only", action="store_true",
                        help="time only grading with and without counterexamples (no floor, one hand-in or otter)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench-out")
    parser.add_argument("--readme", type=Path, help="regenerate this README's benchmark table from the figures")
    args = parser.parse_args()
    args.workers = args.workers or args.cpus
    try:
        figures = measure(args)
        text = table(figures)
        if args.readme:
            update_readme(args.readme, text)
    except BenchmarkError as exc:
        sys.exit(f"benchmark failed: {exc}")
    except subprocess.CalledProcessError as exc:
        sys.exit(f"benchmark failed: {' '.join(map(str, exc.cmd))} exited {exc.returncode}")
    (args.out / "benchmark.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(text)
    print(f"\n(figures in {args.out / 'benchmark.json'}" + (f"; table written to {args.readme})" if args.readme else ")"))


if __name__ == "__main__":
    main()
