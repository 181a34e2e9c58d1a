"""Grading: one submission with every test case, and many submissions across worker processes.

`Engine` owns a zygote and a pytest session (`grader.host.session`: the cases collected once) and
grades submissions one after another in the current process: each gets a fresh worker and a run of
every test case. `grade_many` runs one
engine per CPU core (or one per Dask worker process: `grade_task`, sent by
`grader.host.distributed`), writes every score file as soon as its submission is done, shows
progress, and can resume an interrupted run. The run's lifetime (the score folder's lock, stop
signals, pool processes that end with the grading process) is `grader.host.lifecycle`'s.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from datetime import datetime, timezone
from multiprocessing import current_process, get_context, util
from pathlib import Path

import torch

import grader
from grader import catalog as catalog_module
from grader import score_files
from grader.errors import GraderError, RunStopped
from grader.host import intake, lifecycle, results, scoring
from grader.host.channel import WorkerLauncher
from grader.host.launcher import describe_sandbox, launcher_for
from grader.host.options import Options, resolve_device  # noqa: F401  (runner.Options: where callers import it)
from grader.host.plugin import GradingPlugin, TestOutcome
from grader.host.session import GradingSession
from grader.host.student_code import Spare, StudentCode, close_spare, spares_allowed, start_spare
from grader.protocol.messages import TestStatus


class Engine:
    """Grades submissions in this process. One zygote and one pytest session, reused; one fresh
    worker per submission."""

    def __init__(self, options: Options, slot: int = 0, launcher: WorkerLauncher | None = None,
                 ahead: bool = False):
        """`launcher`: one started already (`grader check` forks its zygote before importing pytest).
        `ahead`: the engine grades one submission after another (a class, a warm check), so each next
        submission's worker is started while one is graded, where `spares_allowed`."""
        self.options = options
        self.ahead = ahead
        self.catalog = catalog_module.load(options.course)  # this engine's course, passed wherever it is needed
        self.tests_sha256 = catalog_module.tests_sha256(self.catalog)
        self.launcher: WorkerLauncher = launcher or launcher_for(options, self.catalog, slot)
        self.plugin = GradingPlugin(self.catalog, options.folders, options.device, options.seed, options.exercises,
                                    show_output=options.show_output,
                                    counterexamples=options.counterexamples, properties=options.properties)
        self.session: GradingSession | None = None  # started by the first submission
        self.spare: Spare | None = None  # the next submission's worker, started while this one is graded

    def _session(self) -> GradingSession:
        if self.session is None or self.session.ended is not None:
            self.session = GradingSession(self.plugin, self.catalog, self.options.folders)
        return self.session

    def grade(self, path: str | os.PathLike, name: str | None = None, exercises: set[str] | None = None) -> dict:
        sub = intake.load_present(path, self.catalog)
        if name:
            sub.name = name
        return self.grade_loaded(sub, exercises)

    def grade_loaded(self, sub: intake.Submission, exercises: set[str] | None = None) -> dict:
        """`exercises`: only these of the collected ones (a warm check re-runs what changed)."""
        opts = self.options
        if sub.wrong_assignment:  # another assignment's notebook: nothing of it is run, and its 0 is no grade
            return not_this_assignment_report(sub, opts)
        start = time.perf_counter()
        spare, self.spare = self.spare, None
        student = StudentCode(sub.files, self.launcher, self.catalog.module_of_exercise, opts.limits,
                              device=opts.device, seed=opts.seed, course=self.catalog, spare=spare)
        if self.ahead and spares_allowed(self.launcher, opts.limits, opts.device):
            # the next submission's worker: forked, sandboxed and sealed while this one is graded; it gets no
            # request before the next submission's first worker start takes it (an untaken one: `close`)
            self.spare = start_spare(self.launcher, opts.limits.memory_mb)
        session = self._session()
        try:
            outcomes = session.grade(student, exercises)
        finally:
            student.close()
        if session.ended is not None and lifecycle.received() is not None:
            raise lifecycle.Interrupted(lifecycle.received())  # a stop signal, not this submission's doing
        if self.plugin.errors:
            raise GraderError(f"the test cases do not match {self.catalog.path.name}:\n  " + "\n  ".join(self.plugin.errors))
        scoring.zero_tampered(outcomes.values(), student.tampered_exercises)
        scoring.withhold_points_without_work(outcomes.values(), self.catalog)
        if session.ended is not None:  # it stopped while grading this submission
            for outcome in outcomes.values():
                if outcome.status == TestStatus.ERROR and outcome.message == "the test did not run":
                    outcome.message = f"the test did not run (the pytest session ended: {session.ended[:300]})"
        sandbox = describe_sandbox(self.launcher.plan, opts.limits)
        sandbox["peak_memory_mb"] = round(student.peak_memory_mb, 1) if student.peak_memory_mb else None
        per_module = opts.device == "cpu" and opts.limits.worker_per_module
        sandbox["workers"] = (f"one per module ({student.workers_started} started)" if per_module else
                              f"one for all modules, torch restored before each import and call "
                              f"({student.workers_started} started)")
        report = results.build_report(
            submission=sub.name,
            exercises=self._exercises(exercises),
            outcomes=list(outcomes.values()),
            device=opts.device,
            torch_version=torch.__version__,
            duration_s=time.perf_counter() - start,
            grader_version=grader.__version__,
            seed=opts.seed,
            graded_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            source_sha256=sub.sha256,
            tests_sha256=self.tests_sha256,
            submission_errors=sub.problems + student.module_problems(),
            sandbox=sandbox,
        )
        output = student.captured_output()
        if output:
            report["output"] = output
        for entry in report["exercises"]:
            if entry["name"] in self.plugin.counterexamples and entry["score"] < entry["max_score"]:
                entry["counterexample"] = self.plugin.counterexamples[entry["name"]]
            if entry["name"] in sub.cells:  # a notebook's: the cell each exercise's code came from
                entry["cell"] = sub.cells[entry["name"]]
        return report

    def _exercises(self, only: set[str] | None = None):
        return [e for e in self.catalog.exercises if (not self.options.exercises or e.name in self.options.exercises)
                and (only is None or e.name in only)]

    def close(self) -> None:
        # The zygote first: it kills a worker still running, so that a session thread grading a
        # submission (a run that is being stopped) finishes at once instead of at its timeout.
        self.launcher.close()
        spare, self.spare = self.spare, None
        close_spare(spare)  # killed with the zygote already, if it had started; reaped here
        if self.session is not None:
            self.session.close()


