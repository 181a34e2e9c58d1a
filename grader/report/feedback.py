"""`grader feedback`: one page per submission that its student can read, in HTML or Markdown.

Each page is made from `student_view` only (never from the score file itself), so what a page can
show is decided in one place. Pages are named like the score files (`<submission>.html`), so the
class report's table links to them, and written atomically.
"""

from __future__ import annotations

from pathlib import Path

from grader.display import STATUS_WORD
from grader.host.results import write_atomic
from grader.report import ReportError, pages
from grader.report.scores import ScoreFiles, page_name
from grader.student_view import fixed_texts, student_view


def page(report: dict, fmt: str = "html", fixed: frozenset[str] | None = None) -> str:
    template = "feedback.md.j2" if fmt == "md" else "feedback.html.j2"
    return pages.render(template, v=student_view(report, fixed), status_words=STATUS_WORD)


def write_pages(scores: ScoreFiles, out: Path, fmt: str = "html") -> list[Path]:
    fixed = fixed_texts()
    suffix = ".md" if fmt == "md" else ".html"
    names: dict[str, str] = {}
    for report in scores.reports:
        other = names.setdefault(page_name(report["submission"]), report["submission"])
        if other != report["submission"]:
            raise ReportError(f"submissions {other!r} and {report['submission']!r} would share the page "
                              f"{page_name(other)}{suffix}: rename one and grade it again")
    written = []
    for report in scores.reports:
        path = Path(out) / (page_name(report["submission"]) + suffix)
        write_atomic(path, page(report, fmt, fixed))
        written.append(path)
    return written
