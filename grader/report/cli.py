"""`grader report`, `grader feedback` and `grader diff`: arguments and messages only.

Exit status: 0 done (for `diff` also when scores changed); 2 bad input (no score files, an
unwritable output, a missing instructor extra), with a message and nothing written.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from grader.errors import usage_errors
from grader.report import ReportError

EXIT_OK = 0
EXTRA_HINT = "pip install -e '.[instructor]' (matplotlib and jinja2)"


def register(commands, exports) -> None:
    report = commands.add_parser("report", help="one self-contained page for the class: plots, rates, mistakes, problems")
    report.add_argument("scores", nargs="+", metavar="SCORES", help="the --out folder of `grader grade` (or score files)")
    report.add_argument("--out", type=Path, metavar="FILE", help="where to write the page (required for HTML; "
                        "Markdown goes to the terminal without it)")
    report.add_argument("--format", choices=["html", "md"], default="html", help="html (default) or md: the same figures as Markdown tables")
    report.add_argument("--feedback-url", default="feedback/", metavar="BASE",
                        help="where the table links each submission's feedback page: BASE<submission>.html, relative "
                        "to the report (default feedback/, as `grader feedback SCORES --out <report's folder>/feedback`); "
                        "'' for no links")
    report.add_argument("--public", action="store_true",
                        help="figures only, for students or a forum post: no submission names, no per-submission table, "
                        "hidden tests' messages as students see them")
    report.set_defaults(func=_guarded(cmd_report))

    feedback = commands.add_parser("feedback", help="one page per submission for its student (no hidden inputs)")
    feedback.add_argument("scores", nargs="+", metavar="SCORES", help="the --out folder of `grader grade` (or score files)")
    feedback.add_argument("--out", type=Path, required=True, metavar="DIR", help="folder for <submission>.html (or .md)")
    feedback.add_argument("--format", choices=["html", "md"], default="html")
    feedback.set_defaults(func=_guarded(cmd_feedback))

    diff = commands.add_parser("diff", help="what changed between two gradings of the same class, and why")
    diff.add_argument("old", metavar="OLD", help="score folder (or file) before the regrade")
    diff.add_argument("new", metavar="NEW", help="score folder (or file) after it")
    diff.add_argument("--format", choices=["md", "csv"], default="md", help="md (default) or csv")
    diff.add_argument("--out", type=Path, metavar="FILE", help="write here instead of the terminal")
    diff.set_defaults(func=_guarded(cmd_diff))


def _guarded(command):
    """The commands' one wrapper (`grader.errors.usage_errors`): a ReportError is bad input already;
    an unreadable file and a missing optional package join it. A message and exit status 2."""
    return usage_errors(command, missing_hint=EXTRA_HINT)


def _load(paths):
    from grader.report.scores import load

    scores = load(paths)
    for u in scores.unusable:
        print(f"not used: {u.path}: {u.reason}", file=sys.stderr)
    return scores


def _write(path: Path | None, text: str) -> None:
    if path is None:
        sys.stdout.write(text)
        return
    from grader.host.results import write_atomic

    write_atomic(path, text)


def cmd_report(args) -> int:
    from grader.report import class_report

    if args.format == "html" and args.out is None:
        raise ReportError("an HTML report needs --out FILE (or use --format md to print Markdown)")
    start = time.perf_counter()
    scores = _load(args.scores)
    source = ", ".join(args.scores)
    if args.format == "md":
        text = class_report.markdown(scores, source, public=args.public)
    else:
        text = class_report.html(scores, source, None if args.public or args.feedback_url == "" else args.feedback_url,
                                 public=args.public)
    _write(args.out, text)
    if args.out is not None:
        print(f"wrote {args.out}: {len(scores.reports)} submissions, {len(text.encode()) / 1024:.0f} KiB, "
              f"in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return EXIT_OK


def cmd_feedback(args) -> int:
    from grader.report.feedback import write_pages

    scores = _load(args.scores)
    written = write_pages(scores, args.out, args.format)
    print(f"wrote {len(written)} feedback pages in {args.out}", file=sys.stderr)
    return EXIT_OK


def cmd_diff(args) -> int:
    from grader.report import diff

    comparison = diff.compare(_load([args.old]).reports, _load([args.new]).reports)
    text = diff.csv_text(comparison) if args.format == "csv" else diff.markdown(comparison, args.old, args.new)
    _write(args.out, text)
    return EXIT_OK