def failure_report(name: str, options: Options, message: str, duration_s: float = 0.0) -> dict:
    """A complete score file for a submission the grader itself could not grade: every test an error
    worth 0, and the file's status `ungradable`, so that no export posts those zeros as a grade."""
    cat = catalog_module.load(options.course)
    outcomes = [TestOutcome(t.name, t, t.points, TestStatus.ERROR, message)
                for e in cat.exercises for t in e.tests if t.folder in options.folders
                and (not options.exercises or e.name in options.exercises)]
    exercises = [e for e in cat.exercises if not options.exercises or e.name in options.exercises]
    return results.build_report(submission=name, exercises=exercises, outcomes=outcomes, device=options.device,
                                torch_version=torch.__version__, duration_s=duration_s,
                                grader_version=grader.__version__, seed=options.seed,
                                submission_errors=[message], status=score_files.UNGRADABLE)


def not_this_assignment_report(sub: intake.Submission, options: Options) -> dict:
    """The score file of a notebook of another course or version (`intake.Submission.wrong_assignment`):
    ungradable, as the grader's own failures are (no export posts it, the submission limit does not
    count it), with the reason first among its problems."""
    report = failure_report(sub.name, options, sub.wrong_assignment)
    report["submission_errors"] = [sub.wrong_assignment] + [p for p in sub.problems if p != sub.wrong_assignment]
    report["source_sha256"] = sub.sha256
    return report


# ============================================================================= many submissions

_engine: Engine | None = None


def _init_pool_process(options: Options) -> None:
    """Each pool process gets its own engine; its number keeps its workers' user ids apart. The
    engine is closed when the process ends, whether the pool shuts down, the grading process
    stops it (SIGTERM) or the grading process dies (`lifecycle.become_pool_process`)."""
    global _engine, _engine_failure
    lifecycle.become_pool_process(_close_engine)
    identity = current_process()._identity
    try:
        _engine = start_engine(options, slot=identity[-1] if identity else os.getpid())
    except EngineUnavailable as exc:  # raised for each submission it is given: the run stops
        _engine_failure = str(exc)
        return
    util.Finalize(None, _close_engine, exitpriority=100)


_engine_failure = ""


def _close_engine() -> None:
    global _engine
    engine, _engine = _engine, None
    if engine is not None:
        engine.close()


