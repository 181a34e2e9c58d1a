"""The report's charts: matplotlib figures rendered to SVG text for inlining in one HTML page.

No pyplot and no global state: each chart is a `Figure` of its own, saved as SVG with text kept
as text (smaller, searchable, rendered with the browser's fonts), no date stamp, and ids salted
with the chart's name so that several charts can share one page. Every bar carries an id
`bar-<chart>-<n>`; tests count them to check that a chart drew what the figures say.
"""

from __future__ import annotations

import io
import re

from grader.report.figures import ClassFigures, Histogram, TestFigure
from grader.report.pages import num

GREEN, AMBER, RED, BLUE, GREY = "#2e7d32", "#f9a825", "#c62828", "#1565c0", "#9e9e9e"
WIDTH_IN = 7.5


def svg(fig, name: str) -> str:
    """The figure as an <svg> element (no XML prolog), its ids unique to `name`."""
    import matplotlib

    out = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": f"autograd-lab-{name}",
                                "font.family": ["DejaVu Sans", "sans-serif"]}):
        fig.savefig(out, format="svg", metadata={"Date": None}, bbox_inches="tight")
    text = out.getvalue()
    text = re.sub(r"\s*<metadata>.*?</metadata>", "", text[text.index("<svg"):], flags=re.S)
    return re.sub(r"<svg ", f'<svg role="img" aria-label="{name}" data-chart="{name}" ', text, count=1)


def _figure(height_in: float):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(WIDTH_IN, height_in), dpi=96)
    ax = fig.subplots()
    ax.spines[["top", "right"]].set_visible(False)
    return fig, ax


def _tag(bars, chart: str, start: int = 0) -> int:
    for i, bar in enumerate(bars, start):
        bar.set_gid(f"bar-{chart}-{i}")
    return start + len(bars)


def _histogram_bars(ax, h: Histogram, chart: str, color: str):
    widths = [b - a for a, b in zip(h.edges, h.edges[1:])]
    bars = ax.bar(h.edges[:-1], h.counts, width=widths, align="edge", color=color, edgecolor="white", linewidth=0.5)
    _tag(bars, chart)
    ax.set_ylabel("submissions")
    ax.yaxis.get_major_locator().set_params(integer=True)
    return bars


def score_histogram(f: ClassFigures) -> str:
    fig, ax = _figure(2.6)
    _histogram_bars(ax, f.histogram, "scores", BLUE)
    ax.axvline(f.mean, color=RED, linestyle="--", linewidth=1.2, label=f"mean {f.mean:.1f}")
    ax.axvline(f.median, color="black", linestyle=":", linewidth=1.2, label=f"median {f.median:.1f}")
    ax.set_xlim(0, f.max_score)
    ax.set_xlabel(f"score (of {f.max_score:g})")
    ax.legend(frameon=False, loc="upper left")
    return svg(fig, "scores")


def exercise_chart(f: ClassFigures) -> str:
    """One 100% bar per exercise, hardest at the top: at zero, partial credit, full marks."""
    exercises = f.exercises
    fig, ax = _figure(0.8 + 0.27 * len(exercises))
    y = list(range(len(exercises)))[::-1]  # hardest (first) at the top
    zero = [100 * e.share_zero for e in exercises]
    full = [100 * e.share_full for e in exercises]
    partial = [100 - z - fl for z, fl in zip(zero, full)]
    n = _tag(ax.barh(y, zero, color=RED, label="at zero"), "exercises")
    n = _tag(ax.barh(y, partial, left=zero, color=AMBER, label="partial"), "exercises", n)
    _tag(ax.barh(y, full, left=[z + p for z, p in zip(zero, partial)], color=GREEN, label="full marks"),
         "exercises", n)
    ax.set_yticks(y, [e.name for e in exercises], fontsize=8)
    for yi, e in zip(y, exercises):
        ax.text(101, yi, f"mean {num(e.mean)}/{num(e.max_score)}", va="center", fontsize=7.5)
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of submissions")
    ax.legend(frameon=False, ncols=3, loc="lower center", bbox_to_anchor=(0.5, 1.0), fontsize=8)
    return svg(fig, "exercises")


def test_chart(tests: list[TestFigure], visibility: str) -> str:
    """Pass rate of every test, lowest first; a test nobody passes has a bar of height 0 and a red
    marker above it, so that it stands out."""
    chart = f"tests-{visibility}"
    fig, ax = _figure(2.4)
    colors = [AMBER if t.pass_rate < 0.5 else GREEN for t in tests]
    _tag(ax.bar(range(len(tests)), [100 * t.pass_rate for t in tests], color=colors, width=0.85), chart)
    flagged = [i for i, t in enumerate(tests) if t.nobody_passes]
    if flagged:
        ax.plot(flagged, [3] * len(flagged), linestyle="none", marker="v", color=RED, markersize=5,
                label="nobody passes: is the test right?")
        ax.legend(frameon=False, loc="upper left", fontsize=8)
    ax.set_xlim(-0.8, len(tests) - 0.2)
    ax.set_ylim(0, 100)
    ax.set_ylabel("% passed")
    ax.set_xlabel(f"{len(tests)} {'public' if visibility == 'visible' else 'hidden'} tests, "
                  "lowest pass rate first")
    ax.set_xticks([])
    return svg(fig, chart)


def duration_histogram(f: ClassFigures) -> str:
    fig, ax = _figure(2.2)
    _histogram_bars(ax, f.duration_histogram, "durations", GREY)
    ax.set_xlabel("seconds to grade one submission")
    return svg(fig, "durations")


def all_charts(f: ClassFigures) -> dict[str, str]:
    charts = {"scores": score_histogram(f), "exercises": exercise_chart(f), "durations": duration_histogram(f)}
    for visibility in ("visible", "hidden"):
        tests = f.tests_of(visibility)
        if tests:
            charts[f"tests-{visibility}"] = test_chart(tests, visibility)
    return charts
