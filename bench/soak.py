"""Soak: grade a long class and watch what the run holds, every 100 submissions.

    python bench/soak.py                          # 2,000 submissions, 2 workers
    python bench/soak.py --n 300 --every 50       # a short one

It makes N submissions (the sample class of make_submissions.py: the reference, the stubs and
every learner mistake, cycled), runs `grader grade CLASS --out OUT --workers W` with a TMPDIR of
its own, and each time another `--every` score files are written records:

- the resident memory (VmRSS) of the grading process, of each pool process and of each zygote;
- their open file descriptors;
- the processes below the grading process that live as long as the run (pool processes,
  zygotes, multiprocessing's resource tracker), and apart the workers and their first children
  that come and go below the zygotes (at most two per zygote);
- the entries in the run's TMPDIR, and in /tmp (the whole machine's: other work shows there too).

A leak is growth of more than 10% from the 200th submission to the last, in any of the run's own
figures (memory, descriptors, long-lived processes, its TMPDIR entries), or more than two worker
processes per zygote at any row. A sample catches a pool process in the middle of a submission
(a worker's socket and pipes open, pytest's objects alive), so each end is the median of three
rows: the first three from the 200th submission on, and the last three. The script lists each
leak and exits 1 if there is one. Results: OUT/../soak.json (every row, the machine, the verdict) and
soak.csv, rewritten at every row. SIGTERM, SIGINT or `--max-seconds` stop the grader cleanly and
keep the rows so far (soak.json says "stopped" and how many were graded). Not part of the test
suite: the full run takes about an hour on a loaded 2-CPU machine.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from statistics import median

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from make_submissions import make_class  # noqa: E402

LEAK = 0.10  # growth from the baseline row to the last one that counts as a leak
BASELINE = 200  # submissions: the pool and its zygotes are warm by then


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS in KiB and the open descriptors of a process ({} when it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, StopIteration):
        return {}
    return {"rss_kb": rss, "fds": fds}


def process_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process."""
    table = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        table[int(entry)] = (ppid, cmdline)
    return table


def below(table: dict[int, tuple[int, str]], root: int) -> list[int]:
    found, frontier = [], [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, _) in table.items():
            if ppid == parent and pid not in found:
                found.append(pid)
                frontier.append(pid)
    return found


def sample(grader: int, out: Path, tmpdir: Path, start: float) -> dict:
    """One row: what the run holds now."""
    table = process_table()
    pool = sorted(p for p, (ppid, cmd) in table.items() if ppid == grader and "spawn_main" in cmd)
    zygotes = sorted(p for p, (ppid, cmd) in table.items() if ppid in pool and "grader.sandboxed.zygote" in cmd)
    row = {"submissions": len(list(out.glob("*.json"))), "seconds": round(time.monotonic() - start, 1)}
    for role, pids in (("grader", [grader]), ("pool", pool), ("zygote", zygotes)):
        for i, pid in enumerate(pids):
            for key, value in proc_status(pid).items():
                row[f"{role}{'' if role == 'grader' else i}_{key}"] = value
    workers = {p for z in zygotes for p in below(table, z)}
    row["zygotes"] = len(zygotes)
    row["processes"] = len(set(below(table, grader)) - workers)
    row["worker_processes"] = len(workers)
    row["run_tmp_entries"] = len(os.listdir(tmpdir))
    row["tmp_entries"] = len(os.listdir("/tmp"))
    return row


RUN_FIGURES = ("rss_kb", "fds", "processes", "run_tmp_entries")  # what a leak of the run shows in


def leaks(rows: list[dict]) -> list[str]:
    """Figures that grew by more than LEAK from the baseline (the median of the first three rows from
    BASELINE on) to the end (the median of the last three), and rows with too many worker processes."""
    found = [f"{r['worker_processes']} worker processes below {r['zygotes']} zygotes at {r['submissions']}"
             for r in rows if r["worker_processes"] > 2 * r["zygotes"]]
    start = [r for r in rows if r["submissions"] >= BASELINE][:3]
    end = rows[-3:]
    if len(start) < 3 or start[-1]["submissions"] >= end[0]["submissions"]:
        return found + ["too few rows to compare: run more submissions"]
    for key in start[0]:
        if key.endswith(RUN_FIGURES) and all(key in r for r in start + end):
            first, last = median(r[key] for r in start), median(r[key] for r in end)
            if last - first > LEAK * max(first, 1):
                found.append(f"{key}: {first:g} at {start[1]['submissions']} -> {last:g} at {end[1]['submissions']} "
                             "(medians of three rows)")
    return found


