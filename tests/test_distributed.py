"""Grading on a Dask cluster of separate processes gives the same results as grading locally."""

import json

import pytest

from grader.host.runner import Options, grade_many

from conftest import SOLUTIONS, STUBS, make_submission

pytest.importorskip("distributed")


def outcomes(report):
    return [(e["name"], t["name"], t["status"], t["score"], t["message"]) for e in report["exercises"] for t in e["tests"]]


def test_local_cluster_matches_local_grading(tmp_path):
    wrong = make_submission(tmp_path / "subs" / "wrong",
                            {"backward.py": (SOLUTIONS / "backward.py").read_text()
                             + "\ndef two_losses_grad(w, x):\n    g = (x * (x * w).exp()).detach()\n    return g, g\n"})
    paths = [str(SOLUTIONS), str(STUBS), str(wrong)]
    grade_many(paths, tmp_path / "local", Options(seed=11), workers=1)
    remote = grade_many(paths, tmp_path / "dask", Options(seed=11), workers=2, dask="local")
    assert len(remote.written) == 3
    for name in ("solutions", "exercises", "wrong"):
        a = json.loads((tmp_path / "local" / f"{name}.json").read_text())
        b = json.loads((tmp_path / "dask" / f"{name}.json").read_text())
        assert (a["score"], outcomes(a)) == (b["score"], outcomes(b))
    assert json.loads((tmp_path / "dask" / "wrong.json").read_text())["score"] < 100
