"""What `grader validate` costs on this course: the whole audit, with one grading process and with N.

    python bench/validate_benchmark.py [--workers 1 2]

Prints, per run, the wall time, the gradings done (the reference at each seed, the stubs, every learner
mistake, the lazy answers) and the seconds per grading, and whether every check held. The audit grades
with the engine's process pool (`grader.host.runner.grade_many`), so N processes divide the time of
the batch at the first seed; the reference at the other seeds is graded in the audit's own process.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from grader import catalog  # noqa: E402
from grader.validate import audit  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, os.cpu_count() or 2])
    args = parser.parse_args()
    course = catalog.use(None)
    print(f"machine: {os.cpu_count()} CPUs, load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    for workers in args.workers:
        start = time.perf_counter()
        result = audit.run(course, course.place("learner_mistakes"), workers=workers, say=lambda line: None)
        seconds = time.perf_counter() - start
        print(f"workers {workers}: {seconds:.1f} s for {result.graded} gradings ({seconds / result.graded:.2f} s each), "
              f"{'every check held' if result.ok else f'{len(result.problems)} problems'}; "
              f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
