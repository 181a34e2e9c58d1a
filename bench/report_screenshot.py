"""The README's screenshot of the class report: the top of a report page, in headless Chromium.

    make demo && python bench/report_screenshot.py out/report.html docs/report.png

Chinese headings need a CJK font on the machine (Debian: apt-get install fonts-wqy-microhei);
without one they show as boxes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from browser import chromium  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("page", type=Path)
    parser.add_argument("png", type=Path)
    parser.add_argument("--width", type=int, default=1100)
    parser.add_argument("--height", type=int, default=1500)
    args = parser.parse_args()
    with chromium(args.width, args.height) as page:
        page.goto(args.page.resolve().as_uri())
        page.wait_for_load_state("load")
        page.screenshot(path=str(args.png))
        if page.errors:
            raise SystemExit(f"the page logged errors: {page.errors}")
    print(f"wrote {args.png}")


if __name__ == "__main__":
    main()
