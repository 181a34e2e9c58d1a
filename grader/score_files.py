"""Score files, read and validated in one place: the one reader of every `OUT/<submission>.json`.

`grader grade --out DIR` writes `DIR/<submission>.json`. Everything that reads them comes here: the
runner's `--resume`, the LMS exports and passback (`grader.lms.scores` builds its typed view on top),
the report, feedback and diff (`grader.report.scores`), and `grader gradebook`. A folder is read as
every `*.json` in it whose name does not start with a dot (ledgers and temporary files do); a file
given by name is read as it is.

A file is used only when it is valid JSON (NaN and Infinity are not), matches
`grader/schema/score.schema.json` (with jsonschema when it is installed, else a built-in check of the
fields the readers use), its totals add up, every number in it has a float (a valid JSON integer of four
hundred digits passes the schema, but `float()` of it, which every export does, overflows), and a `submitted_at`
is an ISO 8601 time with a time zone inside the calendar's range. Any other file is returned as
`Unusable` with the reason in plain words: listed, never skipped in silence and never scored. Two
files for one submission are both set aside: which one is the student's is unknown. A valid file
whose `status` is `ungradable` (the grader failed, not the student's code) is read like any other;
`is_ungradable` and `ungradable_reason` are how every consumer tells it apart.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from grader.errors import UsageError
from grader.protocol.messages import TestStatus
from grader.safetext import clean_text

# 1.1 added tests_sha256, mistake, and the gradebook fields; 1.2 a notebook's `cell`; 1.3 a public check's `output`;
# 1.4 the file's `status` (ungradable); 1.5 a failed exercise's `counterexample`
SCHEMA_VERSION = "1.5"
READABLE_SCHEMA_VERSIONS = ("1.0", "1.1", "1.2", "1.3", "1.4", "1.5")  # every version the readers and exporters accept
GRADED, UNGRADABLE = "graded", "ungradable"  # a file's status; absent (files before 1.4) is graded
SCHEMA_FILE = Path(__file__).resolve().parent / "schema" / "score.schema.json"
TEST_STATUSES = tuple(TestStatus)  # declared once, in grader.protocol.messages
VISIBILITIES = ("visible", "hidden")
NAME_LIMIT = 200  # characters of a submission name, as the readers show it
NUMBER_LIMIT = sys.float_info.max  # a JSON integer past this has no float: every export would overflow


class ScoreFileError(UsageError, ValueError):
    """Nothing to read: a path that is neither a score file nor a folder of them, or a folder without any."""


@dataclass(frozen=True)
class ScoreFile:
    """One usable score file: its parsed JSON, its submission's name (cleaned) and its hand-in time."""

    path: Path
    data: dict
    submission: str
    submitted_at: datetime | None = None


@dataclass(frozen=True)
class Unusable:
    """A score file that cannot be used, with the reason in plain words."""

    path: Path
    reason: str
    submission: str  # from the file when it could be read, else the file name without .json

    def as_dict(self) -> dict[str, str]:
        return {"file": str(self.path), "submission": self.submission, "reason": self.reason}


@dataclass
class Loaded:
    """The usable files (in path order) and the ones set aside."""

    files: list[ScoreFile] = field(default_factory=list)
    unusable: list[Unusable] = field(default_factory=list)


# ----------------------------------------------------------------------------- finding and loading

def find(paths: Iterable[str | Path]) -> list[Path]:
    """The score files named: a folder's `*.json` but dot-files, a file as it is."""
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found = sorted(p for p in path.glob("*.json") if not p.name.startswith("."))
            if not found:
                raise ScoreFileError(f"{path}: no score files (*.json) in this folder; "
                                     "give the --out folder of `grader grade`")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            raise ScoreFileError(f"{path}: no such score file or folder")
    return files


GRADEBOOK_MARKER = ".gradebook.json"  # what `grader gradebook` writes beside FINAL's files: who it left out, and why


def left_out_by_gradebook(folder: Path) -> list[Unusable]:
    """The submissions `grader gradebook` graded but left out of this folder (no hand-in time, an
    invalid or ungradable file), from its marker: they have a score, not a missing hand-in."""
    marker = folder / GRADEBOOK_MARKER
    try:
        data = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return []
    left_out = data.get("left_out") if isinstance(data, dict) else None
    if not isinstance(left_out, dict):
        return []
    return [Unusable(marker, clean_text(f"left out by `grader gradebook`: {reason}", 1000, one_line=True),
                     clean_text(name, NAME_LIMIT, one_line=True))
            for name, reason in left_out.items() if isinstance(name, str) and isinstance(reason, str)]