def write_results(path: Path, args, command: list[str], rows: list[dict], seconds: float, after: dict | None,
                  stopped: str) -> list[str]:
    """soak.json (every row, the machine, the verdict so far) and soak.csv, rewritten at each row so that
    a run stopped early still leaves its figures; returns the leaks found."""
    found = leaks(rows)
    result = {
        "n": args.n, "graded": after["score_files"] if after else (rows[-1]["submissions"] if rows else 0),
        "workers": args.workers, "every": args.every,
        "seconds": round(seconds, 1), "finished": after is not None and not stopped, "stopped": stopped,
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                    "load_average": os.getloadavg()},
        "command": " ".join(command), "rows": rows, "after": after, "leaks": found,
    }
    (path / "soak.json").write_text(json.dumps(result, indent=2) + "\n")
    keys = list(dict.fromkeys(k for r in rows for k in r))
    with open(path / "soak.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000, help="submissions in the class (default 2000)")
    parser.add_argument("--workers", type=int, default=2, help="pool processes (default 2)")
    parser.add_argument("--every", type=int, default=100, help="a row every this many submissions (default 100)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench-out" / "soak", help="work folder")
    parser.add_argument("--max-seconds", type=float, default=None,
                        help="stop grading (SIGTERM to the grader) after this long and report the rows so far")
    args = parser.parse_args()

    shutil.rmtree(args.out, ignore_errors=True)
    klass, scores, tmpdir = args.out / "class", args.out / "scores", args.out / "tmp"
    tmpdir.mkdir(parents=True)
    make_class(klass, total=args.n)
    grader = [sys.executable, "-m", "grader", "grade", str(klass), "--out", str(scores), "--workers", str(args.workers)]
    log = open(args.out / "grader.log", "w")
    start = time.monotonic()
    run = subprocess.Popen(grader, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "TMPDIR": str(tmpdir)})
    stopped = ""

    def stop(why: str) -> None:
        nonlocal stopped
        if not stopped and run.poll() is None:
            stopped = why
            run.terminate()  # the grader stops cleanly on SIGTERM, ending its pool, zygotes and workers

    signal.signal(signal.SIGTERM, lambda signum, frame: stop("SIGTERM"))
    signal.signal(signal.SIGINT, lambda signum, frame: stop("SIGINT"))
    rows, mark = [], args.every
    while run.poll() is None:
        if args.max_seconds is not None and time.monotonic() - start > args.max_seconds:
            stop(f"--max-seconds {args.max_seconds:g}")
        done = len(list(scores.glob("*.json"))) if scores.is_dir() else 0
        if done >= mark and not stopped:
            rows.append(sample(run.pid, scores, tmpdir, start))
            print(json.dumps(rows[-1]), flush=True)
            write_results(args.out.parent, args, grader, rows, time.monotonic() - start, None, stopped)
            mark = (done // args.every + 1) * args.every
        time.sleep(0.2)
    seconds = time.monotonic() - start
    log.close()
    time.sleep(1)  # what the run started has had its moment to end
    after = {"exit_status": run.returncode, "score_files": len(list(scores.glob("*.json"))),
             "run_tmp_entries_after": len(os.listdir(tmpdir)),
             "processes_left": [p for p, (_, cmd) in process_table().items()
                                if str(scores) in cmd or str(tmpdir) in cmd]}  # zygotes name their TMPDIR
    found = write_results(args.out.parent, args, grader, rows, seconds, after, stopped)
    print(f"{'stopped early (' + stopped + '): ' if stopped else ''}{after['score_files']} of {args.n} graded in "
          f"{seconds:.0f} s, "
          f"exit status {run.returncode}; after the run: {after['run_tmp_entries_after']} entries in its TMPDIR, "
          f"{len(after['processes_left'])} processes left")
    if rows:
        print("first row:", json.dumps(rows[0]))
        print("last row: ", json.dumps(rows[-1]))
    print(f"leaks (more than 10% growth from the row at {BASELINE}):", "; ".join(found) or "none")
    print(f"written: {args.out.parent / 'soak.json'}, {args.out.parent / 'soak.csv'}")
    clean = run.returncode == 0 or (stopped and run.returncode == 128 + signal.SIGTERM)  # stopped, as asked
    return 1 if found or after["processes_left"] or not clean else 0


if __name__ == "__main__":
    sys.exit(main())
