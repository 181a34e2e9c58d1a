"""How long a student waits: `grader check`, `--watch`, `grader submit`, as ratios to `import torch`.

    python bench/check_latency.py [--runs 3] [--saves 200]   (--saves 0: no --watch figures)

Every figure is measured in this run, on this machine, and given as a ratio to T, the median wall
time of `python -c "import torch"` measured here too, next to the wall and CPU seconds (the
machine may be shared: CPU seconds say what the work cost). Cold commands are run `--runs` times
(median). The watcher (`grader check --watch --exercise hvp`, on a copy of the reference) is
saved 20 times with a one-line edit of grad.py, the time from the write to its verdict read from
its output; then up to `--saves` saves in all, and its resident memory after 20 and after the
last. Targets (issue 22): cold hvp <= 1.5 T, cold full <= 2 T, watch median <= 0.3 T and p95 <=
0.6 T, submit <= 1.5 T, unknown exercise <= 0.3 T, memory after 200 saves within 10% of after 20.
"""

from __future__ import annotations

import argparse
import os
import queue
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GRADER = [sys.executable, "-m", "grader"]


def timed(cmd: list[str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, the process and its children) of one command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def median_of(cmd: list[str], cwd: Path, runs: int) -> tuple[float, float]:
    walls, cpus = zip(*(timed(cmd, cwd) for _ in range(runs)))
    return statistics.median(walls), statistics.median(cpus)


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def watch_figures(work: Path, saves: int) -> dict:
    folder = work / "watched"
    shutil.copytree(ROOT / "solutions", folder)
    grad = folder / "grad.py"
    base = grad.read_text()
    watcher = subprocess.Popen([*GRADER, "check", str(folder), "--watch", "--exercise", "hvp"], cwd=work,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in watcher.stdout], daemon=True).start()

    def verdict() -> None:
        while not lines.get(timeout=300).startswith("watching "):
            pass

    try:
        verdict()
        latencies, cpus, memory = [], [], {}
        for i in range(1, saves + 1):
            time.sleep(0.15)  # a student's saves are apart; so are two mtimes
            cpu = cpu_s(watcher.pid)
            start = time.perf_counter()
            grad.write_text(base + f"\n# save {i}\n")
            verdict()
            if i <= 20:
                latencies.append(time.perf_counter() - start)
                cpus.append(cpu_s(watcher.pid) - cpu)
            if i in (20, saves):
                memory[i] = rss_mb(watcher.pid)
    finally:
        watcher.terminate()
        watcher.wait(timeout=60)
    latencies.sort()
    return {"median": statistics.median(latencies), "p95": latencies[int(0.95 * (len(latencies) - 1) + 0.5)],
            "cpu": statistics.median(cpus), "memory": memory}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--saves", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="check-latency-") as tmp:
        work = Path(tmp)
        shutil.copytree(ROOT / "exercises", work / "exercises")
        t_wall, t_cpu = median_of([sys.executable, "-c", "import torch"], work, args.runs)
        rows = [
            ("cold `grader check --exercise hvp`", [*GRADER, "check", "--exercise", "hvp"], 1.5),
            ("cold `grader check` (every exercise)", [*GRADER, "check"], 2.0),
            ("`grader submit` (the reference)", [*GRADER, "submit", str(ROOT / "solutions"), "--out",
                                                 str(work / "s.zip")], 1.5),
            ("`grader check --exercise hpv` (unknown)", [*GRADER, "check", "--exercise", "hpv"], 0.3),
        ]
        print(f"T = `python -c \"import torch\"`: {t_wall:.2f} s wall, {t_cpu:.2f} s CPU (median of {args.runs}); "
              f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs\n")
        print("| | wall | CPU | wall / T | CPU / T(CPU) | target |\n| --- | ---: | ---: | ---: | ---: | ---: |")
        for label, cmd, target in rows:
            wall, cpu = median_of(cmd, work, args.runs)
            print(f"| {label} | {wall:.2f} s | {cpu:.2f} s | {wall / t_wall:.2f} T | {cpu / t_cpu:.2f} | <= {target} T |",
                  flush=True)
        if args.saves < 20:  # --saves 0: no watcher (a grader without --watch, for a figure before it)
            return
        w = watch_figures(work, args.saves)
        print(f"| `--watch`: save to verdict, median of 20 | {w['median']:.2f} s | {w['cpu']:.2f} s | "
              f"{w['median'] / t_wall:.2f} T | | <= 0.3 T |")
        print(f"| `--watch`: save to verdict, p95 of 20 | {w['p95']:.2f} s | | {w['p95'] / t_wall:.2f} T | | <= 0.6 T |")
        first, last = w["memory"].get(20), w["memory"].get(args.saves)
        print(f"| watcher's resident memory after 20 / {args.saves} saves | {first:.0f} / {last:.0f} MB | | "
              f"{(last - first) / first:+.1%} | | within 10% |")


if __name__ == "__main__":
    main()
