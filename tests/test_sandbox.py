"""The worker's private file system: what it must still see."""

import os
import sys
import tempfile
from pathlib import Path

import pytest

from grader.host.runner import Engine, Options

from conftest import FULL_MARKS, SOLUTIONS, make_submission, scores

READS_CANARY = '''

_honest_hvp = hvp


def hvp(f, x, v):
    with open({path!r}) as canary:  # a file in a folder the grader's Python uses
        assert canary.read() == "visible"
    return _honest_hvp(f, x, v)
'''


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="namespaces are Linux only")
def test_a_python_folder_under_tmp_is_not_covered_by_the_fresh_tmp(tmp_path):
    """The worker gets a fresh, empty /tmp; a folder of the grader's sys.path that lives under /tmp
    (a CI checkout's venv, say) must still be visible in it, or lazy imports fail."""
    folder = Path(tempfile.mkdtemp(prefix="autograd-lab-site-", dir="/tmp"))
    canary = folder / "canary.txt"
    canary.write_text("visible")
    os.chmod(folder, 0o755)
    os.chmod(canary, 0o644)
    sys.path.append(str(folder))
    try:
        engine = Engine(Options())
        try:
            source = (SOLUTIONS / "grad.py").read_text() + READS_CANARY.format(path=str(canary))
            report = engine.grade(make_submission(tmp_path / "sub", {"grad.py": source}))
        finally:
            engine.close()
    finally:
        sys.path.remove(str(folder))
    assert scores(report)["hvp"] == 5, [t["message"] for e in report["exercises"] if e["name"] == "hvp"
                                        for t in e["tests"]]


def test_the_spawn_fallback_grades_like_the_zygote(monkeypatch, tmp_path):
    """Where there is no fork (Windows) or fork is unsafe (macOS), workers are spawned processes:
    slower, not isolated beyond the process boundary, but graded with the same protocol."""
    from grader.host import launcher, runner

    monkeypatch.setattr(runner, "make_launcher",
                        lambda limits, course, device="cpu", **kw: launcher.SpawnLauncher(limits, course, device=device))
    engine = runner.Engine(Options())
    try:
        broken = (SOLUTIONS / "grad.py").read_text() + "\ndef hvp(f, x, v):\n    return x * 0\n"
        reference = engine.grade(SOLUTIONS)
        wrong = engine.grade(make_submission(tmp_path / "wrong", {"grad.py": broken}))
    finally:
        engine.close()
    assert reference["score"] == FULL_MARKS and reference["sandbox"]["backend"] == "spawn"
    assert {name for name, score in scores(wrong).items() if score < 5 + 5 * (name == "SmoothAbs")} == {"hvp"}
