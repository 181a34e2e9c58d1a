"""The figures of the "every point earned" issue: lazy submissions, the corpus under `grader check`,
named mistakes, and a `--resume` after a seed change.

    PYTHONPATH=. python3 bench/points_figures.py

* the score of each lazy submission generated from the reference (grader/validate/lazy.py:
  zeros, ones, random values of the right structure, the right answers for the public and
  docstring inputs only), in all and on the function exercises (not the autograd.Functions);
* how many learner mistakes of tests/submissions/wrong/ fail `grader check` (public checks only);
* how many get a failed test on their exercise carrying their own mistake id (MISTAKE);
* a `grader grade --resume` with another seed over a finished folder: how many it regraded, and why.

Not a test: `grader validate`, tests/test_no_points_without_work.py and tests/test_wrong_submissions.py
assert each outcome.
"""

from __future__ import annotations

import ast
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def main() -> None:
    from conftest import SOLUTIONS, STUBS, make_submission

    from grader import catalog
    from grader.display import grading_summary
    from grader.host.runner import Options, grade_many
    from grader.validate import mistakes
    from grader.validate.lazy import MODES, lazy_modules

    course = catalog.load()
    CORPUS = mistakes.read_folder(course.place("learner_mistakes"))
    classes = {n.name for m in course.modules for n in ast.parse((course.place("stubs") / m).read_text()).body
               if isinstance(n, ast.ClassDef)}
    functions_only = {e.name for e in course.exercises if e.name not in classes}

    workers = os.cpu_count() or 2
    tmp = Path(tempfile.mkdtemp(prefix="points-figures-"))
    try:
        paths = [str(make_submission(tmp / f"lazy_{m}", lazy_modules(course, m))) for m in MODES]
        most = sum(course.exercise(n).max_score for n in functions_only)
        for r in sorted(grade_many(paths, tmp / "lazy", Options(seed=0), workers=workers).reports,
                        key=lambda r: r["submission"]):
            functions = sum(e["score"] for e in r["exercises"] if e["name"] in functions_only)
            print(f"{r['submission']:<14} total {r['score']:g}/{r['max_score']:g}, function exercises {functions:g}/{most:g}")

        paths = [str(make_submission(tmp / "subs" / name, mistakes.submission_modules(entry, course)))
                 for name, entry in CORPUS.items()]
        check = grade_many(paths, tmp / "check", Options(seed=0, folders=("public",)), workers=workers).reports
        full = grade_many(paths, tmp / "full", Options(seed=0), workers=workers).reports
        fails = [r for r in check if any(t["status"] != "passed" for e in r["exercises"] for t in e["tests"])]
        named = [r for r in full if any(t.get("mistake", {}).get("id") == CORPUS[r["submission"]]["MISTAKE"]
                                        for e in r["exercises"] for t in e["tests"])]
        print(f"corpus: {len(CORPUS)} mistakes; {len(fails)} fail grader check; {len(named)} named by their own id")

        out = tmp / "resume"
        grade_many([str(SOLUTIONS), str(STUBS)] + paths[:8], out, Options(seed=0), workers=workers)
        summary = grade_many([str(SOLUTIONS), str(STUBS)] + paths[:8], out, Options(seed=1), workers=workers,
                             resume=True)
        print(grading_summary(summary.reports, len(summary.skipped), summary.seconds, str(out), summary.regraded))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
