"""The command line as users run it: `python -m grader ...` in a subprocess."""

import json
import subprocess
import sys

import pytest
import torch

from conftest import ROOT, SOLUTIONS, STUBS


def run(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_check_on_stubs_fails_every_exercise_and_exits_1():
    result = run("check", str(STUBS))
    assert result.returncode == 1, result.stderr
    assert result.stdout.count("FAIL 未通过") == 19
    assert "0 of 19 exercises pass their public tests" in result.stdout
    assert "hint" in result.stdout.lower() or "checks:" in result.stdout


def test_check_on_solutions_passes_and_exits_0():
    result = run("check", str(SOLUTIONS))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("PASS 通过") == 19
    assert "19 of 19 exercises pass" in result.stdout and "19 道题中有 19 道通过" in result.stdout


def test_check_one_exercise():
    result = run("check", str(STUBS), "--exercise", "hvp")
    assert result.returncode == 1
    assert "hvp" in result.stdout and "partial_grads" not in result.stdout


def test_check_defaults_to_exercises_folder():
    result = run("check", cwd=ROOT)
    assert result.returncode == 1 and "autograd-lab check: exercises" in result.stdout


@pytest.mark.parametrize("args, message", [
    (("check", "no/such/folder"), "does not exist"),
    (("check", str(STUBS), "--exercise", "nope"), "unknown exercise nope"),
    (("grade", "no/such.zip", "--out", "x"), "not found"),
])
def test_bad_input_exits_2_with_a_message(args, message, tmp_path):
    result = run(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a GPU")
def test_cuda_without_a_gpu_fails_clearly():
    result = run("check", str(SOLUTIONS), "--device", "cuda")
    assert result.returncode == 2 and "no CUDA GPU" in result.stderr


def test_grade_writes_score_files_and_exits_0(tmp_path):
    out = tmp_path / "out"
    result = run("grade", str(SOLUTIONS), str(STUBS), "--out", str(out), "--workers", "2", "--seed", "3")
    assert result.returncode == 0, result.stderr
    assert json.loads((out / "solutions.json").read_text())["score"] == 100
    assert json.loads((out / "exercises.json").read_text())["score"] == 0
    assert (out / "summary.csv").exists()
    assert "graded 2 submissions" in result.stdout and "mean score 50.00/100" in result.stdout


def test_grade_expands_a_folder_of_submissions(tmp_path):
    import shutil

    klass = tmp_path / "class"
    shutil.copytree(SOLUTIONS, klass / "alice")
    shutil.make_archive(str(klass / "bob"), "zip", STUBS)
    result = run("grade", str(klass), "--out", str(tmp_path / "out"), "--workers", "1")
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "out" / "alice.json").read_text())["score"] == 100
    assert json.loads((tmp_path / "out" / "bob.json").read_text())["score"] == 0
