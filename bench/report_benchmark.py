"""Size and speed of `grader report` for a class of 200 and of 2,000 submissions.

    python bench/report_benchmark.py                          # grades the 200-submission class first
    python bench/report_benchmark.py --scores bench-out/scores  # or reuse a graded folder

The class of 200 is the benchmark class of bench/benchmark.py (bench/make_submissions.py: the
reference, the stubs and every learner mistake, cycled), graded with `grader grade --workers 2`.
The class of 2,000 is not graded: it is those score files copied ten times under new submission
names (the copies hold real results, so every figure and row is as large as a real class's).

Measured, each the median of --repeats runs:
- `grader report SCORES --out report.html`: wall time of the command (Python start included) and
  the file's size; `grader report --format md` and `grader feedback` wall times;
- in headless Chromium (tests/browser.py): from navigation to the load event and to the first
  contentful paint, read from the page's Performance API, and the time the submissions table
  takes to sort on a click (the sort and the layout it forces).

Results go to stdout and to <out>/report-benchmark.json. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT / "tests")]

from browser import chromium  # noqa: E402
from make_submissions import make_class  # noqa: E402

TIMING_JS = """() => {
  const nav = performance.getEntriesByType("navigation")[0];
  const paint = performance.getEntriesByName("first-contentful-paint")[0];
  return {load_ms: nav.loadEventEnd, dom_ms: nav.domContentLoadedEventEnd, fcp_ms: paint ? paint.startTime : null};
}"""
SORT_JS = """() => {
  const th = document.querySelector("#submissions-table th:nth-child(2)");
  const start = performance.now();
  th.click();
  document.body.offsetHeight;  // the layout the new order needs
  return performance.now() - start;
}"""


def grader(*args: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "grader", *args], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def graded_class(out: Path, n: int, workers: int) -> Path:
    klass, scores = out / "class", out / "scores"
    shutil.rmtree(klass, ignore_errors=True)
    shutil.rmtree(scores, ignore_errors=True)
    make_class(klass, total=n)
    print(f"grading {n} submissions with {workers} workers ...", flush=True)
    grader("grade", str(klass), "--out", str(scores), "--workers", str(workers))
    return scores


def replicated(scores: Path, copies: int, out: Path) -> Path:
    """The score files of `scores`, `copies` times, each copy under new submission names."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    files = sorted(p for p in scores.glob("*.json") if not p.name.startswith("."))
    for copy in range(1, copies + 1):
        for path in files:
            report = json.loads(path.read_text(encoding="utf-8"))
            report["submission"] = f"{report['submission']}-copy{copy:02d}"
            (out / f"{report['submission']}.json").write_text(json.dumps(report), encoding="utf-8")
    return out


def measure(scores: Path, work: Path, repeats: int) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    html = work / "report.html"
    n = len([p for p in scores.glob("*.json") if not p.name.startswith(".")])
    report_s = [grader("report", str(scores), "--out", str(html)) for _ in range(repeats)]
    md_s = [grader("report", str(scores), "--format", "md", "--out", str(work / "report.md")) for _ in range(repeats)]
    feedback_s = grader("feedback", str(scores), "--out", str(work / "feedback"))
    loads, sorts = [], []
    with chromium() as page:
        for _ in range(repeats):
            page.goto(html.as_uri())
            page.wait_for_load_state("load")
            loads.append(page.evaluate(TIMING_JS))
            sorts.append(page.evaluate(SORT_JS))
        errors = list(page.errors)
    return {
        "submissions": n,
        "report_html_bytes": html.stat().st_size,
        "report_md_bytes": (work / "report.md").stat().st_size,
        "grader_report_s": statistics.median(report_s),
        "grader_report_md_s": statistics.median(md_s),
        "grader_feedback_s": feedback_s,
        "browser_load_ms": statistics.median(x["load_ms"] for x in loads),
        "browser_dom_content_loaded_ms": statistics.median(x["dom_ms"] for x in loads),
        "browser_first_contentful_paint_ms": statistics.median(x["fcp_ms"] for x in loads if x["fcp_ms"] is not None),
        "table_sort_ms": statistics.median(sorts),
        "console_errors": errors,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench-out")
    parser.add_argument("--scores", type=Path, help="a graded folder to use as the small class (default: grade one)")
    parser.add_argument("--n", type=int, default=200, help="submissions to grade when --scores is not given")
    parser.add_argument("--copies", type=int, default=10, help="the large class is the small one this many times")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    small = args.scores or graded_class(args.out / "report-bench", args.n, args.workers)
    large = replicated(small, args.copies, args.out / "report-bench" / f"scores-x{args.copies}")
    load_before = os.getloadavg()[0]
    results = {"machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
               "small": measure(small, args.out / "report-bench" / "small", args.repeats),
               "large": measure(large, args.out / "report-bench" / "large", args.repeats)}
    results["load_average_1min"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]  # other work on the machine
    (args.out / "report-benchmark.json").write_text(json.dumps(results, indent=2), encoding="utf-8")
    print(f"| | {results['small']['submissions']} submissions | {results['large']['submissions']} submissions |")
    print("| --- | ---: | ---: |")
    for key, unit, scale in (("report_html_bytes", "KiB", 1 / 1024), ("report_md_bytes", "KiB", 1 / 1024),
                             ("grader_report_s", "s", 1), ("grader_report_md_s", "s", 1), ("grader_feedback_s", "s", 1),
                             ("browser_dom_content_loaded_ms", "ms", 1), ("browser_first_contentful_paint_ms", "ms", 1),
                             ("browser_load_ms", "ms", 1), ("table_sort_ms", "ms", 1)):
        print(f"| {key} | {results['small'][key] * scale:.1f} {unit} | {results['large'][key] * scale:.1f} {unit} |")
    print(f"machine: {results['machine']}; 1-minute load average before and after: {results['load_average_1min']}")
    for size in ("small", "large"):
        if results[size]["console_errors"]:
            print(f"console errors ({size}): {results[size]['console_errors']}")


if __name__ == "__main__":
    main()
