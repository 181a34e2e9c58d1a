"""Requests sent ahead (grader.host.pipeline): the same outcomes as requests made one by one.

An engine sends a submission's calls ahead from its second submission on (its first teaches it
which tests make a single call). Every submission graded here is graded twice: by a fresh engine,
whose first submission it is (every request made on the spot), and by one engine after others,
with the pipeline; every test's outcome must be the same.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from grader.host.pipeline import Entry, Pipeline, PlannedCall
from grader.host.runner import Engine, Options
from grader.host.student_code import StudentCode

ROOT = Path(__file__).resolve().parent.parent
WRONG = ROOT / "tests" / "submissions" / "wrong"


def outcomes(report: dict) -> dict:
    return {(e["name"], t["name"]): (t["status"], t["score"], t.get("message", ""), str(t.get("mistake")))
            for e in report["exercises"] for t in e["tests"]}


def wrong_submission(tmp_path: Path, mistake: str) -> Path:
    """The reference with one module replaced as tests/submissions/wrong/<mistake>.py says."""
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from make_submissions import write_wrong
    finally:
        sys.path.remove(str(ROOT / "bench"))
    folder = tmp_path / mistake
    write_wrong(folder, WRONG / f"{mistake}.py")
    return folder


@pytest.fixture
def pipelines(monkeypatch):
    """What became of each graded submission's pipeline: a Counter of its entries' states, or None."""
    seen: list = []
    close = StudentCode.close

    def recording_close(self):
        seen.append(None if self.pipeline is None else Counter(e.state for e in self.pipeline.entries))
        return close(self)

    monkeypatch.setattr(StudentCode, "close", recording_close)
    return seen


@pytest.mark.slow
def test_sent_ahead_grades_as_one_by_one(tmp_path, pipelines):
    submissions = [ROOT / "solutions", ROOT / "exercises", wrong_submission(tmp_path, "hvp_sum_instead_of_v")]
    alone = []
    for path in submissions:
        engine = Engine(Options())
        try:
            alone.append(engine.grade(path))
        finally:
            engine.close()
    assert pipelines == [None] * len(submissions)  # an engine's first submission: nothing sent ahead
    engine = Engine(Options())
    try:
        engine.grade(ROOT / "solutions")  # teaches the engine its tests
        together = [engine.grade(path) for path in submissions]
    finally:
        engine.close()
    for path, one, other in zip(submissions, alone, together):
        assert other["score"] == one["score"], path.name
        assert outcomes(other) == outcomes(one), path.name
    sent = pipelines[len(submissions) + 1:]
    assert all(states is not None for states in sent)
    # Nearly every request was sent ahead: all but the calls after a test's first and the load.
    assert all(states["used"] > 150 for states in sent), sent


@pytest.mark.slow
def test_a_worker_that_fails_stops_the_pipeline(tmp_path, pipelines):
    """A call that hangs costs its test only, as without the pipeline; what was sent after it is
    dropped and made again on the spot, to a fresh worker."""
    hang = tmp_path / "hang"
    shutil.copytree(ROOT / "solutions", hang)
    source = (hang / "grad.py").read_text()
    (hang / "grad.py").write_text(source.replace("def hvp(", "def hvp(*a, **k):\n    while True:\n        pass\n\n\ndef _hvp(", 1))
    from grader.protocol.limits import Limits

    engine = Engine(Options(limits=Limits(call_timeout_s=1.0, exercise_budget_s=1.5)))
    try:
        engine.grade(ROOT / "solutions")
        alone_engine = Engine(Options(limits=Limits(call_timeout_s=1.0, exercise_budget_s=1.5)))
        try:
            alone = alone_engine.grade(hang)
        finally:
            alone_engine.close()
        together = engine.grade(hang)
    finally:
        engine.close()
    statuses = lambda report: {k: v[:2] for k, v in outcomes(report).items()}  # noqa: E731  (messages say the time left)
    assert statuses(together) == statuses(alone)
    hvp = next(e for e in together["exercises"] if e["name"] == "hvp")
    assert hvp["score"] == 0 and {t["status"] for t in hvp["tests"]} <= {"timeout", "error"}
    assert all(e["score"] == e["max_score"] for e in together["exercises"] if e["name"] != "hvp")
    assert pipelines[-1]["dropped"] > 0  # the pipeline stopped at the hang


def _call(test: str, module: str = "grad", n: int = 0) -> PlannedCall:
    return PlannedCall(test, "hvp", module, "hvp", {"op": "call", "target": f"{module}.hvp", "args": [n]}, [])


def test_plan_imports_each_module_once_and_stops_at_barriers():
    pipeline = Pipeline.plan([_call("a", n=1), _call("b", n=2), _call("c", "graph", 3), _call("d", n=4)],
                             barrier_tests={"b"}, imported=set())
    kinds = [(e.body["op"], e.module) for e in pipeline.entries]
    assert kinds == [("import", "grad"), ("call", "grad"), ("call", "grad"), ("import", "graph"), ("call", "graph"),
                     ("call", "grad")]
    assert pipeline.send_limit == 2  # up to b's call, nothing after it
    assert pipeline.find({"op": "import", "module": "grad"}, []) == 0
    pipeline.reached(0)
    assert pipeline.find({"op": "call", "target": "grad.hvp", "args": [2]}, []) == 2  # a made no call: skipped
    assert pipeline.entries[1].state == "planned"
    pipeline.reached(2)
    assert pipeline.entries[1].state == "dropped"
    assert pipeline.send_limit == 2  # b is a barrier: still nothing after it until the next test asks
    pipeline.reached(3)
    assert pipeline.send_limit == 5
    assert pipeline.find({"op": "call", "target": "grad.hvp", "args": [99]}, []) is None


def test_window_and_stop():
    pipeline = Pipeline.plan([_call(str(i), n=i) for i in range(20)], barrier_tests=set(), imported={"grad"})
    for entry in pipeline.entries[:8]:
        entry.state = "sent"
    pipeline.next_send = 8
    assert pipeline.sendable() is None  # the window is full
    pipeline.entries[0].state, pipeline.next_read = "read", 1
    assert isinstance(pipeline.sendable(), Entry)
    pipeline.stop()
    assert pipeline.sendable() is None
    assert Counter(e.state for e in pipeline.entries) == Counter({"read": 1, "dropped": 19})


def test_first_calls_are_described_once_per_session_and_still_sent_ahead(tmp_path, pipelines, monkeypatch):
    """The tests' first calls depend on the seed and the test only: the session describes each test once
    (its second submission), and every later submission's worker gets the same requests ahead."""
    from grader.host import session as session_module

    described: list[int] = []
    describe = session_module.describe_calls

    def counting(items, plugin, student):
        described.append(len(items))
        return describe(items, plugin, student)

    monkeypatch.setattr(session_module, "describe_calls", counting)
    engine = Engine(Options())
    try:
        reports = [engine.grade(path) for path in (ROOT / "solutions", ROOT / "solutions",
                                                   wrong_submission(tmp_path, "hvp_sum_instead_of_v"),
                                                   ROOT / "solutions")]
    finally:
        engine.close()
    assert len(described) == 1 and described[0] > 100, described  # the second submission's, every test
    assert pipelines[0] is None and all(states is not None for states in pipelines[1:])
    assert pipelines[3]["used"] == pipelines[1]["used"] > 150, pipelines
    assert reports[3]["score"] == reports[0]["score"] == reports[0]["max_score"] > reports[2]["score"]
