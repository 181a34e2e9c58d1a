"""Time and peak memory of `grader similarity` on a class of N hand-ins (default 200 and 2000).

The class (`--kind`): `distinct` (default), bench/similarity_class.py's hand-ins, no two alike (bases
from the reference and the independent solutions, learner mistakes, statements of each student's
own, disguises); or `samples`, bench/make_submissions.py's (the reference, the stubs and every
learner mistake, cycled: the same modules again and again, read once per content). Each size runs
in a fresh process; its peak memory is that process's maximum resident set (from wait4), so the
sizes are measured apart; so is its CPU time, which says what the work costs on a loaded machine. The
classes are made before the clock starts.

    python bench/similarity_benchmark.py [--sizes 200 2000] [--kind distinct|samples]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import make_submissions  # noqa: E402
import similarity_class  # noqa: E402


def make(kind: str, n: int, folder: Path) -> None:
    if kind == "samples":
        make_submissions.make_class(folder, total=n)
    else:
        from grader import catalog

        similarity_class.make_class(folder, n, {e.name for e in catalog.load().exercises})


def run_measured(folder: Path, n: int, work: Path) -> tuple[float, float, float, str]:
    """(wall seconds, CPU seconds, peak resident MB, its last line) of one `grader similarity` run, in a
    process of its own: its CPU and peak resident set from wait4, so the sizes are measured apart."""
    log = work / f"{n}.log"
    with log.open("wb") as err:
        start = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-m", "grader", "similarity", str(folder), "--out",
                                  str(work / f"{n}.html"), "--csv", str(work / f"{n}.csv")],
                                 cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    text = log.read_text(errors="replace")
    if child.returncode != 0:
        raise SystemExit(text[-2000:])
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, text.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 2000])
    parser.add_argument("--kind", choices=("distinct", "samples"), default="distinct")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="similarity-bench-"))
    try:
        for n in sorted(args.sizes):
            folder = work / f"class-{n}"
            make(args.kind, n, folder)
            seconds, cpu, peak, said = run_measured(folder, n, work)
            print(f"{n} {args.kind} hand-ins: {seconds:.1f} s wall, {cpu:.1f} s CPU, peak RSS {peak:.0f} MB  ({said})",
                  flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
