"""The system's headless Chromium (Debian's `chromium` package, which .ci/run installs), driven by
Playwright's Python package. Playwright's own browser download is not used: the tests must open
pages in the browser the machine has.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@contextlib.contextmanager
def chromium(width: int = 1280, height: int = 900, scrollbars: bool = False):
    """A fresh page in headless Chromium; `page.errors` collects console errors and uncaught
    exceptions, `page.requests` every URL the page asked for. `scrollbars`: draw scroll bars as a
    desktop browser does (Playwright hides them in headless mode by default)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS,
                                    ignore_default_args=["--hide-scrollbars"] if scrollbars else None)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.errors, page.requests = [], []
            page.on("console", lambda m: page.errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: page.errors.append(f"uncaught: {e}"))
            page.on("request", lambda r: page.requests.append(r.url))
            yield page
        finally:
            browser.close()