def _grade_in_pool(path: str, name: str) -> dict:
    if _engine is None:
        raise EngineUnavailable(_engine_failure)
    return grade_or_report(_engine, path, name)


class EngineUnavailable(GraderError):
    """An engine (its zygote) could not start: a fault of this machine or of the grader, never of
    a submission, so the run stops instead of scoring the class 0."""


def start_engine(options: Options, slot: int = 0, ahead: bool = True) -> Engine:
    """An engine for a run (`ahead`: it will grade more than one submission, see `Engine`)."""
    try:
        return Engine(options, slot=slot, ahead=ahead)
    except GraderError:
        raise
    except Exception as exc:
        lines = [line for line in str(exc).splitlines() if line.strip()] or [type(exc).__name__]
        why = lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1].strip()}"
        raise EngineUnavailable(f"the sandbox could not start ({why[:1000]})") from exc


_dask_engines: dict[str, Engine] = {}
_dask_lock = threading.Lock()


def grade_task(sub: intake.Submission, options: Options) -> dict:
    """Runs on a Dask worker (`grader.host.distributed`): grade one submission with this process's engine."""
    key = repr((options.course, options.device, options.seed, options.folders, sorted(options.exercises or []),
                options.limits))
    with _dask_lock:  # one pytest session at a time per process, whatever the worker's thread count
        engine = _dask_engines.get(key)
        if engine is None:
            engine = _dask_engines[key] = Engine(options, ahead=True)
        return grade_or_report(engine, sub, sub.name, where=" on a Dask worker")


def unique_names(paths: list[str]) -> list[str]:
    names, seen = [], {}
    for p in paths:
        base = intake.submission_name(p)
        seen[base] = seen.get(base, 0) + 1
        names.append(base if seen[base] == 1 else f"{base}-{seen[base]}")
    return names


@dataclass
class Vanished:
    """A submission that was gone when its turn came (`intake.SubmissionVanished`): no score file."""
    submission: str
    message: str


@dataclass
class RunSummary:
    total: int = 0  # submissions the run was given
    written: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    regraded: dict[str, str] = field(default_factory=dict)  # --resume: name -> why its score file was not kept
    files: list[Path] = field(default_factory=list)  # every score file of the run, kept by --resume or written
    outlines: list[dict] = field(default_factory=list)  # results.outline of each, in the same order
    vanished: list[Vanished] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # for the person running it (a folder that cannot be locked)
    summary_error: str = ""  # why summary.csv could not be written, if it could not
    seconds: float = 0.0

    @property
    def reports(self) -> list[dict]:
        """Every score file of the run, read back (the run itself holds outlines only)."""
        return [json.loads(path.read_text(encoding="utf-8")) for path in self.files]


def grade_many(paths: list[str], out_dir: Path, options: Options, workers: int = 1, resume: bool = False,
               progress=None, dask: str | None = None, out_lock: lifecycle.OutLock | None = None) -> RunSummary:
    """Grade every submission, writing DIR/<name>.json as each finishes and DIR/summary.csv at the end.

    `dask`: the address of a Dask scheduler ("local" starts a local cluster) to grade on instead
    of this machine's processes. GraderError before anything is graded when DIR cannot be used
    (a file, not writable, another run's); RunStopped when a stop signal or a fault of the
    machine (a full disk) ends the run part-way: every score file written is complete, and the
    submissions it lacks are graded by running again with `resume`. `out_lock`: DIR, claimed by
    the caller (`lifecycle.claim_out`, which raises those GraderErrors) and released by the caller."""
    out_dir = Path(out_dir)
    lock = out_lock or lifecycle.claim_out(out_dir)
    summary = RunSummary(total=len(paths), notes=[lock.warning] if lock.warning else [])
    try:
        with lifecycle.stop_on_signals():
            return _grade_into(paths, out_dir, options, workers, resume, progress, dask, summary)
    finally:
        if out_lock is None:
            lock.release()


