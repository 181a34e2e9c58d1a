"""Text a submission controls, made safe for every program that reads what the grader writes.

An import error's message, a file name inside a zip, a test's failure message: a submission
chooses these, and they travel into score files, terminal summaries, CSV files that an LMS
imports, JSON that PrairieLearn stores, and lines that a GitHub Actions runner reads. Each
output calls `clean_text` (and a CSV writer `csv_text`), so that one set of rules holds
everywhere:

- lone UTF-16 surrogates (`"\\ud800"` is valid JSON but not Unicode) become U+FFFD: UTF-8
  encoders raise on them and PostgreSQL's jsonb (PrairieLearn, Canvas) refuses them;
- NUL and the other control characters except tab and newline become U+FFFD (a terminal runs
  ESC sequences, PostgreSQL refuses NUL); CR LF, CR and the Unicode line separators become LF;
  the bidirectional overrides (which reorder what a reader sees) become U+FFFD;
- a line that GitHub's runner would take as a workflow command is neutralised: `::name ...::`
  after leading white space, and `##[name]` anywhere in a line (actions/runner:
  src/Runner.Common/ActionCommand.cs, TryParseV2 and TryParse; ActionCommandManager tries both);
- `limit` cuts the text to at most that many characters and says so;
  `one_line` folds every run of white space into one space.

For CSV cells (`csv_text`, `formula_safe`): a text cell that a spreadsheet would run as a
formula (it starts with `=`, `+`, `-` or `@`, or tab or CR, and is not a number) gets a leading
`'` (OWASP, "CSV Injection"); a backslash becomes `/` where the file is read by PHP's
`fgetcsv`, whose escape character is `\\` (Moodle), so that no backslash can stand before a
quote.
"""

from __future__ import annotations

import re

REPLACEMENT = "\ufffd"
CUT_MARK = " ...[cut]"

_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 controls but tab and LF, DEL, C1 controls; bidirectional embeddings, overrides and isolates.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_LINE_BREAK = re.compile("\r\n|[\r\u2028\u2029\x85]")
_WORKFLOW_LINE = re.compile(r"^(\s*)(?=::)", re.MULTILINE)  # TryParseV2: TrimStart, then '::'
_WORKFLOW_ANYWHERE = re.compile(r"##\[")  # TryParse: '##[' anywhere in the line
_WHITESPACE = re.compile(r"\s+")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?[0-9]+(\.[0-9]+)?", re.ASCII)


def replace_lone_surrogates(text: str) -> str:
    """Lone surrogates (from JSON such as "\\udc80") as U+FFFD; a Python str holds no valid pair."""
    return _SURROGATE.sub(REPLACEMENT, text)


def clean_text(text: str, limit: int | None = None, one_line: bool = False) -> str:
    """`text` with the rules of this module's docstring applied, at most `limit` characters."""
    text = replace_lone_surrogates(str(text))
    text = _LINE_BREAK.sub("\n", text)
    text = _CONTROL.sub(REPLACEMENT, text)
    if one_line:
        text = _WHITESPACE.sub(" ", text).strip()
    text = _WORKFLOW_LINE.sub(r"\1> ", text)
    text = _WORKFLOW_ANYWHERE.sub("# #[", text)
    if limit is not None and len(text) > limit:
        text = text[: max(0, limit - len(CUT_MARK))] + CUT_MARK
    return text


def is_number(cell: str) -> bool:
    """An ASCII decimal number, as gradebooks read it: '7', '7.5', '-1'."""
    return _NUMBER.fullmatch(cell) is not None


def looks_like_formula(cell: str) -> bool:
    return cell.startswith(FORMULA_START) and not is_number(cell)


def formula_safe(cell: str) -> str:
    """A text cell that a spreadsheet shows as text, not as a formula it runs."""
    return "'" + cell if looks_like_formula(cell) else cell


def csv_text(text: str, limit: int | None = None, backslash_escapes: bool = False) -> str:
    """A CSV text cell (a name, a feedback): cleaned, on one line, formula-safe.

    `backslash_escapes`: the file is read with PHP's fgetcsv (escape character `\\`), which would
    read a backslash before a quote, our own or the closing one, as part of the text and run on
    into the next rows; every backslash is written as `/`.
    """
    text = clean_text(text, limit=limit, one_line=True)
    if backslash_escapes:
        text = text.replace("\\", "/")
    return formula_safe(text)
