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


def test_the_otter_check_readme_names_an_exercise_of_the_course_it_was_made_for(tmp_path):
    """OTTER-CHECK.md's examples come from the course: a course without its first exercise names its next one."""
    import zipfile

    import course_copy

    course_file = course_copy.copy_course(tmp_path / "course")
    gone, kept = catalog.load().exercises[0].name, catalog.load().exercises[1].name
    course_copy.remove_exercise(course_file, gone)
    out = tmp_path / "otter-check.zip"
    done = subprocess.run([sys.executable, "-m", "grader", "export", "otter-check", "--course", str(course_file),
                           "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    readme = zipfile.ZipFile(out).read("OTTER-CHECK.md").decode()
    assert f"-q {kept} " in readme and f'grader.check("{kept}")' in readme
    assert f"{gone}" not in readme and "hvp" not in readme.replace(kept, "")
