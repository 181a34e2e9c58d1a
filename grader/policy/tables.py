"""The CSV files a policy names: hand-in times, extensions, overrides.

UTF-8 (a spreadsheet's byte-order mark is fine), comma, semicolon or tab separated, a header row.
Header names are matched as the roster's are (case, spaces and dashes do not count); other columns
are ignored. Every problem is reported with the file's line number.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from grader.lms.roster import normalise_header
from grader.policy import PolicyError


@dataclass(frozen=True)
class Row:
    path: Path
    line: int  # the line of the file where the row ends; the header is line 1
    values: dict[str, str]

    def get(self, column: str) -> str:
        return self.values.get(column, "").strip()

    def error(self, problem: str) -> PolicyError:
        return PolicyError(f"{self.path}, line {self.line}: {problem}")


def read_table(path: Path, what: str, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> list[Row]:
    """The rows of a CSV with these columns; `what` names the file in messages ('the extensions file')."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise PolicyError(f"{path}: {what} is not UTF-8 text; save it as 'CSV UTF-8'") from None
    except OSError as exc:
        raise PolicyError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    if not text.strip():
        raise PolicyError(f"{path}: {what} is empty; it needs a header row: {','.join(required + optional)}")
    first_line = text.splitlines()[0]
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=max((",", ";", "\t"), key=first_line.count))
    try:
        header = [normalise_header(h) for h in next(reader)]
        records = [(reader.line_num, cells) for cells in reader]
    except csv.Error as exc:
        raise PolicyError(f"{path}: {what} is not a readable CSV file (line {reader.line_num}: {exc})") from None
    missing = [c for c in required if c not in header]
    if missing:
        raise PolicyError(f"{path}, line 1: {what} needs the column(s) {', '.join(missing)}; "
                          f"the header has {', '.join(h for h in header if h) or 'nothing'}")
    rows = []
    for line, cells in records:
        if not any(c.strip() for c in cells):
            continue
        if len(cells) > len(header):
            raise PolicyError(f"{path}, line {line}: {len(cells)} fields but the header has {len(header)}; "
                              "quote values that contain the separator")
        rows.append(Row(Path(path), line, {h: c for h, c in zip(header, cells) if h in required + optional}))
    return rows
