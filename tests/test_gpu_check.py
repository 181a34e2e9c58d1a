"""`make gpu-check` (bench/gpu_check.py): without a GPU it says so and exits 2; its CPU-only dry run
(`--device cpu --against cpu`, a subset of the corpus) grades, compares and reports end to end, so
that the script a GPU machine runs cannot rot; and its expectations fail where they should."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import gpu_check  # noqa: E402

MAKE = shutil.which("make", path="/usr/local/bin:/usr/bin:/bin")


@pytest.mark.skipif(MAKE is None, reason="make is not installed")
def test_without_a_gpu_it_says_so_and_exits_2():
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # no GPU, even on a machine that has one
    result = subprocess.run([MAKE, "-s", "gpu-check", f"GPU_PYTHON={sys.executable}"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "no CUDA GPU is available" in result.stderr and "nothing was graded" in result.stderr
    assert "Traceback" not in result.stderr


DRY_RUN = ["reference", "make_leaf_copy_through_numpy", "hvp_sum_instead_of_v", "hostile-always_equal"]


@pytest.mark.slow
def test_cpu_dry_run(tmp_path):
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_check.py"), "--device", "cpu", "--against", "cpu",
                             "--workers", "1", "--repeats", "1", "--only", ",".join(DRY_RUN), "--out", str(tmp_path)],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    figures = json.loads((tmp_path / "gpu-check.json").read_text())
    assert figures["problems"] == [] and figures["differences"] == []
    assert figures["submissions"] == len(DRY_RUN)
    assert figures["counts"] == "1 reference, 1 mistake, 1 device mistake, 1 hostile"
    for role in ("device", "against"):
        timing = figures["timing"][role]
        assert timing["submissions"] == 3 and timing["s_per_submission"] > 0 and timing["reference_duration_s"] > 0
    cpu = figures["diagnostics"]["cpu"]
    assert cpu["error"] is None and cpu["workers_started"] == 1 and cpu["start_s"] > 0
    assert "null" in cpu["seen"]["dev"] and cpu["seen"]["nvidia"] == {} and cpu["sandbox"]["backend"]
    assert figures.get("cuda_start_s") is None and figures["machine"]["cpus"] == os.cpu_count()
    assert "| submissions graded on each device | 4 " in result.stdout
    assert "| `--device cpu`: seconds per submission |" in result.stdout


# ----------------------------------------------------------------------------- the expectations

def _report(scores: dict[str, float], named: dict[str, str] | None = None) -> dict:
    """A score file's shape with each exercise worth 2 points: `scores` lost, `named` mistakes on failed tests."""
    from grader import catalog

    exercises = []
    for e in catalog.load().exercises:
        score = scores.get(e.name, 2.0)
        test = {"name": "test_x", "status": "passed" if score == 2.0 else "failed", "message": ""}
        if e.name in (named or {}):
            test["mistake"] = {"id": named[e.name], "en": "", "zh": ""}
        exercises.append({"name": e.name, "score": score, "max_score": 2.0, "tests": [test]})
    return {"score": sum(x["score"] for x in exercises), "max_score": 2.0 * len(exercises), "exercises": exercises}


def test_a_device_mistake_must_be_caught_and_named_on_the_gpu_only():
    entry = gpu_check.Entry("make_leaf_copy_through_numpy", "device mistake", "-", exercise="make_leaf",
                            mistake="make_leaf.numpy_on_gpu")
    caught = _report({"make_leaf": 0.0}, {"make_leaf": "make_leaf.numpy_on_gpu"})
    graded = {"device": {entry.name: caught}, "against": {entry.name: _report({})}}
    differences, problems = gpu_check.compare([entry], "cuda", "cpu", graded, schema=False)
    assert problems == [] and [(d["exercise"], d["expected"], d["mistakes"]) for d in differences] == \
        [("make_leaf", True, ["make_leaf.numpy_on_gpu"])]

    unnamed = _report({"make_leaf": 0.0})
    _, problems = gpu_check.compare([entry], "cuda", "cpu", {"device": {entry.name: unnamed},
                                                             "against": {entry.name: _report({})}}, schema=False)
    assert problems == ["make_leaf_copy_through_numpy on cuda: no failed test of make_leaf names make_leaf.numpy_on_gpu"]

    missed = {"device": {entry.name: _report({})}, "against": {entry.name: _report({})}}
    _, problems = gpu_check.compare([entry], "cuda", "cpu", missed, schema=False)
    assert problems and "lost points on [], expected make_leaf only" in problems[0]

    on_cpu = {"device": {entry.name: caught}, "against": {entry.name: caught}}
    _, problems = gpu_check.compare([entry], "cpu", "cpu", on_cpu, schema=False)
    assert any("a cpu-safe mistake lost points" in p for p in problems)


def test_any_other_difference_between_the_devices_is_a_problem():
    entries = [gpu_check.Entry("reference", "reference", "-"),
               gpu_check.Entry("hostile-always_equal", "hostile", "-", targets=("hvp",))]
    graded = {"device": {"reference": _report({"hvp": 1.0}), "hostile-always_equal": _report({"hvp": 0.0})},
              "against": {"reference": _report({}), "hostile-always_equal": _report({"hvp": 0.0, "gd_fit": 1.0})}}
    differences, problems = gpu_check.compare(entries, "cuda", "cpu", graded, schema=False)
    assert [(d["submission"], d["exercise"], d["expected"]) for d in differences] == \
        [("reference", "hvp", False), ("hostile-always_equal", "gd_fit", False)]
    assert "reference: hvp scores 1.0 with --device cuda but 2.0 with --device cpu" in problems
    assert "reference on cuda: the reference lost points on ['hvp']" in problems
    assert any(p.startswith("hostile-always_equal on cpu: gd_fit (not a target) scored 1.0") for p in problems)
