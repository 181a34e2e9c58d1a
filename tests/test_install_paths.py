"""Honest code scores the same wherever the grader is installed: a venv in a folder only its owner can enter.

As root without namespaces (the process sandbox) the worker runs as a user of its own. Here a venv
lives in a fresh `mktemp -d` folder (mode 0700): the real one's packages, hard-linked, the editable
install still pointing at this checkout. Before the first worker the zygote must let that user in
(an ACL entry for the workers' group, traverse only) or refuse to grade; grading with imports that
fail inside the worker would cost the reference its docstring examples.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from grader.sandboxed import reach

from conftest import FULL_MARKS, ROOT, SOLUTIONS

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not sys.platform.startswith("linux"),
                                reason="the process sandbox's own worker user exists as root on Linux only")

GRADE = """
import json, sys
from grader.host.runner import Engine, Options
engine = Engine(Options(seed=0, sandbox="process"))
try:
    report = engine.grade(sys.argv[1])
finally:
    engine.close()
print(json.dumps(report))
"""


@pytest.fixture
def private_folder():
    """A folder only root can enter, as `mktemp -d` makes one."""
    folder = Path(tempfile.mkdtemp(prefix="autograd-lab-private-"))
    assert (folder.stat().st_mode & 0o777) == 0o700
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def private_venv(folder: Path) -> Path:
    """A venv in `folder` on this interpreter, holding this venv's packages (hard links): its python."""
    base = os.path.realpath(sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(folder / "venv")], check=True)
    python = folder / "venv" / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    site.rmdir()
    ours = sysconfig.get_paths()["purelib"]
    try:
        shutil.copytree(ours, site, copy_function=os.link, symlinks=True)
    except OSError:  # another file system: a copy
        shutil.rmtree(site, ignore_errors=True)
        shutil.copytree(ours, site, symlinks=True)
    return python


def test_the_workers_user_is_let_through_a_folder_only_its_owner_can_enter(private_folder):
    inside = private_folder / "lib"
    inside.mkdir()
    (inside / "module.py").write_text("x = 1\n")
    uid = 64999
    blocked = reach.unreachable([str(inside)], uid, uid, [reach.WORKER_GROUP])
    assert blocked == [(str(inside), str(private_folder), reach.ENTER)]
    explained = reach.explain(blocked, uid, "a test")
    notes = reach.open_to_workers(blocked)
    assert reach.unreachable([str(inside)], uid, uid, [reach.WORKER_GROUP]) == []
    assert reach.unreachable([str(inside)], uid, uid, []) != []  # the group alone, not every user
    assert (private_folder.stat().st_mode & 0o007) == 0  # others still cannot enter
    assert notes == [f"{private_folder} (mode 0700) opened to the workers' group {reach.WORKER_GROUP} for traverse "
                     f"(x) only, by an ACL entry (undo: setfacl -x g:{reach.WORKER_GROUP} {private_folder})"]
    assert f"{private_folder} (mode 0700, owner uid 0) cannot be entered" in explained
    assert f"chmod o+x {private_folder}" in explained


@pytest.mark.slow
def test_the_reference_scores_full_marks_from_a_venv_in_a_private_folder(private_folder):
    python = private_venv(private_folder)
    done = subprocess.run([str(python), "-c", GRADE, str(SOLUTIONS)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env={**os.environ, "PYTHONPATH": ""})
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["sandbox"]["backend"] == "process"
    failed = [(t["name"], t["message"][:200]) for e in report["exercises"] for t in e["tests"] if t["status"] != "passed"]
    assert failed == [] and report["score"] == FULL_MARKS
    notes = report["sandbox"]["notes"]
    assert any(note.startswith(f"{private_folder} (mode 0700) opened to the workers' group") for note in notes), notes
    assert not any("unavailable" in note for note in notes), notes  # Landlock and seccomp confine it as usual
