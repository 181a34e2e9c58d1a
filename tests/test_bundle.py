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


def test_bundle_holds_stubs_public_tests_and_engine(bundle_zip):
    names = set(zipfile.ZipFile(bundle_zip).namelist())
    for module in ("graph", "backward", "grad", "accumulation", "inplace", "extensions"):
        assert f"exercises/{module}.py" in names
        assert f"grader/cases/public/test_{module}.py" in names
    for needed in ("grader/sandboxed/worker.py", "grader/sandboxed/helpers.py", "grader/host/runner.py",
                   "grader/protocol/wire.py", "grader/cli.py", "grader/cases/kit.py", "grader/cases/points.yaml", "grader/schema/score.schema.json", "pyproject.toml", "README.md"):
        assert needed in names


def test_bundle_holds_no_solution_and_no_hidden_test(bundle_zip):
    zf = zipfile.ZipFile(bundle_zip)
    assert not [n for n in zf.namelist() if "hidden" in n or n.startswith(("solutions", "tests/", ".git"))]
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
            data = (SOLUTIONS / "grad.py").read_bytes() if name == "exercises/grad.py" else src.read(name)
            dst.writestr(name, data)
        dst.writestr("grader/cases/hidden/test_grad.py", b"")
    problems = "\n".join(bundle.check_bundle(leaked))
    assert "identical to a reference solution" in problems
    assert "forbidden path" in problems
    assert "does not raise NotImplementedError" in problems


@pytest.mark.slow
def test_grader_check_works_from_the_bundle_in_a_fresh_venv(tmp_path, bundle_zip):
    """Unpack, install into a new venv (torch, pytest, pyyaml come from this environment's
    site-packages through a .pth file; the grader itself is installed from the bundle), run it."""
    unpacked = tmp_path / "bundle"
    zipfile.ZipFile(bundle_zip).extractall(unpacked)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    python = bindir / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(site, "host-packages.pth"), "w") as f:
        f.write(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(unpacked)],
                   check=True, capture_output=True)
    where = subprocess.run([str(python), "-c", "import grader; print(grader.__file__)"], cwd=tmp_path,
                           capture_output=True, text=True, check=True).stdout
    assert str(venv) in where
    stubs = subprocess.run([str(bindir / "grader"), "check"], cwd=unpacked, capture_output=True, text=True)
    assert stubs.returncode == 1, stubs.stderr
    assert stubs.stdout.count("FAIL 未通过") == 19
    for module in SOLUTIONS.glob("*.py"):
        (unpacked / "exercises" / module.name).write_bytes(module.read_bytes())
    solved = subprocess.run([str(bindir / "grader"), "check"], cwd=unpacked, capture_output=True, text=True)
    assert solved.returncode == 0, solved.stdout + solved.stderr
    assert solved.stdout.count("PASS 通过") == 19
