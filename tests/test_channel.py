"""The shapes the trusted side relies on: every worker handle and launcher has them.

`grader.host.channel.WorkerHandle` and `WorkerLauncher` are what `StudentCode` and the engine call;
the zygote's launcher and worker, the spawn fallback and the in-process floor of bench/ must all
offer them, with the same parameters. Checked two ways: by signature on the classes (a method
renamed or given another default fails here), and by `isinstance` on real, running instances.
"""

from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path

import pytest

from grader import catalog
from grader.host.channel import MemoryWatch, WorkerHandle, WorkerLauncher
from grader.host.launcher import Launcher, SpawnLauncher, WorkerProcess
from grader.protocol.limits import Limits

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import inprocess  # noqa: E402  (bench/inprocess.py)

HANDLES = [WorkerProcess, inprocess._InProcessWorker]
LAUNCHERS = [Launcher, SpawnLauncher, inprocess._InProcessLauncher]


def protocol_methods(protocol: type) -> dict[str, inspect.Signature]:
    return {name: inspect.signature(value) for name, value in vars(protocol).items()
            if callable(value) and not name.startswith("_")}


def mismatches(cls: type, protocol: type) -> list[str]:
    """How `cls` differs from `protocol`'s methods: a missing method, or other parameters or defaults."""
    found = []
    for name, wanted in protocol_methods(protocol).items():
        method = getattr(cls, name, None)
        if method is None:
            found.append(f"{cls.__name__} has no {name}")
            continue
        want = [(p.name, p.default) for p in wanted.parameters.values()]
        have = [(p.name, p.default) for p in inspect.signature(method).parameters.values()]
        extra = inspect.signature(method).parameters.values()
        if have[:len(want)] != want or any(p.default is inspect.Parameter.empty
                                           for p in list(extra)[len(want):]):
            found.append(f"{cls.__name__}.{name}: parameters {have}, not {want}")
    return found


@pytest.mark.parametrize("cls", HANDLES, ids=lambda c: c.__qualname__)
def test_every_worker_handle_has_the_methods_of_the_protocol(cls):
    assert protocol_methods(WorkerHandle)  # the protocol declares them
    assert mismatches(cls, WorkerHandle) == []


@pytest.mark.parametrize("cls", LAUNCHERS, ids=lambda c: c.__qualname__)
def test_every_launcher_has_the_methods_of_the_protocol(cls):
    assert mismatches(cls, WorkerLauncher) == []


def test_the_check_sees_a_method_with_another_default():
    class Drifted(inprocess._InProcessWorker):
        def close(self, grace: float = 5.0) -> None:  # not the protocol's default
            pass

    class Missing:
        conn = output = None

    assert mismatches(Drifted, WorkerHandle) == [
        "Drifted.close: parameters [('self', <class 'inspect._empty'>), ('grace', 5.0)], "
        "not [('self', <class 'inspect._empty'>), ('grace', 0.0)]"]
    assert "Missing has no spawn" in mismatches(Missing, WorkerLauncher)
    assert not isinstance(Missing(), WorkerHandle)


def test_the_zygote_launcher_and_its_worker_are_the_protocols(engine):
    assert isinstance(engine.launcher, Launcher) and isinstance(engine.launcher, WorkerLauncher)
    worker = engine.launcher.spawn()
    try:
        assert isinstance(worker, WorkerHandle)
        watch = MemoryWatch(worker, engine.options.limits.memory_mb)
        assert watch.baseline_kb and watch.baseline_kb > 1024  # a real worker's memory, measured
        watch()  # within its limit: nothing raised, no precise measure needed
        assert watch.peak_mb is None
    finally:
        worker.close()


def test_the_spawn_fallback_and_the_in_process_floor_are_the_protocols():
    spawn = SpawnLauncher(Limits(), catalog.load())
    assert isinstance(spawn, WorkerLauncher)
    launcher = inprocess._InProcessLauncher(spawn.plan)
    assert isinstance(launcher, WorkerLauncher)
    worker = launcher.spawn()
    try:
        assert isinstance(worker, WorkerHandle)
    finally:
        worker.close()
    assert not Path(worker.workdir).exists()  # a bench run leaves no copy of a submission in /tmp


def test_the_in_process_floor_grades_the_reference_to_full_marks():
    """make bench's floor is the same cases with the worker in a thread: it must grade, not answer
    "tampered" because the bench's own threads look like a submission's."""
    from grader.host.runner import Options

    engine = inprocess.InProcessEngine(Options())
    cwd = os.getcwd()
    try:
        report = engine.grade(ROOT / "solutions")
        assert os.getcwd() == cwd  # (the worker's workdir, which its close removes, was left as this process's)
    finally:
        engine.close()
    assert report["score"] == report["max_score"] == 100
