"""grade_many's process pool: a pool process that dies costs its own submission only."""

import json

from grader import catalog
from grader.host import results, runner
from grader.host.runner import Options, grade_many

import hostile_pool
from conftest import make_submission


def test_a_dying_pool_process_costs_only_its_own_submission(tmp_path, monkeypatch):
    """One submission kills its pool process every time it is graded (here: a stand-in for the
    OOM killer or a crash in the grader). The others, in flight in the same pool or not yet
    started, are graded in full; that one gets a complete failure report."""
    names = ["alpha", "crash-beta", "gamma", "delta"]
    paths = [str(make_submission(tmp_path / "subs" / name)) for name in names]
    monkeypatch.setattr(runner, "_grade_in_pool", hostile_pool.dies_on_crash_submissions)
    out = tmp_path / "out"
    summary = grade_many(paths, out, Options(seed=0), workers=2)
    reports = {r["submission"]: r for r in summary.reports}
    assert sorted(reports) == sorted(names)
    for name in names:
        report = json.loads((out / f"{name}.json").read_text())
        assert report == reports[name] and results.validate(report) == []
        assert len(report["exercises"]) == len(catalog.load().exercises)
    assert [reports[n]["score"] for n in ("alpha", "gamma", "delta")] == [100, 100, 100]
    assert reports["crash-beta"]["score"] == 0
    assert "died while grading this submission, twice" in reports["crash-beta"]["submission_errors"][0]
