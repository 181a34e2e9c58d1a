"""Instructors' files, read in one place: the roster, policy.yaml and the CSV tables a policy names.

Every file an instructor hands to `grader export`, `grader publish` or `grader gradebook` is read
here: UTF-8 (a spreadsheet's byte-order mark is fine), at most `SIZE_LIMIT` bytes, and a problem is
raised as the caller's own error class (`LmsError`, `PolicyError`) with a message that names the
file, the line and what to change. A CSV is comma, semicolon or tab separated (`guess_delimiter`,
the one guesser), has a header row whose names are matched case-insensitively with spaces and
dashes counting as underscores (`normalise_header`), and every row is kept with its line number.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

SIZE_LIMIT = 64 * 1024 * 1024  # bytes: a roster of a million students is a few tens of MiB
DELIMITERS = (",", ";", "\t")


@dataclass(frozen=True)
class Table:
    """A CSV's header (normalised) and its non-blank records, each with the line where it ends."""

    path: Path
    header: list[str]
    records: list[tuple[int, list[str]]]


def read_text(path: str | Path, what: str, error: type[Exception]) -> str:
    """The text of an instructor's file; `what` names it in messages ('the roster file')."""
    path = Path(path)
    try:
        if path.stat().st_size > SIZE_LIMIT:
            raise error(f"{path}: {what} is larger than {SIZE_LIMIT // (1024 * 1024)} MiB; is it the right file?")
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise error(f"{path}: {what} not found") from None
    except UnicodeDecodeError:
        raise error(f"{path}: {what} is not UTF-8 text; save it as UTF-8 (a spreadsheet's 'CSV UTF-8')") from None
    except OSError as exc:
        raise error(f"{path}: cannot read {what}: {exc.strerror or exc}") from None


def normalise_header(name: str) -> str:
    """How header names are compared: 'LMS User-ID ' -> 'lms_user_id'."""
    return name.strip().lower().replace(" ", "_").replace("-", "_")


def guess_delimiter(text: str) -> str:
    """The separator of a CSV: whichever of comma, semicolon and tab its header line has most of."""
    lines = text.splitlines()
    first_line = lines[0] if lines else ""
    return max(DELIMITERS, key=first_line.count)


def read_csv(path: str | Path, what: str, error: type[Exception], columns_hint: str) -> Table:
    """Parse an instructor's CSV; `columns_hint` says what the header needs when the file is empty."""
    path = Path(path)
    text = read_text(path, what, error)
    if not text.strip():
        raise error(f"{path}: {what} is empty; it needs a header row with {columns_hint}")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=guess_delimiter(text), strict=True)
    try:
        header = [normalise_header(h) for h in next(reader)]
        records = [(reader.line_num, cells) for cells in reader]
    except csv.Error as exc:
        raise error(f"{path}: {what} is not a readable CSV file (line {reader.line_num}: {exc})") from None
    kept = []
    for line, cells in records:
        if not any(c.strip() for c in cells):
            continue  # a blank line
        if len(cells) > len(header):
            raise error(f"{path}, line {line} has {len(cells)} fields but the header has {len(header)}; "
                        "quote values that contain the separator")
        kept.append((line, cells + [""] * (len(header) - len(cells))))
    return Table(path, header, kept)