def load(paths: Iterable[str | Path]) -> Loaded:
    """Read every score file named; a submission scored in several files is used in none. A folder
    written by `grader gradebook` also lists, as unusable, the graded submissions it left out."""
    paths = [Path(p) for p in paths]
    loaded = [read(path) for path in find(paths)]
    files_of: dict[str, list[str]] = {}
    for item in loaded:
        if isinstance(item, ScoreFile):
            files_of.setdefault(item.submission, []).append(item.path.name)
    result = Loaded()
    for item in loaded:
        if isinstance(item, Unusable):
            result.unusable.append(item)
        elif len(files_of[item.submission]) > 1:
            others = ", ".join(files_of[item.submission])
            result.unusable.append(Unusable(
                item.path, f"submission {item.submission!r} is scored in several files ({others}); "
                "none of them is used until the extra ones are removed", item.submission))
        else:
            result.files.append(item)
    listed = {item.submission for item in loaded}
    for folder in (p for p in paths if p.is_dir()):
        result.unusable += [u for u in left_out_by_gradebook(folder) if u.submission not in listed]
    return result


def _not_json(constant: str) -> None:
    raise ValueError(f"{constant} is not a JSON number")


def read(path: str | Path) -> ScoreFile | Unusable:
    """Parse and validate one file; a problem is returned, never raised."""
    path = Path(path)
    fallback_name = clean_text(path.stem, NAME_LIMIT, one_line=True)
    try:
        data = json.loads(path.read_text(encoding="utf-8"), parse_constant=_not_json)
    except OSError as exc:
        return Unusable(path, f"cannot be read: {exc.strerror or exc}", fallback_name)
    except UnicodeDecodeError:
        return Unusable(path, "is not UTF-8 text", fallback_name)
    except json.JSONDecodeError as exc:
        return Unusable(path, f"is not valid JSON (line {exc.lineno}: {exc.msg})", fallback_name)
    except ValueError as exc:  # NaN, Infinity, an integer past Python's digit limit
        return Unusable(path, f"is not valid JSON ({_shorten(str(exc))})", fallback_name)
    except RecursionError:
        return Unusable(path, "is nested too deeply to be a score file", fallback_name)
    name = data.get("submission") if isinstance(data, dict) else None
    submission = (clean_text(name, NAME_LIMIT, one_line=True) if isinstance(name, str) else "") or fallback_name
    errors = problems(data)
    if errors:
        shown = "; ".join(_shorten(clean_text(e, one_line=True)) for e in errors[:3])
        shown += f"; and {len(errors) - 3} more" if len(errors) > 3 else ""
        return Unusable(path, f"does not match the score file schema: {shown}", submission)
    submitted_at = parse_time(data.get("submitted_at"))
    if "submitted_at" in data and submitted_at is None:
        return Unusable(path, f"submitted_at {clean_text(str(data['submitted_at']), 60)!r} is not an ISO 8601 time "
                              "with a time zone inside the calendar (e.g. 2026-12-01T23:59:00+08:00)", submission)
    return ScoreFile(path, data, submission, submitted_at)


def is_ungradable(data: dict) -> bool:
    """The grader could not grade this submission honestly: its points are no grade (schema 1.4)."""
    return data.get("status") == UNGRADABLE


def ungradable_reason(data: dict) -> str:
    """What the consumers say of an ungradable file, with the grader's first problem line."""
    message = next((e for e in data.get("submission_errors", []) if isinstance(e, str)), "")
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    first = " ".join(dict.fromkeys(lines[:1] + lines[-1:]))  # 'internal grader error: ... KeyError: ...'
    first = clean_text(first, 200, one_line=True)
    return ("ungradable: the grader could not grade this submission (" + (first or "no reason recorded")
            + "); its points are no grade: not exported; `grader grade --resume` grades it again")


def read_valid(path: str | Path) -> dict | None:
    """A usable score file's data, or None when it is missing, unreadable or invalid (`--resume`)."""
    found = read(path)
    return found.data if isinstance(found, ScoreFile) else None


# ----------------------------------------------------------------------------- times

_EDGE = timedelta(days=2)  # a time this close to year 1 or 9999 cannot be moved to another zone safely


