"""Grading on a Dask distributed cluster: one task per submission, each in its own sandbox.

Why Dask: it is pure Python and pip-installable, runs the same code on a laptop
(`LocalCluster`), on a university's SLURM or PBS queue (dask-jobqueue) and on Kubernetes, and
needs no daemon or object store of its own (Ray brings both, and much larger wheels). A grading
task is small (a few hundred kilobytes in, a score file out), which is Dask's sweet spot.

The instructor's machine reads every submission (so the cluster needs no shared file system)
and sends its modules to a Dask worker process, where the task grades it: the runner's
`grade_task` keeps one `Engine` (one warm zygote) per Dask worker process and grades one
submission at a time, in a fresh sandboxed worker as always. Dask workers are trusted grading
processes: student code never runs in them, only in the sandboxed workers their engines fork.
This module knows Dask and nothing of grading: the runner hands it the task.
"""

from __future__ import annotations

from typing import Callable

from grader.errors import GraderError
from grader.host import intake


def grade_on_cluster(todo: list[tuple[str, str]], task: Callable[[intake.Submission, object], dict], options,
                     address: str, workers: int, finish) -> None:
    """Grade (path, name) pairs on the cluster at `address` ("local": a LocalCluster of `workers`
    processes): each submission is read here and `task(submission, options)` runs on a Dask
    worker; `finish(report)` runs here, on the instructor's machine, as each task completes."""
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
            futures.append(client.submit(task, sub, options, key=f"grade-{i}-{name}", pure=False))
        for future in as_completed(futures):
            finish(future.result())
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
