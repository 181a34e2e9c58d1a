"""`make gpu-check`: grade the corpus on the GPU and on the CPU, compare them, and measure the GPU's costs.

    make gpu-check                                     # on a CUDA machine: --device cuda against --device cpu
    PYTHONPATH=. python3 bench/gpu_check.py [--workers N] [--out DIR] [--only NAME,...]
    PYTHONPATH=. python3 bench/gpu_check.py --device cpu --against cpu --only reference,stubs,...   # the dry run

It grades the reference, the stubs, every learner mistake of tests/submissions/wrong/ and every
submission of the hostile corpus (tests/submissions/hostile/, each with its technique's limits), once
with `--device DEVICE` and once with `--device AGAINST`, and compares them exercise by exercise:

* the reference has full marks and the stubs none, on both devices;
* an ordinary mistake scores the same on both and loses its own exercise only;
* a device-specific mistake (DEVICE = "cuda" in its file) is right on the CPU, and on the GPU loses its
  own exercise only, with a failed test that names it (its MISTAKE id);
* a hostile submission scores the same on both and holds on each (targets at 0, the rest full marks).

Every difference is listed, expected (a device-specific mistake) or not. It also records the seconds
per submission on each device, the CUDA start per worker (a worker's start and first call on the GPU,
against the CPU), the GPU memory a worker used, and what the sandbox did with /dev/nvidia* (which
device files a worker sees and can open, and how it was isolated). If CUDA fails inside the default
sandbox, a worker without namespaces is tried too, so that one run tells the sandbox from the driver.

Writes DIR/gpu-check.json (after each phase, so a cut-short run leaves what it measured) and prints
a Markdown table. Exit status: 0 when every expectation held, 1 when one did not, 2 when there is no
GPU (or no torch) to check. Needs Python with torch, pytest and pyyaml only, run from the checkout with
PYTHONPATH: nothing is installed. It runs the hidden tests, so it is for the instructor's machine only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

NO_GPU = 2


@dataclass
class Entry:
    """One submission of the check and what must happen to it."""

    name: str
    kind: str  # "reference", "stubs", "mistake", "device mistake" or "hostile"
    path: str
    limits: str = "default"  # a key of tests/hostile_corpus.LIMITS
    exercise: str | None = None  # a mistake's own exercise
    mistake: str | None = None  # a mistake's id
    targets: tuple[str, ...] = ()  # a hostile submission's targets
    timing_dependent: bool = False  # a hostile submission whose score depends on how fast the machine is
    extra_paths: list[str] = field(default_factory=list)


# ============================================================================= the corpus

def build_corpus(work: Path, only: set[str] | None) -> list[Entry]:
    import hostile_corpus as hc

    from conftest import SOLUTIONS, STUBS, SUBMISSIONS, make_submission
    from grader import catalog
    from grader.validate import mistakes

    course = catalog.load()
    corpus = mistakes.read_folder(SUBMISSIONS / "wrong")
    entries = [Entry("reference", "reference", str(SOLUTIONS)), Entry("stubs", "stubs", str(STUBS))]
    for name, e in corpus.items():
        if only is not None and name not in only:
            continue
        path = make_submission(work / "wrong" / name, mistakes.submission_modules(e, course))
        entries.append(Entry(name, "device mistake" if mistakes.device_of(e) else "mistake", str(path),
                             exercise=e["EXERCISE"], mistake=e["MISTAKE"]))
    for t in hc.TECHNIQUES:
        name = f"hostile-{t.name}"
        if only is not None and name not in only:
            continue
        built = hc.build(t, work / "hostile" / t.name, **hc.substitutions(t, work / "hostile-scratch"))
        paths = [str(built / "linked_dir"), str(built / "linked_module")] if t.name == "symlinked_paths" else [str(built)]
        for i, path in enumerate(paths):
            entries.append(Entry(name if i == 0 else f"{name}-{i + 1}", "hostile", path, limits=t.engine,
                                 targets=t.targets, timing_dependent=t.name == "budget_exhaustion"))
    return [e for e in entries if only is None or e.name in only or e.kind not in ("reference", "stubs")]


# ============================================================================= grading

def grade_side(entries: list[Entry], device: str, workers: int, out: Path, on_gpu_memory=None) -> dict:
    """Grade every entry with `device`, each limits group in one run. Returns the reports by entry
    name, and the timing of the run without hostile submissions (the class an instructor grades)."""
    import hostile_corpus as hc

    from grader.host.runner import Options, grade_many, unique_names

    reports, timing = {}, {}
    groups: dict[tuple[bool, str], list[Entry]] = {}
    for e in entries:
        groups.setdefault((e.kind == "hostile", e.limits), []).append(e)
    for (hostile, limits), group in sorted(groups.items()):
        paths = [e.path for e in group]
        named = dict(zip(unique_names(paths), group))  # the names grade_many gives the score files
        sampler = GpuMemorySampler() if on_gpu_memory is not None else None
        start = time.perf_counter()
        summary = grade_many(paths, out / f"{device}-{limits}-{'hostile' if hostile else 'class'}",
                             Options(device=device, seed=0, limits=hc.LIMITS[limits]), workers=min(workers, len(group)))
        wall = time.perf_counter() - start
        if sampler is not None:
            on_gpu_memory(sampler.stop())
        for report in summary.reports:
            reports[named[report["submission"]].name] = report
        if not hostile:
            durations = {named[r["submission"]].name: r["duration_s"] for r in summary.reports}
            timing = {"submissions": len(group), "workers": min(workers, len(group)), "wall_s": round(wall, 2),
                      "s_per_submission": round(wall / len(group), 3),
                      "mean_duration_s": round(statistics.mean(durations.values()), 3),
                      "reference_duration_s": round(durations["reference"], 3) if "reference" in durations else None}
    return {"reports": {e.name: reports.get(e.name) for e in entries}, "timing": timing}


class GpuMemorySampler:
    """The GPU's used memory, device-wide, every 0.2 s while a run goes on (this process's own CUDA
    context, created before the run starts, is the baseline)."""

    def __init__(self):
        import torch

        self.torch = torch
        free, total = torch.cuda.mem_get_info()
        self.baseline = total - free
        self.peak = self.baseline
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.done.wait(0.2):
            free, total = self.torch.cuda.mem_get_info()
            self.peak = max(self.peak, total - free)

    def stop(self) -> int:
        self.done.set()
        self.thread.join()
        return self.peak - self.baseline


# ============================================================================= one worker, measured

DIAGNOSTICS = '''

def graph_node_counts(out):
    """gpu-check's diagnostics: what a sandboxed worker sees of the GPU (not an answer)."""
    import os
    import torch

    seen = {}
    for name in sorted(os.listdir("/dev")):
        if name.startswith("nvidia"):
            try:
                os.close(os.open("/dev/" + name, os.O_RDWR))
                seen[name] = "opens"
            except OSError as exc:
                seen[name] = f"{type(exc).__name__}: {exc.strerror}"
    info = {"dev": sorted(os.listdir("/dev")), "nvidia": seen, "session_device": str(out.device)}
    if out.device.type == "cuda":
        x = torch.randn(512, 512, device=out.device, requires_grad=True)
        (x @ x).sin().sum().backward()  # cuBLAS, elementwise kernels and autograd on the GPU
        torch.cuda.synchronize()
        free, total = torch.cuda.mem_get_info()
        info.update(gpu=torch.cuda.get_device_name(out.device), allocator_reserved_mb=torch.cuda.memory_reserved() / 2**20,
                    allocator_peak_mb=torch.cuda.max_memory_allocated() / 2**20, device_used_mb=(total - free) / 2**20)
    return info
