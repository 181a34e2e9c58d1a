"""The class report and a feedback page in a real browser: headless Chromium (/usr/bin/chromium).

Checked: no console error and no request beyond the file itself; every chart is a non-empty SVG
whose bars are the figures (one bar per bin, exercise segment or test; a bar is drawn exactly when
its value is not zero, at a height in proportion to it); the table sorts on a click; a screenshot.
Under CI=1 a missing Chromium or Playwright fails the test instead of skipping it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from browser import CHROMIUM, chromium
from conftest import ROOT
from grader.report.figures import class_figures
from report_class import graded_class, load_folder  # noqa: F401  (fixture)

pytestmark = pytest.mark.slow


def require_browser() -> None:
    missing = None
    if not CHROMIUM.is_file():
        missing = f"needs {CHROMIUM} (apt-get install -y chromium; .ci/run installs it)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            missing = "needs Playwright's Python package (the dev extra)"
    if missing:
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)


@pytest.fixture(scope="module")
def site(graded_class, tmp_path_factory):
    require_browser()
    root = tmp_path_factory.mktemp("site")
    for args in (("report", str(graded_class), "--out", str(root / "report.html")),
                 ("feedback", str(graded_class), "--out", str(root / "feedback"))):
        result = subprocess.run([sys.executable, "-m", "grader", *args], cwd=ROOT, capture_output=True, text=True,
                                timeout=300)
        assert result.returncode == 0, result.stderr
    return root


@pytest.fixture(scope="module")
def figures(graded_class):
    return class_figures(list(load_folder(graded_class).values()))


BARS_JS = """chart => Array.from(document.querySelectorAll(`#chart-${chart} svg g[id^="bar-${chart}-"]`))
    .sort((a, b) => Number(a.id.split("-").pop()) - Number(b.id.split("-").pop()))
    .map(g => { const r = g.getBoundingClientRect(); return [r.width, r.height]; })"""
COLUMN_JS = """column => Array.from(document.querySelectorAll("#submissions-table tbody tr"))
    .map(row => [row.getBoundingClientRect().top, row.cells[column].textContent.trim()])
    .sort(([a], [b]) => a - b).map(([, text]) => text)"""  # as shown on the screen, top to bottom


def expected_values(f) -> dict[str, list[float]]:
    """Each chart's bar values, in the order of the bars' ids."""
    ex = f.exercises
    return {
        "scores": f.histogram.counts,
        "exercises": [e.share_zero for e in ex] + [1 - e.share_zero - e.share_full for e in ex]
                     + [e.share_full for e in ex],
        "durations": f.duration_histogram.counts,
        "tests-visible": [t.pass_rate for t in f.tests_of("visible")],
        "tests-hidden": [t.pass_rate for t in f.tests_of("hidden")],
    }


def test_report_renders_every_chart_and_sorts(site, figures, tmp_path):
    url = (site / "report.html").as_uri()
    with chromium() as page:
        page.goto(url)
        page.wait_for_load_state("load")
        for chart, values in expected_values(figures).items():
            sizes = page.evaluate(BARS_JS, chart)
            assert len(sizes) == len(values), chart
            svg_box = page.locator(f"#chart-{chart} svg").bounding_box()
            assert svg_box["width"] > 300 and svg_box["height"] > 100, chart
            length = [w for w, _ in sizes] if chart == "exercises" else [h for _, h in sizes]
            for value, drawn in zip(values, length):
                assert (drawn > 0.5) == (value > 1e-9), (chart, value, drawn)
            largest = max(range(len(values)), key=lambda i: values[i])
            for value, drawn in zip(values, length):   # in proportion to the largest, to a pixel
                assert drawn == pytest.approx(length[largest] * value / values[largest], abs=1.0), chart

        scores = lambda: [float(s) for s in page.evaluate(COLUMN_JS, 1)]  # noqa: E731
        names = lambda: page.evaluate(COLUMN_JS, 0)  # noqa: E731
        assert names() == sorted(names())                                  # as written: by name
        page.click("#submissions-table th:nth-child(2)")
        assert scores() == sorted(scores()) and scores()[0] == 0           # the stubs first
        page.click("#submissions-table th:nth-child(2)")
        assert scores() == sorted(scores(), reverse=True) and scores()[0] == 100
        assert page.get_attribute("#submissions-table th:nth-child(2)", "aria-sort") == "descending"
        page.click("#submissions-table th:nth-child(1)")
        assert names() == sorted(names(), key=str.lower)

        shot = tmp_path / "report.png"
        page.screenshot(path=str(shot), full_page=True)
        assert page.errors == []
        assert page.requests == [url]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000


def test_a_feedback_page_opens_from_the_report_link(site):
    with chromium() as page:
        page.goto((site / "report.html").as_uri())
        with page.expect_navigation():
            page.click("#submissions-table a:text-is('leaky')")
        assert page.url.endswith("/feedback/leaky.html")
        assert "your feedback" in page.inner_text("h1")
        assert "LEAKPRINT" not in page.content()
        assert page.errors == []
        assert all(u.startswith("file://") for u in page.requests)


# ----------------------------------------------------------------------------- the submissions table

WORDS_SPLIT_JS = """() => {
    // every word of every header, as laid out: a word drawn on two lines has rects at two heights
    const split = [];
    for (const th of document.querySelectorAll("#submissions-table th")) {
        const walker = document.createTreeWalker(th, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            for (const m of node.data.matchAll(/[^\\s_]+/g)) {
                const range = document.createRange();
                range.setStart(node, m.index);
                range.setEnd(node, m.index + m[0].length);
                const tops = new Set(Array.from(range.getClientRects(), r => Math.round(r.top)));
                if (tops.size > 1) split.push(m[0]);
            }
        }
    }
    return split;
}"""
SCROLL_JS = """() => {
    const box = document.getElementById("submissions-scroll");
    box.scrollIntoView();
    const r = box.getBoundingClientRect();
    return {overflow: box.scrollWidth - box.clientWidth, bar: box.offsetHeight - box.clientHeight - 2,
            bottom: r.bottom, window: window.innerHeight, left: r.left};
}"""


@pytest.fixture(scope="module")
def wide_class(tmp_path_factory):
    """19 exercises named like the problem set's, and failure messages with numbers and no mistake id."""
    require_browser()
    from lms_factory import EXERCISES, make_score

    root = tmp_path_factory.mktemp("wide")
    (root / "scores").mkdir()
    for i in range(30):
        data = make_score(f"student{i:02d}", [name for name, _ in EXERCISES[: i % 7]])
        for exercise in data["exercises"]:
            for test in exercise["tests"]:
                if test["status"] == "failed":
                    test["message"] = f"expected shape [{i + 2}, 3] but got [3, {i + 2}] / 形状应为 [{i + 2}, 3]，实际为 [3, {i + 2}]"
        (root / "scores" / f"student{i:02d}.json").write_text(json.dumps(data), encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "grader", "report", str(root / "scores"), "--out",
                             str(root / "report.html")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return root / "report.html"


def test_the_submissions_table_shows_its_scroll_bar_and_whole_words(wide_class):
    with chromium(width=1280, height=800, scrollbars=True) as page:
        page.goto(wide_class.as_uri())
        page.wait_for_load_state("load")
        assert page.evaluate(WORDS_SPLIT_JS) == []  # no header broken inside a word
        box = page.evaluate(SCROLL_JS)
        assert box["overflow"] > 0, box  # more columns than fit: the table scrolls sideways...
        assert box["bar"] >= 10 and box["bottom"] <= box["window"] + 1, box  # ...with a bar, on screen
        page.evaluate("() => { const b = document.getElementById('submissions-scroll'); b.scrollLeft = b.scrollWidth; }")
        last = page.locator("#submissions-table th").last.bounding_box()
        first = page.locator("#submissions-table th").first.bounding_box()
        assert last["x"] + last["width"] <= 1280 and abs(first["x"] - box["left"]) < 3  # the names stay in view
        assert page.errors == []


def test_commonest_failure_messages_show_a_real_message_not_the_grouping_key(wide_class):
    with chromium() as page:
        page.goto(wide_class.as_uri())
        caption = page.locator("caption", has_text="Commonest failure messages")
        cells = caption.locator("xpath=..").locator("tbody td").all_inner_texts()
        assert cells and not any("#" in cell for cell in cells)
        assert any(re.fullmatch(r"expected shape \[\d+, 3\] but got \[3, \d+\]", cell) for cell in cells), cells
