"""Time and peak memory of `grader similarity` on a class of N hand-ins (default 200 and 2000).

The class (`--kind`): `distinct` (default), bench/similarity_class.py's hand-ins, no two alike (bases
from the reference and the independent solutions, learner mistakes, statements of each student's
own, disguises); or `samples`, bench/make_submissions.py's (the reference, the stubs and every
learner mistake, cycled: the same modules again and again, read once per content). Each size runs
in a fresh process; its peak memory is that process's maximum resident set (from wait4), so the
sizes are measured apart; so is its CPU time (its reading processes' included), which says what the
work costs on a loaded machine. Peak memory is also sampled over the process and its reading processes
together (`tree`, every 0.2 s from /proc). The classes are made before the clock starts; each line
gives the load average (1 min) when it started.

`--compare OLD` runs, on each class and in the same run, OLD's `grader similarity` (a checkout of an
earlier commit: `git worktree add /tmp/old <commit>`) and this one's with `--jobs 1`, then this one's
with its default reading processes, and says how many of the CSV's 100 best pairs OLD and this one share.

    python bench/similarity_benchmark.py [--sizes 200 2000] [--kind distinct|samples] [--compare OLD]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
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


def run_measured(folder: Path, label: str, work: Path, root: Path = ROOT, extra: tuple[str, ...] = ()) -> dict:
    """One `grader similarity` run of `root`'s grader, in a process of its own (`python -m` from `root`
    imports that checkout's): wall, CPU and peak resident set from wait4, the peak of the process tree
    sampled, the load average at the start, its last line."""
    log, csv = work / f"{label}.log", work / f"{label}.csv"
    load = os.getloadavg()[0]
    with log.open("wb") as err:
        start = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-m", "grader", "similarity", str(folder), "--out",
                                  str(work / f"{label}.html"), "--csv", str(csv), *extra],
                                 cwd=root, stdout=subprocess.DEVNULL, stderr=err)
        tree = _TreeMemory(child.pid)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
        tree.stop()
    child.returncode = os.waitstatus_to_exitcode(status)
    text = log.read_text(errors="replace")
    if child.returncode != 0:
        raise SystemExit(text[-2000:])
    return {"wall": seconds, "cpu": usage.ru_utime + usage.ru_stime, "rss": usage.ru_maxrss / 1024,
            "tree": tree.peak / 1024, "load": load, "said": text.strip().splitlines()[-1], "csv": csv}


class _TreeMemory:
    """The largest sum of VmRSS (kB) over a process and its children seen, sampled every 0.2 s."""

    def __init__(self, pid: int):
        self.pid, self.peak, self.done = pid, 0, threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self) -> None:
        while not self.done.wait(0.2):
            self.peak = max(self.peak, sum(_rss(p) for p in [self.pid, *_children(self.pid)]))

    def stop(self) -> None:
        self.done.set()
        self.thread.join()


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def best_pairs(csv: Path, n: int = 100) -> set[tuple[str, str]]:
    rows = csv.read_text(encoding="utf-8").splitlines()[1:n + 1]
    return {tuple(r.split(",")[:2]) for r in rows}


def show(n: int, kind: str, label: str, m: dict) -> None:
    print(f"{n} {kind} hand-ins, {label}: {m['wall']:.1f} s wall, {m['cpu']:.1f} s CPU, peak RSS {m['rss']:.0f} MB "
          f"(process tree, sampled: {m['tree']:.0f} MB), load average {m['load']:.2f} at its start  ({m['said']})",
          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 2000])
    parser.add_argument("--kind", choices=("distinct", "samples"), default="distinct")
    parser.add_argument("--compare", type=Path, metavar="OLD", help="a checkout of an earlier commit, run alongside")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="similarity-bench-"))
    try:
        for n in sorted(args.sizes):
            folder = work / f"class-{n}"
            make(args.kind, n, folder)
            runs = [("this", ROOT, ())]
            if args.compare:
                runs = [("old", args.compare.resolve(), ()), ("this --jobs 1", ROOT, ("--jobs", "1")), *runs]
            measured = {}
            for label, root, extra in runs:
                measured[label] = run_measured(folder, f"{n}-{label.replace(' ', '')}", work, root, extra)
                show(n, args.kind, label, measured[label])
            if args.compare:
                shared = best_pairs(measured["old"]["csv"]) & best_pairs(measured["this"]["csv"])
                same = best_pairs(measured["this --jobs 1"]["csv"]) == best_pairs(measured["this"]["csv"])
                print(f"{n}: the CSV's 100 best pairs, old and this: {len(shared)} shared; this with --jobs 1 and "
                      f"with its reading processes: {'the same' if same else 'DIFFERENT'}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
