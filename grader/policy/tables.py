"""The CSV files a policy names: hand-in times, extensions, overrides.

Read by `grader.instructor_files`, as the roster is: UTF-8 (a spreadsheet's byte-order mark is
fine), comma, semicolon or tab separated, a header row whose names are matched case-insensitively
(spaces and dashes count as underscores); other columns are ignored. Every problem is reported with
the file's line number.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from grader.instructor_files import read_csv
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
    table = read_csv(path, what, PolicyError, "the columns " + ",".join(required + optional))
    missing = [c for c in required if c not in table.header]
    if missing:
        raise PolicyError(f"{path}, line 1: {what} needs the column(s) {', '.join(missing)}; "
                          f"the header has {', '.join(h for h in table.header if h) or 'nothing'}")
    wanted = required + optional
    return [Row(Path(path), line, {h: c for h, c in zip(table.header, cells) if h in wanted})
            for line, cells in table.records]
