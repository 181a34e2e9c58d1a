"""Grade the hostile corpus once and print the figures the hostile-submissions issue asks for.

    PYTHONPATH=. python3 bench/hostile_figures.py [--json FILE]

* how many hostile submissions there are, and how many held: their targets at 0, every other
  exercise graded as the honest code earns, the score file complete and schema-valid (and, for
  the techniques that aim elsewhere, nothing secret printed, no process left behind);
* the wall time a 10 s infinite loop costs a grading run (call timeout 10 s, the default),
  against the reference's time, for a loop in one function and a loop at import;
* the memory the worker was allowed and used, from the score files' sandbox block.

Not a test: tests/test_hostile.py asserts each outcome; this only counts and measures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import hostile_corpus as hc  # noqa: E402
from grader import catalog  # noqa: E402
from grader.host.runner import Engine, Options, grade_many  # noqa: E402
from grader.protocol.limits import Limits  # noqa: E402

ALL = [e.name for e in catalog.load().exercises]


class Corpus:
    def __init__(self, work: Path):
        self.work = work
        self.engines: dict[str, Engine] = {}
        self.secret_names = sorted({t.name for e in catalog.load().exercises for t in e.tests if t.folder == "hidden"})
        self.solution_lines = sorted({line.strip() for p in hc.SOLUTIONS.glob("*.py")
                                      for line in p.read_text().splitlines() if len(line.strip()) >= 40}
                                     - {line.strip() for p in hc.STUBS.glob("*.py") for line in p.read_text().splitlines()})
        self.token = f"tok-{uuid.uuid4().hex}"
        os.environ["AUTOGRAD_LAB_LMS_TOKEN"] = self.token  # before any engine starts

    def engine(self, key: str) -> Engine:
        if key not in self.engines:
            self.engines[key] = Engine(Options(seed=0, limits=hc.LIMITS[key]))
        return self.engines[key]

    def close(self) -> None:
        for e in self.engines.values():
            e.close()

    def leaks(self, report: dict) -> list[str]:
        output = report.get("output", "")
        return ([n for n in self.secret_names if n in output] + [line for line in self.solution_lines if line in output]
                + (["token"] if self.token in output else []))

    def run(self, t: hc.Technique) -> tuple[bool, list[str], list[dict], float]:
        """(held, problems, reports, seconds) for one technique."""
        dest = self.work / t.name
        comm = "agl" + uuid.uuid4().hex[:10]
        out = self.work / f"{t.name}-out"
        listener = None
        if "PORT" in t.substitutions:
            listener = socket.socket()
            listener.bind(("127.0.0.1", 0))
            listener.listen(4)
        subs = hc.substitutions(t, self.work, OUT_DIR=out, COMM=comm, MARKER_FILE=self.work / "unpickled",
                                PORT=listener.getsockname()[1] if listener else None)
        engine = self.engine(t.engine)
        start = time.perf_counter()
        problems: list[str] = []
        if t.name in ("fake_score_file", "detached_child"):
            sub = hc.build(t, dest, **subs)
            summary = grade_many([str(sub)], out, Options(seed=0, limits=hc.LIMITS[t.engine]))
            written = (out / f"{t.name}.json").read_bytes()
            reports = summary.reports
            time.sleep(1.0)
            if (out / f"{t.name}.json").read_bytes() != written or sorted(p.name for p in out.iterdir()) != \
                    sorted([f"{t.name}.json", "summary.csv"]):
                problems.append("the output folder was changed")
        elif t.name == "symlinked_paths":
            folder = hc.build(t, dest)
            reports = [engine.grade(folder / "linked_dir", name=t.name), engine.grade(folder / "linked_module", name=t.name)]
        else:
            reports = [engine.grade(hc.build(t, dest, **subs), name=t.name)]
        seconds = time.perf_counter() - start
        for report in reports:
            if t.name == "budget_exhaustion":
                from grader.host import results
                problems += [f"schema: {p}" for p in results.validate(report)]
                if [e["name"] for e in report["exercises"]] != ALL:
                    problems.append("not every exercise listed")
                if seconds > t_limit(t) + 10:
                    problems.append(f"took {seconds:.1f} s")
                after = engine.grade(hc.SOLUTIONS, name="reference-after")
                if after["score"] != 100:
                    problems.append("the next submission was not graded in full")
            else:
                problems += hc.held(report, hc.targets(t, report["sandbox"]), ALL)
            problems += [f"leaked {x}" for x in self.leaks(report)]
        if hc.processes_named(comm):
            problems.append("processes left behind")
            for pid in hc.processes_named(comm):
                os.kill(pid, signal.SIGKILL)
        if listener is not None:
            listener.settimeout(0.2)
            try:
                listener.accept()
                problems.append("a connection arrived")
            except OSError:
                pass
            listener.close()
        if (self.work / "unpickled").exists():
            problems.append("the pickle payload ran")
        return not problems, problems, reports, seconds


def t_limit(t: hc.Technique) -> float:
    return hc.LIMITS[t.engine].submission_budget_s


def infinite_loop_cost(work: Path) -> dict:
    """Seconds a function (and an import) that never returns adds to one submission, default limits."""
    limits = Limits()  # call timeout 10 s, exercise budget 20 s
    engine = Engine(Options(seed=0, limits=limits))
    try:
        engine.grade(hc.SOLUTIONS)  # warm
        start = time.perf_counter()
        engine.grade(hc.SOLUTIONS)
        reference = time.perf_counter() - start
        timings = {}
        for name in ("infinite_loop_call", "infinite_loop_import"):
            sub = hc.build(name, work / f"cost-{name}")
            start = time.perf_counter()
            report = engine.grade(sub, name=name)
            timings[name] = (time.perf_counter() - start, report)
    finally:
        engine.close()
    return {
        "call_timeout_s": limits.call_timeout_s, "exercise_budget_s": limits.exercise_budget_s,
        "reference_s": round(reference, 2),
        "loop_in_a_call_s": round(timings["infinite_loop_call"][0], 2),
        "loop_in_a_call_cost_s": round(timings["infinite_loop_call"][0] - reference, 2),
        "loop_at_import_s": round(timings["infinite_loop_import"][0], 2),
        "loop_at_import_cost_s": round(timings["infinite_loop_import"][0] - reference, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="autograd-lab-hostile-"))
    corpus = Corpus(work)
    rows, figures = [], {}
    started = time.perf_counter()
    try:
        for t in hc.TECHNIQUES:
            ok, problems, reports, seconds = corpus.run(t)
            rows.append((t, ok, problems, reports, seconds))
            print(f"{'held' if ok else 'FAILED':6} {t.name:24} {seconds:6.1f} s  "
                  f"score {'/'.join(str(r['score']) for r in reports):>10}  {'; '.join(problems)[:150]}", flush=True)
        reference = corpus.engine("default").grade(hc.SOLUTIONS)
        memory = next(r for t, _, _, reports, _ in rows if t.name == "memory_bomb" for r in reports)
        fork_memory = next(r for t, _, _, reports, _ in rows if t.name == "fork_memory_bomb" for r in reports)
    finally:
        corpus.close()
    corpus_seconds = time.perf_counter() - started
    cost = infinite_loop_cost(work)
    shutil.rmtree(work, ignore_errors=True)
    held = sum(ok for _, ok, _, _, _ in rows)
    figures = {
        "hostile_submissions": len(rows),
        "held": held,
        "failed": [t.name for t, ok, _, _, _ in rows if not ok],
        "corpus_seconds": round(corpus_seconds, 1),
        "infinite_loop": cost,
        "memory": {
            "allowed_mb_above_start": reference["sandbox"]["memory_limit_mb"],
            "reference_peak_mb": reference["sandbox"]["peak_memory_mb"],
            "memory_bomb_allowed_mb": memory["sandbox"]["memory_limit_mb"],
            "memory_bomb_peak_mb": memory["sandbox"]["peak_memory_mb"],
            "fork_memory_bomb_peak_mb": fork_memory["sandbox"]["peak_memory_mb"],
            "how": reference["sandbox"]["memory"],
        },
        "sandbox": {k: reference["sandbox"][k] for k in ("backend", "network", "user", "processes_limit")},
    }
    print()
    print(f"hostile submissions: {len(rows)}; held: {held}; failed: {figures['failed'] or 'none'} "
          f"(graded in {corpus_seconds:.0f} s)")
    print(f"infinite loop, call timeout {cost['call_timeout_s']:g} s, exercise budget {cost['exercise_budget_s']:g} s: "
          f"reference {cost['reference_s']} s; loop in one function {cost['loop_in_a_call_s']} s "
          f"(+{cost['loop_in_a_call_cost_s']} s); loop at import {cost['loop_at_import_s']} s "
          f"(+{cost['loop_at_import_cost_s']} s)")
    m = figures["memory"]
    print(f"memory: worker allowed {m['allowed_mb_above_start']} MB above its start by default "
          f"({m['how']}); the reference used {m['reference_peak_mb']} MB at peak; the memory bomb, allowed "
          f"{m['memory_bomb_allowed_mb']} MB, peaked at {m['memory_bomb_peak_mb']} MB (20 GB refused); the fork + "
          f"memory bomb peaked at {m['fork_memory_bomb_peak_mb']} MB before it was killed")
    print(f"sandbox: {figures['sandbox']}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0 if held == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
