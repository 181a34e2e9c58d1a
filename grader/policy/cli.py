"""`grader gradebook SCORES --policy policy.yaml --out FINAL`: argument parsing and messages only.

Exit status: 0 every submission has its grade in FINAL; 1 FINAL was written but some submissions
were left out (no hand-in time, an invalid score file), listed on stderr and in FINAL/summary.csv;
2 bad input (policy, CSV files, score folder): nothing was written.
"""

from __future__ import annotations

import sys
from pathlib import Path



def register(commands, exports) -> None:
    p = commands.add_parser(
        "gradebook", help="apply the course policy (due time, late penalty, extensions, overrides) to score files",
        description="Write FINAL: each score file of SCORES with the course policy applied (`score` is the grade; "
                    "`raw_score` and `adjustments` say how it came from the graded score), and FINAL/summary.csv. "
                    "Every `grader export` and `grader publish` command reads FINAL as it reads SCORES.")
    p.add_argument("scores", type=Path, metavar="SCORES", help="the --out folder of `grader grade`")
    p.add_argument("--policy", required=True, type=Path, metavar="policy.yaml",
                   help="due time, grace, late penalty, and the files of hand-in times, extensions and overrides")
    p.add_argument("--out", required=True, type=Path, metavar="FINAL", help="the folder for the adjusted score files")
    p.set_defaults(func=cmd_gradebook)


def cmd_gradebook(args) -> int:
    from grader.policy.gradebook import run_gradebook

    book = run_gradebook(args.scores, args.policy, args.out)  # a PolicyError is bad input: grader.cli prints it, exit 2
    for final in book.written:
        if final["adjustments"]:
            changes = "; ".join(f"{a['kind']}{' ' + a['exercise'] if 'exercise' in a else ''} {a['points']:+g}"
                                for a in final["adjustments"])
            print(f"  {final['submission']}: {final['raw_score']:g} -> {final['score']:g}/{final['max_score']:g} "
                  f"({changes})")
    for warning in book.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if book.left_out:
        print(f"left out of {args.out} (no export grades them until this is fixed):", file=sys.stderr)
        for name, reason in sorted(book.left_out.items()):
            print(f"  {name}: {reason}", file=sys.stderr)
    late = sum(any(a["kind"] == "late" for a in f["adjustments"]) for f in book.written)
    print(f"gradebook: {len(book.written)} grade(s) in {args.out} ({late} late), {len(book.left_out)} left out; "
          f"details in {Path(args.out) / 'summary.csv'}")
    return 1 if book.left_out else 0
