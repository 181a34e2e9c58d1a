"""Grading on a Dask distributed cluster: one task per submission, each in its own sandbox.

Why Dask: it is pure Python and pip-installable, runs the same code on a laptop
(`LocalCluster`), on a university's SLURM or PBS queue (dask-jobqueue) and on Kubernetes, and
needs no daemon or object store of its own (Ray brings both, and much larger wheels). A grading
task is small (a few hundred kilobytes in, a score file out), which is Dask's sweet spot.

The instructor's machine reads every submission (so the cluster needs no shared file system)
and sends its six modules to a Dask worker process. That process keeps one `Engine` (one warm
zygote), grades one submission at a time under a lock, in a fresh sandboxed worker as always,
and returns the score file as a dict. Dask workers are trusted grading processes: student
code never runs in them, only in the sandboxed workers their engines fork.
"""

from __future__ import annotations

import threading

from grader.host import intake
from grader.host.runner import Engine, GraderError, Options, grade_or_report

_engines: dict[str, Engine] = {}
_lock = threading.Lock()


def grade_task(sub: intake.Submission, options: Options) -> dict:
    """Runs on a Dask worker: grade one submission with this process's engine."""
    key = repr((options.device, options.seed, options.folders, sorted(options.exercises or []), options.limits))
    with _lock:  # one pytest session at a time per process, whatever the worker's thread count
        engine = _engines.get(key)
        if engine is None:
            engine = _engines[key] = Engine(options)
        return grade_or_report(engine, sub, sub.name, where=" on a Dask worker")


def grade_on_cluster(todo: list[tuple[str, str]], options: Options, address: str, workers: int, finish) -> None:
    """Grade (path, name) pairs on the cluster at `address` ("local": a LocalCluster of `workers`
    processes); `finish(report)` runs here, on the instructor's machine, as each task completes."""
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise GraderError("--dask needs dask's distributed scheduler: pip install 'autograd-lab[distributed]'") from None
    cluster = None
    if address == "local":
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
    else:
        client = Client(address)
    try:
        futures = []
        for i, (path, name) in enumerate(todo):
            sub = intake.load(path)
            sub.name = name
            futures.append(client.submit(grade_task, sub, options, key=f"grade-{i}-{name}", pure=False))
        for future in as_completed(futures):
            finish(future.result())
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
