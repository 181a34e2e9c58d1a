"""`grader similarity SUBMISSIONS... --out similarity.html [--csv FILE] [--course PATH]`: arguments only.

For instructors; never part of the student bundle. Exit status 0 when the page is written, 2 on bad input.
"""

from __future__ import annotations

import gc
import sys
from contextlib import contextmanager
from pathlib import Path

from grader import catalog
from grader.errors import UsageError


def register(commands, exports) -> None:
    p = commands.add_parser("similarity", help="which hand-ins share code beyond the stub: a page to review (instructors)")
    p.add_argument("submissions", nargs="+", metavar="SUBMISSION", help="hand-in folders or .zip files, or folders of them")
    p.add_argument("--out", required=True, type=Path, metavar="FILE", help="the HTML page to write")
    p.add_argument("--csv", type=Path, metavar="FILE", help="also write the ranked pairs as CSV")
    p.add_argument("--top", type=int, default=100, metavar="N", help="pairs shown on the page (default 100)")
    p.add_argument("--course", metavar="PATH", default=None, help="the course file (or its folder)")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="processes that read the hand-ins (default: one per CPU; 1: all in this one)")
    p.set_defaults(func=cmd_similarity)


def cmd_similarity(args) -> int:
    from grader.similarity import handins, index, page

    course = catalog.use(args.course)
    paths = handins.expand(args.submissions)
    missing = [p for p in paths if not Path(p).exists()]
    if missing:
        raise UsageError(f"not found: {', '.join(missing)}")
    with _collector_paused():
        hand_ins = handins.read_all(paths, course, jobs=args.jobs)
        result = index.review(hand_ins, [e.name for e in course.exercises])
    args.out.write_text(page.html_page(result, course, top=args.top), encoding="utf-8")
    if args.csv:
        args.csv.write_text(page.csv_text(result, limit=20000), encoding="utf-8")
    unread = sum(1 for h in hand_ins if h.problems)
    print(f"{len(hand_ins)} hand-ins, {len(result.clusters)} clusters, {unread} with problems: {args.out}", file=sys.stderr)
    return 0


@contextmanager
def _collector_paused():
    """The cycle collector off while the class is read and reviewed: they make millions of objects and
    no cycles, so every collection walks what is kept for nothing (about a fifth of the CPU time)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
