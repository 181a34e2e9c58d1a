"""The similarity page in headless Chromium: a pair opens a side-by-side view of the two hand-ins,
shared lines highlighted in both columns, the stub's lines greyed, the notice shown, the clusters per
exercise listed, nothing fetched.
SIMILARITY_SCREENSHOT=docs/similarity.png also saves the screenshot the docs show.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import similarity_corpus as sc
from browser import chromium
from conftest import ROOT
from grader import catalog
from test_report_browser import require_browser

pytestmark = pytest.mark.slow


def test_the_page_shows_pairs_side_by_side_with_the_shared_code_highlighted(tmp_path):
    require_browser()
    course = catalog.load()
    sc.make_corpus(tmp_path / "corpus", {e.name for e in course.exercises}, {e.name: e.module for e in course.exercises})
    chosen = [tmp_path / "corpus" / n for n in ("ref", "independent-loops-copies-extensions", "independent-functional",
                                                 "independent-functional-copies-extensions")]
    page_file = tmp_path / "similarity.html"
    result = subprocess.run([sys.executable, "-m", "grader", "similarity", *map(str, chosen), "--out", str(page_file)],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    with chromium(1280, 900) as page:
        page.goto(page_file.as_uri())
        assert "not proof" in page.inner_text("#notice")
        # three hand-ins share extensions.py and nothing else: a cluster per exercise, none overall
        overall = page.locator("h2", has_text="Clusters, over the whole hand-in").locator("xpath=following-sibling::*[1]")
        assert overall.inner_text() == "none"
        smooth_cluster = page.locator("p.cluster[data-exercise='SmoothAbs']")
        assert smooth_cluster.count() == 1 and smooth_cluster.is_visible()
        assert smooth_cluster.inner_text() == ("3 hand-ins: independent-functional-copies-extensions, "
                                               "independent-loops-copies-extensions, ref")
        assert page.locator("p.cluster[data-exercise='hvp']").count() == 0
        smooth = page.locator("h2", has_text="SmoothAbs").locator("xpath=following-sibling::details[1]")
        assert "copies-extensions" in smooth.locator("summary").inner_text()
        smooth.locator("summary").click()
        columns = smooth.locator(".side").first.locator("pre")
        assert columns.count() == 2 and columns.nth(0).is_visible()
        for i in range(2):
            shared = columns.nth(i).locator("span.shared")
            assert shared.count() >= 3, i  # forward's and backward's statements, in both hand-ins
            assert "saved_tensors" in columns.nth(i).inner_text()
        assert columns.nth(0).locator("span.stub").count() >= 1  # the signature and decorators the stub ships
        colour = columns.nth(0).locator("span.shared").first.evaluate("e => getComputedStyle(e).backgroundColor")
        assert colour == "rgb(255, 214, 214)"
        smooth.scroll_into_view_if_needed()
        shot = Path(os.environ.get("SIMILARITY_SCREENSHOT") or tmp_path / "similarity.png")
        page.screenshot(path=str(shot), full_page=False)
        assert shot.stat().st_size > 10_000
        assert page.errors == [] and page.requests == [page_file.as_uri()]
