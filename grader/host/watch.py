"""`grader check --watch`: a fresh verdict each time the student saves a module.

One `WarmChecker` (`grader.host.warm`) stays warm for the whole session: the public cases are
collected once and the zygote keeps torch loaded, so a save costs a fork and the checks of the
module saved, nothing else. The student's code still runs only in a sandboxed worker forked for
that check; a hang or a crash costs that verdict, never the watcher. A save is heard from the file
system with `watchfiles` where it is installed (`pip install watchfiles`), else by polling the
modules' sizes and times every 50 ms. Ctrl-C (or SIGTERM) ends it: the zygote and its workers end
with it, and the exit status is 0.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from grader import catalog as catalog_module
from grader.display import check_table, use_color
from grader.host import lifecycle
from grader.host.warm import WarmChecker

POLL_S = 0.05
WATCHING = "watching {path} (Ctrl-C to stop) / 正在监视 {path}（按 Ctrl-C 停止）"
STOPPED = "stopped watching / 已停止监视"


def watch(folder: Path, exercises: list[str] | None, options) -> int:
    """Check `folder` now, then again after each save of one of its modules, until stopped."""
    course = catalog_module.load(options.course)
    asked = set(exercises) if exercises else {e.name for e in course.exercises}
    checker = WarmChecker(course=options.course, device=options.device, limits=options.limits)
    try:
        with lifecycle.stop_on_signals():
            changes = module_changes(folder, course.modules)  # from the contents the first check reads
            totals = {e.name: e.max_score for e in course.exercises}
            _show(checker.check(exercises=sorted(asked), folder=folder), folder, totals)
            for changed in changes:
                todo = sorted(asked & {n for m in changed for n in course.exercises_in(m)})
                if todo:
                    print(f"\n--- saved {', '.join(changed)}: checking / 已保存，正在检查 ---", flush=True)
                    _show(checker.check(exercises=todo, folder=folder), folder, totals)
    except KeyboardInterrupt:
        print(f"\n{STOPPED}", file=sys.stderr)
        return 0
    finally:
        checker.close()
    return 0


def _show(report: dict, folder: Path, totals: dict[str, float]) -> None:
    print(check_table(report, str(folder), totals=totals, color=use_color(sys.stdout)))
    print(WATCHING.format(path=folder), flush=True)


def module_changes(folder: Path, modules: list[str]) -> Iterator[list[str]]:
    """Each time some of the course's modules in `folder` change content from what they are now:
    which ones (file names)."""
    files = {m: _module_path(folder, m) for m in modules}
    return _changes(folder, files, {m: _digest(p) for m, p in files.items()})


def _changes(folder: Path, files: dict[str, Path], seen: dict[str, str | None]) -> Iterator[list[str]]:
    modules = list(files)
    for _ in _file_events(folder, list(files.values())):
        now = {m: _digest(p) for m, p in files.items()}
        changed = [m for m in modules if now[m] != seen[m]]
        seen = now
        if changed:
            yield changed


def _module_path(folder: Path, module: str) -> Path:
    nested = folder / "exercises" / module
    return nested if not (folder / module).exists() and nested.exists() else folder / module


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _file_events(folder: Path, paths: list[Path]) -> Iterator[None]:
    """Yields after something may have changed in `folder` (a hint: the caller compares contents),
    and every half second with watchfiles (a save made before it started watching is not lost)."""
    try:
        import watchfiles
    except ImportError:
        yield from _polled(paths)
        return
    for _ in watchfiles.watch(folder, debounce=30, step=10, rust_timeout=500, yield_on_timeout=True,
                              raise_interrupt=True):
        yield


def _polled(paths: list[Path]) -> Iterator[None]:
    def stamp():
        out = []
        for p in paths:
            try:
                st = os.stat(p)
                out.append((st.st_mtime_ns, st.st_size, st.st_ino))
            except OSError:
                out.append(None)
        return out

    last = None  # the first round always yields: a save made before polling began is not lost
    while True:
        time.sleep(POLL_S)
        now = stamp()
        if now != last:
            last = now
            yield
