"""Time and peak memory of `grader similarity` on a class of N sample submissions (default 200 and 2000).

The class is bench/make_submissions.py's (the reference, the stubs and every learner mistake, cycled):
the hardest case for an index, since every hand-in shares nearly everything with every other.
Each size runs in a fresh process; peak memory is its maximum resident set.

    python bench/similarity_benchmark.py [--sizes 200 2000]
"""

from __future__ import annotations

import argparse
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import make_submissions  # noqa: E402


def run(n: int, work: Path) -> tuple[float, float]:
    folder = work / f"class-{n}"
    make_submissions.make_class(folder, total=n)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "grader", "similarity", str(folder), "--out", str(work / f"{n}.html"),
                    "--csv", str(work / f"{n}.csv")], cwd=ROOT, check=True, capture_output=True, timeout=3600)
    seconds = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # the largest child so far
    return seconds, peak_mb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 2000])
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="similarity-bench-"))
    try:
        for n in sorted(args.sizes):
            seconds, peak = run(n, work)
            print(f"{n} hand-ins: {seconds:.1f} s, peak RSS so far {peak:.0f} MB")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
