"""What the worker's hardening costs in grading time: checkouts of the grader side by side, in one run.

    python bench/hardening_cost.py --tree before=/path/to/checkout --tree main=/path/to/other \\
        [--tree ...] [--rounds 4] [--class-size 40] [--jobs 2] [--floor-repeats 3] [--json FILE]

Each --tree is a checkout with its own .venv (its editable install pointing at it: see
/work/wt/mkwt.sh's approach, or `git worktree add` plus a venv copy). The first tree is the
baseline. On a shared, loaded machine a single timing says little, so the trees are measured
interleaved, round after round (A B C, then C B A, ...), and every figure is paired with the
baseline's in the same round:

1. `grader grade CLASS --jobs J` on one class of --class-size submissions from
   bench/make_submissions.py (the reference, the stubs, the learner mistakes), built once: wall
   time and CPU seconds (the command and every process it waited for). A tree that has the
   counterexample search gets --no-counterexamples: the search came after the hardening and is
   not what is measured.
2. The isolated floor: one process grading the reference --floor-repeats times with the real
   Engine (worker, sandbox, socket), seconds per submission, after one warm-up grade.

Printed: per tree the median and the range of each figure, the median of the paired ratios to the
baseline with their range, and the load average at the start of each measurement. Not a test.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from make_submissions import make_class  # noqa: E402

FLOOR = """
import json, os, resource, sys, time
from pathlib import Path
from grader.host.runner import Engine, Options
repeats = int(sys.argv[1])
solutions = Path("solutions").resolve()
engine = Engine(Options(seed=0))
try:
    engine.grade(solutions)
    start, cpu = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    for _ in range(repeats):
        report = engine.grade(solutions)
    wall = (time.perf_counter() - start) / repeats
    own = resource.getrusage(resource.RUSAGE_SELF)
finally:
    engine.close()
assert report["score"] == report["max_score"], report["score"]
print(json.dumps({"floor_s": wall, "floor_own_cpu_s": (own.ru_utime + own.ru_stime - cpu.ru_utime - cpu.ru_stime) / repeats}))
"""


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def python_of(tree: Path) -> str:
    return str(tree / ".venv" / "bin" / "python")


@functools.lru_cache(maxsize=None)
def has_option(tree: Path, option: str) -> bool:
    result = subprocess.run([python_of(tree), "-m", "grader", "grade", "--help"], cwd=tree, capture_output=True,
                            text=True)
    return option in result.stdout


def grade_class(tree: Path, klass: Path, out: Path, jobs: int, extra: list[str]) -> dict:
    shutil.rmtree(out, ignore_errors=True)
    load = os.getloadavg()[0]
    cpu, start = children_cpu(), time.perf_counter()
    parallel = "--jobs" if has_option(tree, "--jobs") else "--workers"  # its name before the legibility issue
    result = subprocess.run([python_of(tree), "-m", "grader", "grade", str(klass), "--out", str(out), parallel,
                             str(jobs), *extra], cwd=tree, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - start, children_cpu() - cpu
    graded = len(list(out.glob("*.json")))
    if result.returncode != 0 or graded != len(list(klass.iterdir())):
        raise SystemExit(f"{tree}: grader grade failed (exit {result.returncode}, {graded} score files):\n"
                         + (result.stdout + result.stderr)[-2000:])
    return {"class_wall_s": wall, "class_cpu_s": cpu, "load": load}


def floor(tree: Path, repeats: int) -> dict:
    load = os.getloadavg()[0]
    cpu = children_cpu()
    result = subprocess.run([python_of(tree), "-c", FLOOR, str(repeats)], cwd=tree, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{tree}: the floor failed:\n{(result.stdout + result.stderr)[-2000:]}")
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    figures["floor_cpu_s"] = (children_cpu() - cpu) / (repeats + 1)  # (the warm-up grade included, and start-up)
    figures["floor_load"] = load
    return figures


def summary(values: list[float]) -> str:
    return f"median {statistics.median(values):8.3f}  range {min(values):8.3f} .. {max(values):8.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", required=True, help="LABEL=CHECKOUT; the first is the baseline")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--class-size", type=int, default=40)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--floor-repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    trees = [(label, Path(path).resolve()) for label, _, path in (t.partition("=") for t in args.tree)]
    work = Path(tempfile.mkdtemp(prefix="autograd-lab-hardening-"))
    try:
        klass = work / "class"
        make_class(klass, total=args.class_size)
        extra = {label: (["--no-counterexamples"] if has_option(tree, "--no-counterexamples") else [])
                 for label, tree in trees}
        runs: dict[str, list[dict]] = {label: [] for label, _ in trees}
        for r in range(args.rounds):
            order = trees if r % 2 == 0 else trees[::-1]
            for label, tree in order:
                figures = grade_class(tree, klass, work / f"out-{label}", args.jobs, extra[label])
                figures.update(floor(tree, args.floor_repeats))
                runs[label].append(figures)
                print(f"round {r + 1} {label:>8}: class {figures['class_wall_s']:7.1f} s wall "
                      f"{figures['class_cpu_s']:7.1f} s CPU (load {figures['load']:.1f}); floor "
                      f"{figures['floor_s']:6.3f} s/submission (load {figures['floor_load']:.1f})", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base = trees[0][0]
    result = {"trees": {label: str(tree) for label, tree in trees}, "runs": runs, "rounds": args.rounds,
              "class_size": args.class_size, "jobs": args.jobs, "floor_repeats": args.floor_repeats,
              "cpus": os.cpu_count(), "extra": extra}
    print(f"\n{args.class_size} submissions, --jobs {args.jobs}, {args.rounds} rounds interleaved; "
          f"{os.cpu_count()} CPUs; baseline {base}")
    for key in ("class_wall_s", "class_cpu_s", "floor_s", "floor_own_cpu_s"):
        print(f"\n{key}")
        for label, _ in trees:
            values = [run[key] for run in runs[label]]
            line = f"  {label:>8}: {summary(values)}"
            if label != base:
                ratios = [run[key] / b[key] for run, b in zip(runs[label], runs[base])]
                result.setdefault("ratios", {}).setdefault(key, {})[label] = ratios
                line += f"   paired ratio to {base}: {summary(ratios)}"
            print(line)
    loads = [run["load"] for label in runs for run in runs[label]]
    print(f"\nload average (1 min) at the measurements' starts: {summary(loads)}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
