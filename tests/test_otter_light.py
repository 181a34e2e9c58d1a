"""The otter integration's parts that need no otter run: students without otter, and the test files."""

import ast
import subprocess
import sys

from grader import catalog
from grader.cli import main
from grader.exports.otter import question_file

from conftest import ROOT


def test_the_cli_does_not_import_otter():
    """Importing otter takes a second, and students do not install it."""
    code = "import sys, grader.cli; grader.cli.build_parser(); print(sorted(m for m in sys.modules if m.split('.')[0] == 'otter'))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_export_otter_without_otter_says_what_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "otter.generate", None)  # as if otter were not installed
    assert main(["export", "otter", "--out", str(tmp_path / "ag.zip")]) == 2
    assert "pip install 'autograd-lab[otter]'" in capsys.readouterr().err
    assert not (tmp_path / "ag.zip").exists()


def test_student_questions_hold_the_public_tests_only():
    hidden = {t.name for e in catalog.load().exercises for t in e.tests if t.folder == "hidden"}
    for exercise in catalog.load().exercises:
        source = question_file(exercise, student=True)
        ast.parse(source)
        assert not any(name in source for name in hidden), exercise.name
        assert source.count("@test_case(") == sum(t.folder == "public" for t in exercise.tests)
        assert "hidden=True" not in source


def test_instructor_questions_list_every_test_with_its_points():
    for exercise in catalog.load().exercises:
        source = question_file(exercise, student=False)
        ast.parse(source)
        for t in exercise.tests:
            assert f"@test_case(name={t.name!r}, points={t.points!r}, hidden={t.folder == 'hidden'})" in source
