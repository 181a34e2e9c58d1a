"""The hand-ins a similarity review reads: each one's exercises as fingerprint sets, the stub's taken out.

Every form `grader grade` takes is read by grader/host/intake.py (folders and zips; a notebook form
plugs in there and arrives here as module text), with the same ids as the score files. A module
that does not parse is listed as a problem of its hand-in, never fatal. Only the fingerprints are
kept per hand-in (memory flat in the class size); the page re-reads the few it shows.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from grader.catalog import Catalog
from grader.host import intake
from grader.similarity import normalize
from grader.similarity.fingerprints import fingerprints


HAND_IN_FILES = (".zip", intake.NOTEBOOK_SUFFIX)  # besides folders: the files a folder of hand-ins holds


@dataclass
class HandIn:
    name: str
    path: str
    exercises: dict[str, frozenset[int]] = field(default_factory=dict)  # exercise -> what the student wrote
    problems: list[str] = field(default_factory=list)


def expand(paths: list[str]) -> list[str]:
    """Each path is a hand-in, except a folder that holds no modules but holds hand-ins (as `grader grade`)."""
    out = []
    for p in paths:
        path = Path(p)
        if path.is_dir() and not any((path / prefix / m).exists() for prefix in intake.PREFIXES
                                     for m in intake.module_files()):
            children = sorted(c for c in path.iterdir()
                              if not c.name.startswith(".") and (c.is_dir() or c.suffix.lower() in HAND_IN_FILES))
            if children:
                out += [str(c) for c in children]
                continue
        out.append(str(path))
    return out


def stub_fingerprints(course: Catalog) -> dict[str, frozenset[int]]:
    """exercise -> the fingerprints of its stub (signature, docstring and any code it ships)."""
    stubs = course.place("stubs")
    found: dict[str, frozenset[int]] = {}
    for module in course.modules:
        path = None if stubs is None else stubs / module
        if path is None or not path.is_file():
            continue
        units = normalize.exercise_units(normalize.parse(path.read_text(encoding="utf-8")), course.exercises_in(module))
        found.update({name: fingerprints(u) for name, u in units.items()})
    return found


def module_units(source: bytes, module: str, course: Catalog) -> dict[str, list[normalize.Unit]]:
    """exercise -> its units, for one module's bytes; SyntaxError/ValueError/UnicodeDecodeError when unreadable."""
    return normalize.exercise_units(normalize.parse(source.decode("utf-8")), course.exercises_in(module))


def read(path: str | os.PathLike, course: Catalog, stub: dict[str, frozenset[int]],
         seen: dict[bytes, dict[str, frozenset[int]] | str] | None = None) -> HandIn:
    """One hand-in: what it wrote for each exercise, beyond the stub; problems listed, never raised.
    `seen` remembers modules by content (a module many hand-ins left as shipped is read once)."""
    seen = {} if seen is None else seen
    sub = intake.load(path)
    hand_in = HandIn(name=sub.name, path=str(path), problems=[p for p in sub.problems if "is missing" not in p])
    for module, data in sub.files.items():
        key = hashlib.sha256(module.encode() + b"\0" + data).digest()
        if key not in seen:
            seen[key] = _own_fingerprints(data, module, course, stub)
        found = seen[key]
        if isinstance(found, str):
            hand_in.problems.append(found)
        else:
            hand_in.exercises.update(found)
    return hand_in


def _own_fingerprints(data: bytes, module: str, course: Catalog, stub) -> dict[str, frozenset[int]] | str:
    """exercise -> its fingerprints beyond the stub, or the reason the module cannot be read."""
    try:
        units = module_units(data, module, course)
    except (SyntaxError, ValueError, UnicodeDecodeError, RecursionError) as exc:
        return f"{module} cannot be read: {type(exc).__name__}: {str(exc)[:200]}"
    own = {name: fingerprints(found) - stub.get(name, frozenset()) for name, found in units.items()}
    return {name: fps for name, fps in own.items() if fps}


def source_of(path: str, module: str) -> str | None:
    """A module's text from a hand-in, for the page; None when it cannot be read."""
    data = intake.load(path).files.get(module)
    return None if data is None else data.decode("utf-8", "replace")
