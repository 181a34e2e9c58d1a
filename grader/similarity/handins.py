"""The hand-ins a similarity review reads: each one's exercises as fingerprint sets, the stub's taken out.

Every form `grader grade` takes is read by grader/host/intake.py (folders and zips; a notebook form
plugs in there and arrives here as module text), with the same ids as the score files. A module
that does not parse is listed as a problem of its hand-in, never fatal. Only the fingerprints are
kept per hand-in, each answer packed (`pack`: its sorted hashes, 8 bytes each, in one bytes object;
a set of Python ints costs about ten times that); the page re-reads the few it shows. A large class
is read in processes of its own, one per CPU (`read_all`): each parses its share (never runs it) and
sends back plain data, names, problem texts and packed answers, which the review gets as if read here.
"""

from __future__ import annotations

import hashlib
import os
import sys
from array import array
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path

from grader.catalog import Catalog
from grader.host import intake
from grader.similarity import normalize
from grader.similarity.fingerprints import fingerprints


HAND_IN_FILES = (".zip", intake.NOTEBOOK_SUFFIX)  # besides folders: the files a folder of hand-ins holds
PARALLEL_FROM = 500  # hand-ins: a smaller class is read in this process (starting others costs ~1 s of CPU)
CHUNK = 20  # hand-ins a reading process is given at a time
SEEN = 4096  # modules a reader remembers by content (then forgets them all: memory stays flat), in any process


@dataclass
class HandIn:
    name: str
    path: str
    exercises: dict[str, bytes] = field(default_factory=dict)  # exercise -> what the student wrote, packed
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


def pack(fps) -> bytes:
    """An answer's fingerprints as one bytes object: the hashes sorted, 8 bytes each, little-endian (what
    `unpack` and numpy's frombuffer(..., "<i8") read); immutable, hashable, compared by value."""
    packed = array("q", sorted(fps))
    if sys.byteorder != "little":
        packed.byteswap()
    return packed.tobytes()


def unpack(packed: bytes) -> list[int]:
    found = array("q")
    found.frombytes(packed)
    if sys.byteorder != "little":
        found.byteswap()
    return found.tolist()


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
    text = source.decode("utf-8")
    return normalize.exercise_units(normalize.parse(text), course.exercises_in(module), text)


def read(path: str | os.PathLike, course: Catalog, stub: dict[str, frozenset[int]],
         seen: dict[bytes, dict[str, bytes] | str] | None = None) -> HandIn:
    """One hand-in: what it wrote for each exercise, beyond the stub, packed; problems listed, never
    raised. `seen` remembers modules by content (a module many hand-ins left as shipped is read once),
    at most SEEN of them: then it forgets them all."""
    seen = {} if seen is None else seen
    sub = intake.load(path)
    hand_in = HandIn(name=sub.name, path=str(path), problems=[p for p in sub.problems if "is missing" not in p])
    for module, data in sub.files.items():
        key = hashlib.sha256(module.encode() + b"\0" + data).digest()
        if key not in seen:
            if len(seen) >= SEEN:
                seen.clear()
            seen[key] = _own_fingerprints(data, module, course, stub)
        found = seen[key]
        if isinstance(found, str):
            hand_in.problems.append(found)
        else:
            hand_in.exercises.update(found)
    return hand_in


def read_all(paths: list[str], course: Catalog, jobs: int | None = None) -> list[HandIn]:
    """Every hand-in of `paths`, in their order, as `read` gives them; in `jobs` processes (default:
    one per CPU) when the class is large. An exercise's answers that are equal are one object (the
    table that finds them holds each once, as its own key, and goes when the class is read)."""
    stub = stub_fingerprints(course)
    jobs = (os.cpu_count() or 1) if jobs is None else jobs
    same: dict[str, dict[bytes, bytes]] = {}
    found = _read_here(paths, course, stub) if jobs <= 1 or len(paths) < PARALLEL_FROM else \
        _read_in_processes(paths, course, stub, jobs)
    return [HandIn(name, path, {e: same.setdefault(e, {}).setdefault(fps, fps) for e, fps in exercises.items()},
                   problems) for name, path, exercises, problems in found]


def _plain(hand_in: HandIn) -> tuple[str, str, dict[str, bytes], list[str]]:
    return hand_in.name, hand_in.path, hand_in.exercises, hand_in.problems


def _read_here(paths: list[str], course: Catalog, stub):
    seen: dict = {}
    for p in paths:
        yield _plain(read(p, course, stub, seen))


def _read_in_processes(paths: list[str], course: Catalog, stub, jobs: int):
    """Each hand-in's plain data, in order, from processes given CHUNK hand-ins at a time (a spawned
    process: nothing of this one's state but the course's path and the stub's fingerprints)."""
    chunks = [paths[i:i + CHUNK] for i in range(0, len(paths), CHUNK)]
    done = 0
    try:
        with ProcessPoolExecutor(max_workers=min(jobs, len(chunks)), mp_context=get_context("spawn"),
                                 initializer=_start_reader, initargs=(str(course.path), stub)) as pool:
            for part in pool.map(_read_chunk, chunks):
                done += len(part)
                yield from part
    except BrokenProcessPool:  # a reading process died: what it had not sent is read here, as before
        yield from _read_here(paths[done:], course, stub)


_reader: dict = {}  # in a reading process: the course and its stub's fingerprints


def _start_reader(course_path: str, stub: dict[str, frozenset[int]]) -> None:
    from grader import catalog

    _reader.update(course=catalog.use(course_path), stub=stub, seen={})


def _read_chunk(paths: list[str]) -> list[tuple]:
    return [_plain(read(p, _reader["course"], _reader["stub"], _reader["seen"])) for p in paths]


def _own_fingerprints(data: bytes, module: str, course: Catalog, stub) -> dict[str, bytes] | str:
    """exercise -> its fingerprints beyond the stub (packed), or the reason the module cannot be read."""
    try:
        units = module_units(data, module, course)
    except (SyntaxError, ValueError, UnicodeDecodeError, RecursionError) as exc:
        return f"{module} cannot be read: {type(exc).__name__}: {str(exc)[:200]}"
    own = {name: fingerprints(found) - stub.get(name, frozenset()) for name, found in units.items()}
    return {name: pack(fps) for name, fps in own.items() if fps}


def source_of(path: str, module: str) -> str | None:
    """A module's text from a hand-in, for the page; None when it cannot be read."""
    data = intake.load(path).files.get(module)
    return None if data is None else data.decode("utf-8", "replace")