def parse_time(text: Any) -> datetime | None:
    """An ISO 8601 time with a time zone, away from the calendar's edges, or None."""
    if not isinstance(text, str) or len(text) > 64:
        return None
    try:
        moment = datetime.fromisoformat(text.strip().replace("z", "Z"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None and within_calendar(moment) else None


def within_calendar(moment: datetime) -> bool:
    """True when `moment` (aware) can be moved to any time zone and shifted by days without leaving
    Python's calendar: `0001-01-01T00:30+01:00` is 31 December of year 0 in UTC, which does not exist."""
    offset = moment.utcoffset()
    if offset is None or abs(offset) >= timedelta(hours=24):
        return False
    naive = moment.replace(tzinfo=None)
    return datetime.min + _EDGE <= naive <= datetime.max - _EDGE


# ----------------------------------------------------------------------------- validation

def problems(data: Any) -> list[str]:
    """Why `data` is not a usable score file; [] when it is one."""
    errors = schema_errors(data)
    if not errors:
        errors = _unbounded_numbers(data)
    if not errors:
        errors = _consistency_errors(data)
    return errors


@lru_cache(maxsize=1)
def schema() -> dict:
    return json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _jsonschema_validator():
    import jsonschema

    return jsonschema.Draft202012Validator(schema())


def schema_errors(data: Any, fallback: bool = True) -> list[str]:
    """Schema errors of `data`: with jsonschema when installed; without it, the built-in check of the
    fields the readers use, or nothing at all when `fallback` is false (the writer's check).

    A valid file (nearly every one) is told by `_compiled_check`, the schema turned once into Python
    checks (about 1 ms a file where jsonschema takes 20 to 50); jsonschema is asked whenever that check
    finds a problem, or cannot check the schema, so it alone names every error."""
    try:
        import jsonschema  # noqa: F401  (an instructor extra: asked each time, the validator is built once)
    except ImportError:
        return _minimal_errors(data) if fallback else []
    check = _compiled_check()
    if check is not None and check(data):
        return []
    validator = _jsonschema_validator()
    found = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    return [f"{_json_path(e.absolute_path)}: {e.message}" for e in found]


@lru_cache(maxsize=1)
def _compiled_check():
    """The score schema as one predicate, built once: True where jsonschema's Draft 2020-12 validator (as
    `_jsonschema_validator` builds it: no format checker, so `format` is only an annotation) finds no
    error. None when the schema uses a keyword or form not compiled here: jsonschema then checks every
    file. tests/test_score_files.py compares the two verdicts on mutated score files."""
    try:
        return _compile_schema(schema())
    except _NotCompiled:
        return None


class _NotCompiled(Exception):
    pass


_ANNOTATIONS = {"$schema", "$id", "$defs", "title", "description", "format", "examples", "$comment"}


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_TYPES = {"object": lambda v: isinstance(v, dict), "array": lambda v: isinstance(v, list),
          "string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
          "null": lambda v: v is None, "number": _number,
          "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer())}
# jsonschema reports an error where these hold (so NaN, which compares false, is none)
_BOUNDS = {"minimum": lambda v, a: v < a, "exclusiveMinimum": lambda v, a: v <= a,
           "maximum": lambda v, a: v > a, "exclusiveMaximum": lambda v, a: v >= a}


def _compile_schema(root: Any):
    """Every keyword of `root` as a check that holds where jsonschema finds no error, each applying only to
    the instance types it names, as jsonschema's do; `$ref` only to `#/$defs/NAME`."""
    import re

    if not isinstance(root, dict):
        raise _NotCompiled(root)
    definitions = root.get("$defs", {})
    compiled: dict[str, Any] = {}

    def node_check(node: Any):
        if node is True:
            return lambda v: True
        if node is False:
            return lambda v: False
        if not isinstance(node, dict):
            raise _NotCompiled(node)
        checks = []
        for key, arg in node.items():
            if key in _ANNOTATIONS or key in ("properties", "additionalProperties"):
                continue  # the two together, below
            if key == "type":
                names = [arg] if isinstance(arg, str) else arg
                if not isinstance(names, list) or not names or any(n not in _TYPES for n in names):
                    raise _NotCompiled(key)
                tests = tuple(_TYPES[n] for n in names)
                checks.append(lambda v, tests=tests: any(t(v) for t in tests))
            elif key == "enum":
                if not isinstance(arg, list) or not all(isinstance(a, str) for a in arg):
                    raise _NotCompiled(key)  # jsonschema's equality of numbers, bools and containers: not redone
                allowed = frozenset(arg)
                checks.append(lambda v, allowed=allowed: isinstance(v, str) and v in allowed)
            elif key == "required":
                if not isinstance(arg, list) or not all(isinstance(a, str) for a in arg):
                    raise _NotCompiled(key)
                names = tuple(arg)
                checks.append(lambda v, names=names: not isinstance(v, dict) or all(n in v for n in names))
            elif key == "dependentRequired":
                if not isinstance(arg, dict) or not all(isinstance(d, list) for d in arg.values()):
                    raise _NotCompiled(key)
                pairs = tuple((k, tuple(d)) for k, d in arg.items())
                checks.append(lambda v, pairs=pairs: not isinstance(v, dict) or
                              all(k not in v or all(d in v for d in deps) for k, deps in pairs))
            elif key == "items":
                if "prefixItems" in node:
                    raise _NotCompiled(key)
                each = node_check(arg)

                def items(v, each=each):
                    if isinstance(v, list):
                        for x in v:
                            if not each(x):
                                return False
                    return True

                checks.append(items)
            elif key in _BOUNDS:
                if not _number(arg):
                    raise _NotCompiled(key)
                checks.append(lambda v, a=arg, fails=_BOUNDS[key]: not _number(v) or not fails(v, a))
            elif key in ("minLength", "minItems"):
                if not isinstance(arg, int) or isinstance(arg, bool):
                    raise _NotCompiled(key)
                kind = str if key == "minLength" else list
                checks.append(lambda v, n=arg, kind=kind: not isinstance(v, kind) or len(v) >= n)
            elif key == "pattern":
                if not isinstance(arg, str):
                    raise _NotCompiled(key)
                pattern = re.compile(arg)
                checks.append(lambda v, pattern=pattern: not isinstance(v, str) or pattern.search(v) is not None)
            elif key == "$ref":
                name = arg[len("#/$defs/"):] if isinstance(arg, str) and arg.startswith("#/$defs/") else None
                if name is None or name not in definitions:
                    raise _NotCompiled(arg)
                checks.append(lambda v, name=name: compiled[name](v))  # compiled below: a definition may refer to itself
            else:
                raise _NotCompiled(key)
        if "properties" in node or "additionalProperties" in node:
            props = node.get("properties", {})
            if not isinstance(props, dict):
                raise _NotCompiled("properties")
            known = {k: node_check(sub) for k, sub in props.items()}
            extra = node.get("additionalProperties", True)
            other = None if extra is True else node_check(extra)

            def properties(v, known=known, other=other):
                if not isinstance(v, dict):
                    return True
                for k, x in v.items():
                    check = known.get(k)
                    if check is not None:
                        if not check(x):
                            return False
                    elif other is not None and not other(x):
                        return False
                return True

            checks.append(properties)
        if len(checks) == 1:
            return checks[0]
        checks = tuple(checks)

        def every(v, checks=checks):
            for check in checks:
                if not check(v):
                    return False
            return True

        return every

    if not isinstance(definitions, dict):
        raise _NotCompiled("$defs")
    for name, definition in definitions.items():
        compiled[name] = node_check(definition)
    return node_check(root)


def _json_path(parts: Iterable[Any]) -> str:
    text = "$"
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def _shorten(text: str, limit: int = 240) -> str:
    """jsonschema quotes the offending value, which may be a whole test log: keep both ends."""
    if len(text) <= limit:
        return text
    half = (limit - 5) // 2
    return f"{text[:half]} ... {text[-half:]}"


def is_number(value: Any) -> bool:
    """A JSON number a reader can do arithmetic with: finite, not a bool, within NUMBER_LIMIT."""
    # int against float compares exactly, never overflows (math.isfinite(10**400) would)
    return isinstance(value, (int, float)) and not isinstance(value, bool) and -NUMBER_LIMIT <= value <= NUMBER_LIMIT


def _unbounded_numbers(data: Any, where: str = "$") -> list[str]:
    """Every number past NUMBER_LIMIT anywhere in the file (first 3): no export can convert it."""
    found: list[str] = []
    stack = [(where, data)]
    while stack and len(found) < 3:
        where, value = stack.pop()
        if isinstance(value, dict):
            stack += [(f"{where}.{k}", v) for k, v in value.items()]
        elif isinstance(value, list):
            stack += [(f"{where}[{i}]", v) for i, v in enumerate(value)]
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and not is_number(value):
            found.append(f"{where}: a number too large for any export ({_shorten(str(value), 40)})")
    return sorted(found)


def _minimal_errors(data: Any) -> list[str]:
    """The fields the readers use, checked without jsonschema."""
    if not isinstance(data, dict):
        return ["$: not a JSON object"]
    errors = []
    if data.get("schema_version") not in READABLE_SCHEMA_VERSIONS:
        errors.append(f"$.schema_version: must be one of {', '.join(READABLE_SCHEMA_VERSIONS)}")
    if not isinstance(data.get("submission"), str) or not data["submission"].strip():
        errors.append("$.submission: missing or empty")
    for key, positive in (("score", False), ("max_score", True)):
        if not is_number(data.get(key)) or data[key] < 0 or (positive and data[key] == 0):
            errors.append(f"$.{key}: must be a number {'> 0' if positive else '>= 0'}")
    if not all(isinstance(x, str) for x in data.get("submission_errors", [])):
        errors.append("$.submission_errors: must be a list of strings")
    exercises = data.get("exercises")
    if not isinstance(exercises, list) or not exercises:
        return errors + ["$.exercises: must be a non-empty list"]
    for i, ex in enumerate(exercises):
        errors += _exercise_errors(ex, f"$.exercises[{i}]")
    return errors


def _exercise_errors(ex: Any, where: str) -> list[str]:
    if not isinstance(ex, dict):
        return [f"{where}: not an object"]
    errors = [f"{where}.{key}: missing" for key in ("name", "module") if not isinstance(ex.get(key), str)]
    if not is_number(ex.get("score")) or not is_number(ex.get("max_score")) or ex["max_score"] <= 0:
        errors.append(f"{where}: score and max_score must be numbers, max_score > 0")
    tests = ex.get("tests")
    if not isinstance(tests, list) or not tests:
        return errors + [f"{where}.tests: must be a non-empty list"]
    for j, t in enumerate(tests):
        if not isinstance(t, dict) or t.get("status") not in TEST_STATUSES \
                or t.get("visibility") not in VISIBILITIES or not isinstance(t.get("name"), str) \
                or not isinstance(t.get("message"), str) \
                or not is_number(t.get("score")) or not is_number(t.get("max_score")):
            errors.append(f"{where}.tests[{j}]: needs name, status, score, max_score, visibility, message")
    return errors


def _consistency_errors(data: dict[str, Any]) -> list[str]:
    """Totals that must add up, or an LMS would show a different score than the grader.

    In a file adjusted by `grader gradebook`, `score` is `raw_score` plus the adjustments'
    points, clamped to [0, max_score]; an override may have changed an exercise's score, so the
    tests of an exercise need not add up to it there.
    """
    errors = []
    exercise_max = sum(ex["max_score"] for ex in data["exercises"])
    if not _close(exercise_max, data["max_score"]):
        errors.append(f"$.max_score is {data['max_score']} but the exercise maxima add up to {exercise_max:g}")
    if "adjustments" in data or "raw_score" in data:
        return errors + _adjustment_errors(data)
    exercise_total = sum(ex["score"] for ex in data["exercises"])
    if not _close(exercise_total, data["score"]):
        errors.append(f"$.score is {data['score']} but the exercise scores add up to {exercise_total:g}")
    for ex in data["exercises"]:
        tests_total = sum(t["score"] for t in ex["tests"])
        if not _close(tests_total, ex["score"]):
            errors.append(f"exercise {ex['name']}: score is {ex['score']} but its tests add up to {tests_total:g}")
    return errors


def _adjustment_errors(data: dict[str, Any]) -> list[str]:
    if not is_number(data.get("raw_score")) or not isinstance(data.get("adjustments"), list):
        return ["$: a file adjusted by `grader gradebook` needs both raw_score and adjustments"]
    for i, a in enumerate(data["adjustments"]):
        if not (isinstance(a, dict) and isinstance(a.get("kind"), str) and is_number(a.get("points"))
                and isinstance(a.get("reason"), str)):
            return [f"$.adjustments[{i}]: needs kind (text), points (a number) and reason (text)"]
    points = sum(a["points"] for a in data["adjustments"])
    expected = min(max(data["raw_score"] + points, 0.0), data["max_score"])
    if not _close(expected, min(data["score"], data["max_score"])):
        return [f"$.score is {data['score']} but raw_score {data['raw_score']} with the adjustments' "
                f"{points:+g} points gives {expected:g}"]
    return []


def _close(a: float, b: float) -> bool:
    """Equal up to rounding; sums that overflow to infinity are never equal to anything."""
    return math.isfinite(a) and math.isfinite(b) and abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))

