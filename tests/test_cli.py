"""The command line as users run it: `python -m grader ...` in a subprocess."""

import json
import os
import subprocess
import sys

import pytest
import torch

from grader import catalog

from conftest import FULL_MARKS, ROOT, SOLUTIONS, STUBS

EXERCISES = len(catalog.load().exercises)


def run(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_check_on_stubs_fails_every_exercise_and_exits_1():
    result = run("check", str(STUBS))
    assert result.returncode == 1, result.stderr
    verdicts = result.stdout.count("TODO 未开始") + result.stdout.count("FAIL 未通过")
    assert verdicts in (EXERCISES + 1, 2 * EXERCISES + 1), "a line per exercise (the table, maybe again at the end), " \
        "and the repaired exercise's details"
    assert f"0 of {EXERCISES} exercises pass every public check" in result.stdout
    assert "checks:" in result.stdout and "NumPy" not in result.stdout + result.stderr


def test_check_on_solutions_passes_and_exits_0():
    result = run("check", str(SOLUTIONS))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("PASS 通过") == EXERCISES
    assert f"{EXERCISES} of {EXERCISES} exercises pass" in result.stdout
    assert f"{EXERCISES} 道题中有 {EXERCISES} 道通过" in result.stdout


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


def test_an_unknown_exercise_says_what_was_meant_before_torch_is_imported():
    code = ("import sys; from grader.cli import main; status = main(['check', 'exercises', '--exercise', 'hpv']); "
            "print(status, 'torch' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.stdout.split() == ["2", "False"], result.stderr
    assert "did you mean: hpv -> hvp" in result.stderr and "你是不是想写：hpv -> hvp" in result.stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a GPU")
def test_cuda_without_a_gpu_fails_clearly():
    result = run("check", str(SOLUTIONS), "--device", "cuda")
    assert result.returncode == 2 and "no CUDA GPU" in result.stderr


@pytest.mark.parametrize("command", ["grade", "validate"])
def test_jobs_counts_grading_processes_and_workers_is_its_old_spelling(command):
    from grader.cli import build_parser

    needs = ["x", "--out", "o"] if command == "grade" else []
    parser = build_parser()
    assert parser.parse_args([command, *needs, "--jobs", "3"]).jobs == 3
    assert parser.parse_args([command, *needs, "--workers", "4"]).jobs == 4


def test_grade_writes_score_files_and_exits_0(tmp_path):
    out = tmp_path / "out"
    result = run("grade", str(SOLUTIONS), str(STUBS), "--out", str(out), "--workers", "2", "--seed", "3")
    assert result.returncode == 0, result.stderr
    assert json.loads((out / "solutions.json").read_text())["score"] == FULL_MARKS
    assert json.loads((out / "exercises.json").read_text())["score"] == 0
    assert (out / "summary.csv").exists()
    assert "graded 2 submissions" in result.stdout and "mean score 50.00/100" in result.stdout


def test_grade_expands_a_folder_of_submissions(tmp_path):
    import shutil

    klass = tmp_path / "class"
    shutil.copytree(SOLUTIONS, klass / "alice")
    shutil.make_archive(str(klass / "bob"), "zip", STUBS)
    result = run("grade", str(klass), "--out", str(tmp_path / "out"), "--jobs", "1")
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "out" / "alice.json").read_text())["score"] == FULL_MARKS
    assert json.loads((tmp_path / "out" / "bob.json").read_text())["score"] == 0


def test_check_prints_no_numpy_warning_where_numpy_is_missing(tmp_path):
    """Students install torch, pytest and pyyaml only: without NumPy, torch warns at import; we do not show it."""
    code = ("import sys, runpy; sys.modules['numpy'] = None; sys.argv = ['grader', 'check', sys.argv[1], "
            "'--exercise', 'hvp']; runpy.run_module('grader', run_name='__main__')")
    result = subprocess.run([sys.executable, "-c", code, str(SOLUTIONS)], cwd=ROOT, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "NumPy" not in result.stdout + result.stderr


def test_check_table_fits_the_terminal_and_aligns_by_display_width():
    from grader.display import check_table, display_width

    report = {"exercises": [{"name": name, "module": "grad.py", "tests": [
        {"name": "test_x", "status": "failed", "visibility": "visible",
         "message": "这是另一个损失函数的梯度：请对所有元素取平均，并且不要在中间清零梯度" * 3, "hint": "提示 / hint " * 20},
        {"name": f"test_{name}_docstring", "status": "passed", "visibility": "visible", "message": ""}]}
        for name in ("partial_grads", "hvp")], "score": 0, "max_score": 2}
    for width in (64, 80, 123):
        lines = check_table(report, "exercises", width=width).splitlines()
        assert max(display_width(line) for line in lines) <= width, width
        rows = [line for line in lines if line.startswith("    ") and line.rstrip().endswith(("FAIL 未通过", "PASS 通过"))]
        assert len(rows) == 2 and len({display_width(r.rsplit("  ", 1)[0].rstrip()) > 0 for r in rows}) == 1
        assert len({r.index("FAIL") if "FAIL" in r else r.index("PASS") for r in rows}) == 1, rows


def test_check_honours_columns(tmp_path):
    result = subprocess.run([sys.executable, "-m", "grader", "check", str(STUBS), "--exercise", "hvp"], cwd=ROOT,
                            capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "64"})
    from grader.display import display_width

    assert max(display_width(line) for line in result.stdout.splitlines()) <= 64
