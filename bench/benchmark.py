"""Benchmark: grading a class with `grader grade` against `otter run`, and the in-process floor.

    python bench/benchmark.py                 # 200 submissions, 2 workers, otter on a sample of 10
    python bench/benchmark.py --n 50 --otter-sample 4

It makes N submissions (cycling through the reference, the stubs and every learner mistake of
tests/submissions/wrong/), then measures, on this machine:

1. `grader grade CLASS --workers W`: wall time from the command's start to its end (process
   start, imports, zygotes and pool included), divided by N.
2. `otter run -a <our otter autograder> SUBMISSION` on a sample of the same submissions, W at a
   time (each run starts a fresh kernel and imports torch; our plugin then grades with the same
   tests), wall time divided by the sample size. Skipped when otter is not installed.
3. The in-process floor: one process grading the reference with the same pytest run over the
   same hidden cases, but with the student code called directly in that process (no worker,
   no sandbox, no socket). Next to it, the same process grading the reference with isolation,
   so that the difference is the cost of isolation per submission.

Results go to stdout and to <out>/benchmark.json. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
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


def time_grader(klass: Path, out: Path, workers: int) -> float:
    shutil.rmtree(out, ignore_errors=True)
    start = time.perf_counter()
    subprocess.run(grader_command("grade", str(klass), "--out", str(out), "--workers", str(workers)),
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def floor_and_isolated(repeats: int) -> dict[str, float]:
    """Seconds per reference submission in one process: no isolation at all, then isolated."""
    from inprocess import InProcessEngine

    from grader.host.runner import Engine, Options

    out = {}
    for label, cls in (("in_process_floor_s", InProcessEngine), ("isolated_same_process_s", Engine)):
        engine = cls(Options())
        try:
            engine.grade(ROOT / "solutions")  # first run imports the test modules
            start = time.perf_counter()
            for _ in range(repeats):
                report = engine.grade(ROOT / "solutions")
            out[label] = (time.perf_counter() - start) / repeats
            assert report["score"] == report["max_score"], report["score"]
        finally:
            engine.close()
    return out


def venv_otter() -> Path | None:
    """The `otter` installed beside this Python (the venv's bin/); never one found on PATH."""
    path = Path(sys.executable).parent / "otter"
    return path if path.is_file() and os.access(path, os.X_OK) else None


def otter_available() -> bool:
    return venv_otter() is not None and _has_command("otter")


def _has_command(kind: str) -> bool:
    result = subprocess.run(grader_command("export", kind, "--help"), capture_output=True)
    return result.returncode == 0


def time_otter(klass: Path, sample: int, workers: int, work: Path) -> tuple[float, int]:
    """Seconds per submission of `otter run`, `workers` runs at a time, on `sample` submissions."""
    autograder = work / "otter-autograder.zip"
    subprocess.run(grader_command("export", "otter", "--out", str(autograder)), check=True, capture_output=True)
    chosen = sorted(klass.iterdir())[:: max(1, len(list(klass.iterdir())) // sample)][:sample]
    forms = []
    for folder in chosen:
        form = work / "forms" / f"{folder.name}.zip"
        form.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(grader_command("submit", str(folder), "--out", str(form)), check=True, capture_output=True)
        forms.append(form)

    def run(form: Path) -> None:
        out = work / "otter-out" / form.stem
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run([str(venv_otter()), "run", "-a", str(autograder), "-o", str(out), "--no-logo", str(form)],
                       check=True, capture_output=True)

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(run, forms))
    return (time.perf_counter() - start) / len(forms), len(forms)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="submissions in the class (default 200)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2, help="parallelism for both sides")
    parser.add_argument("--otter-sample", type=int, default=10, help="submissions otter runs on (0: skip otter)")
    parser.add_argument("--repeats", type=int, default=20, help="reference gradings for the floor")
    parser.add_argument("--out", type=Path, default=ROOT / "bench-out")
    args = parser.parse_args()

    args.out.mkdir(parents=True, exist_ok=True)
    klass = args.out / "class"
    shutil.rmtree(klass, ignore_errors=True)
    make_class(klass, total=args.n)
    figures = {"machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
               "submissions": args.n, "workers": args.workers}

    wall = time_grader(klass, args.out / "scores", args.workers)
    figures["grader_wall_s"] = wall
    figures["grader_s_per_submission"] = wall / args.n
    figures.update(floor_and_isolated(args.repeats))
    figures["isolation_overhead_s"] = figures["isolated_same_process_s"] - figures["in_process_floor_s"]

    if args.otter_sample and otter_available():
        with tempfile.TemporaryDirectory() as work:
            per, count = time_otter(klass, args.otter_sample, args.workers, Path(work))
        figures["otter_s_per_submission"] = per
        figures["otter_sample"] = count
        figures["throughput_ratio"] = per / figures["grader_s_per_submission"]
    else:
        figures["otter"] = "skipped (otter-grader not installed or no `grader export otter`)"

    print(f"machine: {figures['machine']}; {args.n} submissions, {args.workers} workers on both sides")
    print(f"  grader grade:       {figures['grader_s_per_submission']:.3f} s per submission "
          f"({wall:.1f} s for the class, start-up included)")
    if "otter_s_per_submission" in figures:
        print(f"  otter run:          {figures['otter_s_per_submission']:.3f} s per submission "
              f"(sample of {figures['otter_sample']}, {args.workers} at a time)")
        print(f"  throughput ratio:   {figures['throughput_ratio']:.1f}x")
    else:
        print(f"  otter run:          {figures['otter']}")
    print(f"  in-process floor:   {figures['in_process_floor_s']:.3f} s per reference submission (one process)")
    print(f"  isolated, same:     {figures['isolated_same_process_s']:.3f} s per reference submission (one process)")
    print(f"  isolation overhead: {figures['isolation_overhead_s']:.3f} s per submission")
    (args.out / "benchmark.json").write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