'''


def diagnose(device: str, repeats: int = 3, sandbox: str | None = None) -> dict:
    """Start `repeats` workers on `device`, one after the other, each with the reference plus a
    diagnostics function: the time to start one (fork, sandbox, load, CUDA's initialisation) and
    to answer its first call, what it sees in /dev, and the GPU memory it holds."""
    from grader import catalog
    from grader.host import intake
    from grader.host.launcher import describe_sandbox, make_launcher
    from grader.host.student_code import Graph, StudentCode
    from grader.protocol.limits import Limits

    import torch

    limits = Limits()
    sub = intake.load(ROOT / "solutions")
    sub.files["graph.py"] += DIAGNOSTICS.encode()
    launcher = make_launcher(limits, catalog.load(), device=device, force_mode=sandbox)
    runs, seen, error = [], None, None
    try:
        for _ in range(repeats):
            gpu_before = _device_used_mb() if device == "cuda" else None
            student = StudentCode(sub.files, launcher, catalog.load().module_of_exercise, limits, device=device,
                                  course=catalog.load())
            try:
                start = time.perf_counter()
                student._ensure_worker("graph")  # fork, sandbox, load (and CUDA's initialisation)
                started = time.perf_counter()
                call = student.call("graph_node_counts", Graph("lecture", (torch.ones(3), torch.ones(3))))
                answered = time.perf_counter()
                if call.outcome != "returned" or type(call.value) is not dict:
                    raise RuntimeError(f"the diagnostics call {call.outcome}: {call.exception}")
                seen = call.value
                runs.append({"start_s": started - start, "first_call_s": answered - started,
                             "gpu_used_mb": None if gpu_before is None else _device_used_mb() - gpu_before})
            except Exception as exc:  # noqa: BLE001  (what failed is the finding)
                student.close()
                output = student.captured_output()
                error = f"{type(exc).__name__}: {exc}"[:2000] + (f"\nworker output:\n{output[-2000:]}" if output else "")
                break
            student.close()
    finally:
        plan = launcher.plan
        launcher.close()

    def median(key):
        values = [r[key] for r in runs if r[key] is not None]
        return round(statistics.median(values), 4) if values else None

    return {"device": device, "sandbox": describe_sandbox(plan, limits), "workers_started": len(runs),
            "error": error, "start_s": median("start_s"), "first_call_s": median("first_call_s"),
            "gpu_used_mb": median("gpu_used_mb"), "seen": seen}


def _device_used_mb() -> float:
    import torch

    free, total = torch.cuda.mem_get_info()
    return (total - free) / 2**20


# ============================================================================= comparing

def compare(entries: list[Entry], device: str, against: str, graded: dict, schema: bool) -> tuple[list, list]:
    """(differences, problems): every exercise whose score differs between the two runs (graded["device"]
    and graded["against"]), and every expectation that did not hold."""
    from grader import catalog

    everything = [e.name for e in catalog.load().exercises]
    differences, problems = [], []
    for e in entries:
        mine, theirs = graded["device"][e.name], graded["against"][e.name]
        if mine is None or theirs is None:
            problems.append(f"{e.name}: no score file on {device if mine is None else against}")
            continue
        theirs_by = {x["name"]: x for x in theirs["exercises"]}
        for x in mine["exercises"]:
            other = theirs_by[x["name"]]
            if x["score"] != other["score"]:
                failed = [t for t in x["tests"] if t["status"] != "passed"]
                expected = e.kind == "device mistake" and device == "cuda" and x["name"] == e.exercise
                differences.append({
                    "submission": e.name, "exercise": x["name"], "device": x["score"], "against": other["score"],
                    "max_score": x["max_score"], "expected": expected,
                    "mistakes": sorted({t["mistake"]["id"] for t in failed if t.get("mistake")}),
                    "messages": [f"{t['name']}: {t['message'][:200]}" for t in failed[:3]]})
                if not expected and not e.timing_dependent:
                    problems.append(f"{e.name}: {x['name']} scores {x['score']} with --device {device} "
                                    f"but {other['score']} with --device {against}")
        for side, report in ((device, mine), (against, theirs)):
            problems += [f"{e.name} on {side}: {p}" for p in expectation(e, side, report, everything, schema)]
    return differences, problems


def expectation(e: Entry, side: str, report: dict, everything: list[str], schema: bool) -> list[str]:
    import hostile_corpus as hc

    lost = {x["name"] for x in report["exercises"] if x["score"] < x["max_score"]}
    if e.kind == "reference":
        return [] if report["score"] == report["max_score"] else [f"the reference lost points on {sorted(lost)}"]
    if e.kind == "stubs":
        return [] if report["score"] == 0 else [f"the stubs scored {report['score']}"]
    if e.kind == "hostile":
        return [] if e.timing_dependent else hc.held(report, e.targets, everything, schema=schema)
    caught_here = e.kind == "mistake" or side == "cuda"
    if not caught_here:
        return [] if not lost else [f"a {side}-safe mistake lost points on {sorted(lost)}"]
    out = [] if lost == {e.exercise} else [f"lost points on {sorted(lost)}, expected {e.exercise} only"]
    named = [t for x in report["exercises"] if x["name"] == e.exercise for t in x["tests"]
             if t.get("mistake", {}).get("id") == e.mistake]
    return out + ([] if named else [f"no failed test of {e.exercise} names {e.mistake}"])


# ============================================================================= the machine and the table

def machine(device: str) -> dict:
    import torch

    info = {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count(),
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "dev_nvidia_on_host": sorted(n for n in os.listdir("/dev") if n.startswith("nvidia"))}
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        info.update(gpu=props.name, gpu_memory_gb=round(props.total_memory / 2**30, 1), gpus=torch.cuda.device_count())
    return info


def table(result: dict) -> str:
    device, against = result["device"], result["against"]
    t = result["timing"]
    d = result["diagnostics"].get(device, {})
    rows = [
        ("submissions graded on each device", f"{result['submissions']} ({result['counts']})"),
        ("exercises that score differently", f"{len(result['differences'])} "
         f"({sum(x['expected'] for x in result['differences'])} expected: device-specific mistakes)"),
        ("expectations that failed", str(len(result["problems"]))),
    ]
    for role, side in (("device", device), ("against", against)):
        if t.get(role):
            x = t[role]
            rows.append((f"`--device {side}`: seconds per submission", f"{x['s_per_submission']} ({x['submissions']} "
                         f"submissions without the hostile ones, {x['workers']} workers, {x['wall_s']} s in all; "
                         f"{x['mean_duration_s']} s each in its engine, the reference {x['reference_duration_s']} s)"))
    start = result.get("cuda_start_s")
    rows.append(("CUDA start per worker (start and first call, GPU minus CPU)",
                 "n/a (not a GPU run)" if start is None else f"{start} s"))
    rows.append(("GPU memory a worker used", "n/a" if d.get("gpu_used_mb") is None else
                 f"{d['gpu_used_mb']:.0f} MB (device-wide, one worker alone); peak while grading "
                 f"{result.get('gpu_peak_class_mb', 0):.0f} MB with {t['device'].get('workers')} workers"))
    seen = (d.get("seen") or {}).get("nvidia")
    rows.append(("/dev/nvidia* in the sandbox", f"host has {result['machine']['dev_nvidia_on_host'] or 'none'}; "
                 f"a worker sees {seen if seen else 'none'}"))
    rows.append(("sandbox", (d.get("sandbox") or {}).get("backend", "?") + (f"; error: {d['error'][:200]}"
                                                                           if d.get("error") else "")))
    lines = [f"| {device} against {against} | {result['machine'].get('gpu', result['machine']['platform'])} |",
             "| --- | --- |"] + [f"| {a} | {b} |" for a, b in rows]
    for x in result["differences"]:
        lines.append(f"| difference: {x['submission']}, {x['exercise']} | {device} {x['device']}, {against} "
                     f"{x['against']} of {x['max_score']}{'' if x['expected'] else ' (UNEXPECTED)'}; "
                     f"{', '.join(x['mistakes']) or 'no mistake named'} |")
    return "\n".join(lines)


# ============================================================================= main

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help="the device checked (default cuda)")
    parser.add_argument("--against", default="cpu", choices=["cuda", "cpu"], help="the device compared with")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--only", help="comma-separated submission names (reference, stubs, a mistake's file "
                                       "name, hostile-<technique>): a subset, for the dry run")
    parser.add_argument("--out", type=Path, default=ROOT / "bench-out")
    parser.add_argument("--repeats", type=int, default=3, help="workers started one by one for the start-up figures")
    args = parser.parse_args(argv)

    try:
        import torch
    except ImportError:
        print("gpu-check: this Python has no torch, so no GPU to check / 没有 torch，无法检查 GPU", file=sys.stderr)
        return NO_GPU
    if "cuda" in (args.device, args.against) and not torch.cuda.is_available():
        print(f"gpu-check: no CUDA GPU is available to this torch ({torch.__version__}); nothing was graded. "
              f"Run it on a machine with a GPU (the dry run: --device cpu --against cpu) "
              f"/ 没有可用的 CUDA GPU，未评分", file=sys.stderr)
        return NO_GPU
    try:
        import jsonschema  # noqa: F401
        schema = True
    except ImportError:
        schema = False  # the GPU machine has torch, pytest, pyyaml only: score files are judged without it

    args.out.mkdir(parents=True, exist_ok=True)
    json_path = args.out / "gpu-check.json"
    work = Path(tempfile.mkdtemp(prefix="autograd-lab-gpu-check-"))
    began = time.perf_counter()
    result: dict = {"device": args.device, "against": args.against, "machine": machine(args.device),
                    "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "schema_checked": schema, "diagnostics": {},
                    "timing": {}, "differences": [], "problems": [], "phases_s": {}}

    def phase(name: str, started: float) -> None:
        result["phases_s"][name] = round(time.perf_counter() - started, 1)
        json_path.write_text(json.dumps(result, indent=2, default=str) + "\n")
        print(f"gpu-check: {name} done ({result['phases_s'][name]} s; {time.perf_counter() - began:.0f} s so far)",
              file=sys.stderr, flush=True)

    try:
        started = time.perf_counter()
        for side in dict.fromkeys((args.device, args.against)):
            result["diagnostics"][side] = diagnose(side, args.repeats)
        if result["diagnostics"][args.device]["error"] and args.device == "cuda":
            result["diagnostics"]["cuda-without-namespaces"] = diagnose("cuda", repeats=1, sandbox="process")
        if args.device == "cuda" and args.against == "cpu":
            d, c = result["diagnostics"]["cuda"], result["diagnostics"]["cpu"]
            if d["start_s"] is not None and c["start_s"] is not None:
                result["cuda_start_s"] = round(d["start_s"] + d["first_call_s"] - c["start_s"] - c["first_call_s"], 3)
        phase("diagnostics", started)

        started = time.perf_counter()
        only = set(args.only.split(",")) if args.only else None
        entries = build_corpus(work, only)
        result["submissions"] = len(entries)
        result["counts"] = ", ".join(f"{sum(e.kind == k for e in entries)} {k}" for k in
                                     dict.fromkeys(e.kind for e in entries))
        phase("corpus", started)

        graded = {}
        for role, side in (("device", args.device), ("against", args.against)):
            started = time.perf_counter()
            peak = (lambda mb: result.update(gpu_peak_class_mb=max(result.get("gpu_peak_class_mb", 0), mb / 2**20))
                    ) if side == "cuda" else None
            done = grade_side(entries, side, args.workers, work / role, on_gpu_memory=peak)
            graded[role] = done["reports"]
            result["timing"][role] = done["timing"]
            phase(f"grading with --device {side}", started)

        result["differences"], result["problems"] = compare(entries, args.device, args.against, graded, schema)
        for side, d in result["diagnostics"].items():
            if d["error"]:
                result["problems"].append(f"diagnostics on {side}: {d['error'].splitlines()[0]}")
        phase("comparison", began)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print(table(result))
    if result["problems"]:
        print("\nExpectations that did not hold:")
        for p in result["problems"]:
            print(f"- {p}")
    print(f"\n{json_path} ({time.perf_counter() - began:.0f} s)")
    return 1 if result["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
