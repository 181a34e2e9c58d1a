"""The templates every page is written with (grader/report/templates/) and their filters.

HTML templates are autoescaped: submission names, messages and hints come from score files and
may hold anything a submission chose, so nothing is written to a page unescaped except the SVG
charts, which matplotlib made from numbers and exercise names (and escaped itself). Markdown
templates escape table cells with the `cell` filter.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from urllib.parse import quote

from grader.lms.scores import format_points

TEMPLATES = Path(__file__).parent / "templates"


def num(x) -> str:
    """A score as people read it: at most 2 decimals, no trailing zeros ("" for none)."""
    return "" if x is None else format_points(float(x))


def pct(x: float, digits: int = 0) -> str:
    return f"{100 * x:.{digits}f}%"


def breakable(text):
    """HTML text that may wrap after each underscore (long exercise names in narrow headers)."""
    from markupsafe import Markup, escape

    return Markup(str(escape(text)).replace("_", "_<wbr>"))


def md_cell(text) -> str:
    """Text for one Markdown table cell: one line, pipes escaped."""
    return " ".join(str(text).split()).replace("\\", "\\\\").replace("|", "\\|") if text is not None else ""


def md_block(text) -> str:
    """Text as a Markdown indented code block: shown as written, no markup or HTML interpreted."""
    return "\n".join("    " + line for line in str(text).splitlines())


@lru_cache(maxsize=2)
def environment(markdown: bool = False):
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=not markdown,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    env.filters.update(num=num, pct=pct, cell=md_cell, block=md_block, breakable=breakable,
                       url=lambda s: quote(str(s)))
    return env


def render(template: str, **context) -> str:
    return environment(template.endswith(".md.j2")).get_template(template).render(**context)
