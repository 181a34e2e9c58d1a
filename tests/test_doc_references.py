"""No file of the repository cites a document the repository lacks: the contracts it relies on are in docs/."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE = re.compile(r"\b(?:spec/)?grader\.md\b|(?:\.\./|/work/)?shared/(?:spec|research)\b")
DOCS = re.compile(r"(?<!: )(?<![\w/])docs/[a-z][a-z-]*\.(?:md|png)\b")  # ours, not another repository's docs/


def tracked_text_files() -> list[Path]:
    names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    files = []
    for name in names:
        path = ROOT / name
        if path.suffix in {".py", ".md", ".yaml", ".yml", ".json", ".toml", ".txt", ".cfg", ".html", ".j2", ""} \
                and path.is_file() and path != Path(__file__):
            files.append(path)
    return files


def test_no_file_cites_a_document_outside_the_repository():
    cited = [f"{p.relative_to(ROOT)}:{n}: {line.strip()[:100]}"
             for p in tracked_text_files()
             for n, line in enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
             if OUTSIDE.search(line)]
    assert not cited, "cites a file the repository lacks:\n" + "\n".join(cited)


def test_every_cited_doc_exists():
    missing = sorted({f"{p.relative_to(ROOT)}: {m}" for p in tracked_text_files()
                      for m in DOCS.findall(p.read_text(encoding="utf-8", errors="replace"))
                      if not (ROOT / m).is_file()})
    assert not missing, "\n".join(missing)


def test_the_contracts_are_in_docs():
    for page in ("engine.md", "scoring.md", "security.md", "lms-formats.md"):
        assert (ROOT / "docs" / page).stat().st_size > 1000, page