def _grade_into(paths, out_dir: Path, options: Options, workers: int, resume: bool, progress, dask,
                summary: RunSummary) -> RunSummary:
    """Resume planning, then one back-end (serial, pool or Dask), every score file through one writer."""
    start = time.perf_counter()
    results.remove_temporaries(out_dir)  # the lock is ours: no other run is writing there
    todo = plan_resume(paths, out_dir, options, resume, summary)
    finish = ScoreWriter(out_dir, summary, len(todo), progress)
    stopped: RunStopped | None = None
    try:
        grade_with_backend(todo, options, workers, dask, finish)
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", signal.SIGINT)
        stopped = RunStopped(f"interrupted by {signal.Signals(signum).name}", summary, signum)
    except RunStopped as exc:
        stopped = exc
    except EngineUnavailable as exc:
        stopped = RunStopped(str(exc), summary)
    finally:
        summary.seconds = time.perf_counter() - start
        summary_failure = finish.write_summary()  # always, even when the run stops
        stopped = stopped or summary_failure
    if stopped is not None:
        raise stopped
    return summary


def plan_resume(paths, out_dir: Path, options: Options, resume: bool, summary: RunSummary) -> list[tuple[str, str]]:
    """The (path, name) pairs to grade; with `resume`, a current score file is kept and counted in `summary`."""
    todo = []
    course = catalog_module.load(options.course)
    tests_sha256 = catalog_module.tests_sha256(course) if resume else None
    for path, name in zip(paths, unique_names(paths)):
        if resume:
            done = score_files.read_valid(out_dir / results.score_file_name(name))
            if done is not None:
                why = stale(done, intake.load(path, course).sha256, options, tests_sha256)
                if not why:
                    summary.skipped.append(name)
                    summary.files.append(out_dir / results.score_file_name(name))
                    summary.outlines.append(results.outline(done))
                    continue
                summary.regraded[name] = why
        todo.append((path, name))
    return todo


class ScoreWriter:
    """The one writer of a run's score files: validates each report, writes it atomically, counts it."""

    def __init__(self, out_dir: Path, summary: RunSummary, total: int, progress=None):
        self.out_dir, self.summary, self.total = out_dir, summary, total
        self.progress = progress or (lambda report, done, total: None)

    def __call__(self, report: dict | Vanished) -> None:
        summary = self.summary
        if isinstance(report, Vanished):
            summary.vanished.append(report)
            return
        problems = results.validate_if_possible(report)
        if problems:
            raise GraderError(f"score file for {report['submission']} is invalid: {problems[:3]}")
        try:
            with lifecycle.writing():  # a stop signal waits until the file is in place and counted
                path = results.write_report(self.out_dir, report)
                summary.written.append(path)
                summary.files.append(path)
                summary.outlines.append(results.outline(report))
        except OSError as exc:
            raise write_failure(exc, self.out_dir / results.score_file_name(report["submission"]), summary) from exc
        self.progress(report, len(summary.written), self.total)

    def write_summary(self) -> RunStopped | None:
        """summary.csv of every score file counted; what stops the run if it cannot be written."""
        summary = self.summary
        if not summary.outlines:
            return None
        try:
            with lifecycle.writing():
                results.write_atomic(self.out_dir / "summary.csv", results.summary_csv(summary.outlines))
        except OSError as exc:
            failure = write_failure(exc, self.out_dir / "summary.csv", summary)
            summary.summary_error = str(failure)
            return failure
        return None


def grade_with_backend(todo: list[tuple[str, str]], options: Options, workers: int, dask: str | None, finish) -> None:
    """Grade `todo` serially, in a pool of `workers` processes, or on a Dask cluster; `finish` gets each report."""
    if dask:
        from grader.host.distributed import grade_on_cluster

        grade_on_cluster(_read_present(todo, catalog_module.load(options.course), finish), grade_task, options, dask, workers, finish)
    elif workers <= 1 or len(todo) <= 1:
        _grade_serially(todo, options, finish)
    else:
        _grade_in_processes(todo, options, workers, finish)


def _grade_serially(todo: list[tuple[str, str]], options: Options, finish) -> None:
    engine = start_engine(options, ahead=len(todo) > 1)
    try:
        for path, name in todo:
            finish(grade_or_report(engine, path, name))
    finally:
        engine.close()


def _read_present(todo: list[tuple[str, str]], course: catalog_module.Course, finish):
    """Read each submission of `course` here (for a cluster); one that vanished is finished as `Vanished`."""
    for path, name in todo:
        try:
            sub = intake.load_present(path, course)
        except intake.SubmissionVanished as exc:
            finish(Vanished(name, str(exc)))
            continue
        sub.name = name
        yield sub


