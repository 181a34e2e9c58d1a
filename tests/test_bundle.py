"""The students' bundle: stubs, public tests and the engine; no solution and no hidden test."""

import os
import subprocess
import sys
import sysconfig
import zipfile

import pytest

from grader import catalog
from grader.exports import bundle

from conftest import ROOT, SOLUTIONS


@pytest.fixture(scope="module")
def bundle_zip(tmp_path_factory):
    out = tmp_path_factory.mktemp("bundle") / "student.zip"
    result = subprocess.run([sys.executable, "-m", "grader", "export", "student", "--out", str(out)],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    return out


TOP = bundle.TOP


def test_bundle_unzips_into_one_folder_with_stubs_public_tests_and_engine(bundle_zip):
    names = set(zipfile.ZipFile(bundle_zip).namelist())
    assert all(n.startswith(f"{TOP}/") for n in names)
    for module in catalog.load().modules:
        assert f"{TOP}/exercises/{module}" in names
        assert f"{TOP}/grader/cases/public/test_{module}" in names
    for needed in ("grader/sandboxed/worker.py", "grader/sandboxed/helpers.py", "grader/host/runner.py",
                   "grader/host/scoring.py", "grader/protocol/wire.py", "grader/protocol/messages.py", "grader/cli.py",
                   "grader/exports/submit.py", "grader/cases/kit.py", "grader/cases/course.yaml",
                   "grader/cases/public/helpers.py", "grader/cases/public/examples.json", "grader/schema/score.schema.json",
                   "pyproject.toml", "README.md"):
        assert f"{TOP}/{needed}" in names


def test_bundle_holds_only_what_students_need(bundle_zip):
    zf = zipfile.ZipFile(bundle_zip)
    names = zf.namelist()
    assert not [n for n in names if any(part in n for part in ("grader/lms/", "otter", "gradescope", "distributed"))]
    pyproject = zf.read(f"{TOP}/pyproject.toml").decode()
    assert "optional-dependencies" not in pyproject and "rich" not in pyproject and "otter" not in pyproject
    assert 'dependencies = ["torch>=2.1", "pytest>=7.4", "pyyaml>=6.0", "hypothesis>=6.100"]' in pyproject
    readme = zf.read(f"{TOP}/README.md").decode()
    for line in ("python3 -m venv .venv", "--index-url https://download.pytorch.org/whl/cpu", "pip install -e .",
                 "grader check", "grader check --seed", "grader submit"):
        assert line in readme, line


def test_bundle_holds_no_solution_and_no_hidden_test(bundle_zip):
    zf = zipfile.ZipFile(bundle_zip)
    assert not [n for n in zf.namelist() if "hidden" in n or n.removeprefix(f"{TOP}/").startswith(("solutions", "tests/", ".git"))]
    solution_sources = {p.read_bytes() for p in SOLUTIONS.glob("*.py")}
    hidden_names = {t.name for e in catalog.load().exercises for t in e.tests if t.folder == "hidden"}
    for name in zf.namelist():
        data = zf.read(name)
        assert data not in solution_sources, name
        assert not any(h.encode() in data for h in hidden_names), name
    assert bundle.check_bundle(bundle_zip) == []


def test_check_bundle_catches_a_leaked_solution(tmp_path, bundle_zip):
    leaked = tmp_path / "leaked.zip"
    with zipfile.ZipFile(bundle_zip) as src, zipfile.ZipFile(leaked, "w") as dst:
        for name in src.namelist():
            data = (SOLUTIONS / "grad.py").read_bytes() if name == f"{TOP}/exercises/grad.py" else src.read(name)
            dst.writestr(name, data)
        dst.writestr(f"{TOP}/grader/cases/hidden/test_grad.py", b"")
        dst.writestr(f"{TOP}/grader/lms/canvas.py", b"")
        dst.writestr("stray.py", b"")
    problems = "\n".join(bundle.check_bundle(leaked))
    assert "identical to a reference solution" in problems
    assert "forbidden path" in problems and "grader/lms/canvas.py" in problems
    assert "does not raise NotImplementedError" in problems
    assert "stray.py: outside the bundle's one folder" in problems


def readme_commands(readme: str) -> list[str]:
    """The indented command lines of the README, comments dropped."""
    return [line.strip().split("  #")[0].strip() for line in readme.splitlines()
            if line.startswith("    ") and line.strip() and not line.strip().startswith("#")]


@pytest.mark.slow
def test_the_readme_lines_work_in_a_fresh_venv(tmp_path, bundle_zip):
    """Unzip, then the README's lines as a student types them: a venv, torch, `pip install -e .`, `grader
    check`, `grader submit`. The one line changed is torch's: this machine reaches no download server, so
    the venv gets this environment's torch through a .pth file instead."""
    zipfile.ZipFile(bundle_zip).extractall(tmp_path)
    folder = tmp_path / TOP
    commands = readme_commands((folder / "README.md").read_text())
    assert commands[:3] == ["python3 -m venv .venv && . .venv/bin/activate",
                            "pip install torch --index-url https://download.pytorch.org/whl/cpu", "pip install -e ."]
    subprocess.run([sys.executable, "-m", "venv", ".venv"], cwd=folder, check=True)
    bindir = folder / ".venv" / ("Scripts" if os.name == "nt" else "bin")
    python = bindir / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(site, "host-packages.pth"), "w") as f:
        f.write(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "-e", "."],
                   cwd=folder, check=True, capture_output=True)
    where = subprocess.run([str(python), "-c", "import grader; print(grader.__file__)"], cwd=tmp_path,
                           capture_output=True, text=True, check=True).stdout
    assert str(folder / "grader") in where
    stubs = subprocess.run([str(bindir / "grader"), "check"], cwd=folder, capture_output=True, text=True)
    assert stubs.returncode == 1, stubs.stderr
    assert f"0 of {len(catalog.load().exercises)} exercises pass every public check" in stubs.stdout \
        and "Warning" not in stubs.stderr
    handed = subprocess.run([str(bindir / "grader"), "submit"], cwd=folder, capture_output=True, text=True)
    assert handed.returncode == 0 and "still raise NotImplementedError" in handed.stderr
    for module in SOLUTIONS.glob("*.py"):
        (folder / "exercises" / module.name).write_bytes(module.read_bytes())
    solved = subprocess.run([str(bindir / "grader"), "check"], cwd=folder, capture_output=True, text=True)
    assert solved.returncode == 0, solved.stdout + solved.stderr
    assert solved.stdout.count("PASS 通过") == len(catalog.load().exercises)
    handed = subprocess.run([str(bindir / "grader"), "submit"], cwd=folder, capture_output=True, text=True)
    assert handed.returncode == 0 and "NotImplementedError" not in handed.stderr, handed.stderr
    assert (folder / "submission.zip").is_file()
    lms = subprocess.run([str(bindir / "grader"), "export", "canvas", "--help"], cwd=folder, capture_output=True, text=True)
    assert lms.returncode == 2, "the instructors' commands are not in the student's grader"
