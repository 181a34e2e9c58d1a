"""The next submission's worker is started while one is graded (grader.host.runner.Engine, `start_spare`)."""

from __future__ import annotations

from grader.host import student_code
from grader.host.runner import Engine, Options
from grader.protocol.limits import NAMESPACE_MODES

from conftest import SOLUTIONS, STUBS
from test_counterexamples import _alive


def _first_workers(monkeypatch) -> list[tuple[int, int, int]]:
    """Per graded submission: the pid of the worker it graded with, how many spares it took, workers started."""
    seen: list[tuple[int, int, int]] = []
    close = student_code.StudentCode.close

    def recording(self):
        seen.append((self.workers["all"].pid if "all" in self.workers else -1, self.spares_taken, self.workers_started))
        return close(self)

    monkeypatch.setattr(student_code.StudentCode, "close", recording)
    return seen


def test_the_next_submissions_worker_starts_while_one_is_graded_and_is_its_first(monkeypatch):
    seen = _first_workers(monkeypatch)
    engine = Engine(Options(seed=0, exercises={"hvp"}), ahead=True)
    try:
        first = engine.grade(SOLUTIONS)
        if engine.launcher.plan.mode not in NAMESPACE_MODES:  # the process sandbox: one worker at a time
            assert engine.spare is None
            return
        thread, started = engine.spare
        thread.join(30)
        spare = started["worker"].pid
        assert _alive(spare) and spare != seen[0][0]
        second = engine.grade(STUBS)
        assert seen[1] == (spare, 1, 1)  # the stubs graded in the worker started ahead, the only one started
        assert first["score"] == first["max_score"] > 0 == second["score"]
        thread, started = engine.spare
        thread.join(30)
        untaken = started["worker"].pid
    finally:
        engine.close()
    assert not _alive(spare) and not _alive(untaken)  # the last spare, which nothing took, ends with the engine


def test_no_worker_is_started_ahead_in_the_process_sandbox(monkeypatch):
    seen = _first_workers(monkeypatch)
    engine = Engine(Options(seed=0, exercises={"hvp"}, sandbox="process"), ahead=True)
    try:
        engine.grade(SOLUTIONS)
        assert engine.spare is None
        report = engine.grade(SOLUTIONS)
        assert engine.spare is None and seen[1][1] == 0 and report["score"] == report["max_score"]
    finally:
        engine.close()


def test_an_engine_for_one_submission_starts_no_worker_ahead():
    """`grader check`, one hand-in, an export's single grading: no worker is started that nothing would take."""
    engine = Engine(Options(seed=0, exercises={"hvp"}))
    try:
        report = engine.grade(SOLUTIONS)
        assert engine.spare is None and report["score"] == report["max_score"]
    finally:
        engine.close()