def write_failure(exc: OSError, path: Path, summary: RunSummary) -> RunStopped:
    """A file of the run could not be written: the run stops, saying why and what to do."""
    what, remedy = lifecycle.write_error(exc)
    return RunStopped(f"cannot write {path.name} in {path.parent} ({what})", summary, remedy=remedy)


def stale(report: dict, source_sha256: str, options: Options, tests_sha256: str) -> str:
    """Why a finished score file cannot be kept by --resume ("" when it can): its submission, seed,
    device or tests (the course file, its test cases and helpers, the grader version) differ from this run's,
    or the grader could not grade it last time (an ungradable file is never kept)."""
    if score_files.is_ungradable(report):
        return "ungradable last time"
    if report.get("source_sha256") != source_sha256:
        return "submission changed"
    if report.get("seed") != options.seed:
        return f"seed {report.get('seed')} -> {options.seed}"
    if report.get("device") != options.device:
        return f"device {report.get('device')} -> {options.device}"
    if report.get("tests_sha256") != tests_sha256:
        return "tests changed" if report.get("tests_sha256") else "no tests fingerprint (an older grader)"
    if options.exercises or options.folders != ("public", "hidden"):
        return "a partial run"
    return ""


def grade_or_report(engine: Engine, source: str | os.PathLike | intake.Submission, name: str,
                    where: str = "") -> dict:
    """Grade one submission (a path, or one already read); a bug in the grader itself gives a
    complete score file that says so instead of stopping the run. Set-up errors still raise."""
    start = time.perf_counter()
    try:
        if isinstance(source, intake.Submission):
            return engine.grade_loaded(source)
        return engine.grade(source, name=name)
    except intake.SubmissionVanished as exc:
        return Vanished(name, str(exc))
    except GraderError:
        raise
    except Exception:
        return failure_report(name, engine.options, f"internal grader error{where}:\n" + traceback.format_exc()[-3000:],
                              time.perf_counter() - start)


def _grade_in_processes(todo, options: Options, workers: int, finish) -> None:
    """Grade in a pool of processes. A pool process that dies (the OOM killer, a crash in the
    grader) breaks the whole pool: the submissions it had not started go on in a fresh pool, and
    those in flight are graded again one at a time, so that only one that kills a pool of its
    own gets a failure report, never a submission that was merely in the same pool."""
    ctx = get_context("spawn")
    queue = list(todo)
    while queue:
        queue, in_flight = _pool_round(ctx, options, workers, queue, finish)
        while in_flight:
            rest, killed = _pool_round(ctx, options, 1, in_flight, finish)
            for _, name in killed:
                finish(failure_report(name, options, "the grading process died while grading this submission, "
                                                     "twice (the second time on its own); it was not graded"))
            in_flight = rest


def _pool_round(ctx, options: Options, size: int, items: list, finish) -> tuple[list, list]:
    """Grade `items` with at most `size` in flight. Returns (not started, in flight) when the pool
    dies, ([], []) when all are done."""
    items = list(items)
    with ProcessPoolExecutor(max_workers=size, mp_context=ctx, initializer=_init_pool_process,
                             initargs=(options,)) as pool:
        running: dict = {}
        try:
            while items or running:
                broken, dead = [], False
                while items and len(running) < size:
                    try:
                        with lifecycle.signals_held():  # a process it starts gets them once it can stop cleanly
                            running[pool.submit(_grade_in_pool, *items[0])] = items[0]
                    except BrokenProcessPool:  # it died since the last wait: nothing more goes in
                        dead = True
                        break
                    items.pop(0)
                if dead and not running:
                    return items, []
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in done:
                    item = running.pop(fut)
                    try:
                        report = fut.result()
                    except BrokenProcessPool:
                        broken.append(item)
                        continue
                    finish(report)
                if broken:
                    # The pool is dead: what was still running fails too, unless it had finished.
                    for fut in wait(running)[0]:
                        item = running.pop(fut)
                        try:
                            finish(fut.result())
                        except BrokenProcessPool:
                            broken.append(item)
                    return items, broken
        except BaseException:
            # Stopped (a signal, a full disk): what is in flight is dropped, not waited for.
            for fut in running:
                fut.cancel()
            _stop_processes(pool)
            raise
    return [], []


def _stop_processes(pool: ProcessPoolExecutor) -> None:
    """SIGTERM each pool process: it closes its engine (whose zygote ends its worker and removes its
    sandbox folder) and exits; the pool's shutdown then waits for it."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        try:
            process.terminate()
        except (OSError, ValueError):
            pass

