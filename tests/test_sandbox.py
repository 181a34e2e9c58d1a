"""The sandbox's backends: which one runs, that honest code scores the same in each, and what
each must still let a worker see.

CI runs this file and tests/test_hostile.py three times: as root (root-namespaces), as an
unprivileged user (user-namespaces) and as that user with user namespaces disabled (process),
each with AUTOGRAD_LAB_EXPECT_SANDBOX naming the backend it must get (see .ci/unprivileged).
"""

import os
import sys
import tempfile
from pathlib import Path

import pytest

from grader.host.runner import Engine, Options
from grader.protocol.limits import SandboxPlan
from grader.sandboxed import confine

from conftest import FULL_MARKS, SOLUTIONS, STUBS, SUBMISSIONS, make_submission, scores

BACKENDS = ("root-namespaces", "user-namespaces", "process")


@pytest.fixture(scope="module")
def process_engine():
    """The process sandbox, forced: what a machine without namespaces gets."""
    e = Engine(Options(seed=0, sandbox="process"))
    yield e
    e.close()


def test_the_backend_is_the_one_expected(engine):
    """A run meant for one backend that fell back to a weaker one would test the wrong sandbox."""
    expected = os.environ.get("AUTOGRAD_LAB_EXPECT_SANDBOX")
    backend = engine.launcher.plan.mode
    if expected:
        assert backend == expected, engine.launcher.plan.notes
    assert backend in BACKENDS or not sys.platform.startswith("linux")
    if backend == "process":  # the kernel's unprivileged confinement, where it has it (CI's has all of it)
        assert engine.launcher.plan.confined == confine.available()


def honest_corpus(base: Path) -> list[Path]:
    """The reference, the stubs, and the first learner mistake of each module (tests/submissions/wrong/)."""
    chosen: dict[str, Path] = {}
    for path in sorted((SUBMISSIONS / "wrong").glob("*.py")):
        module = next(line.split('"')[1] for line in path.read_text().splitlines() if line.startswith("MODULE = "))
        chosen.setdefault(module, path)
    subs = [SOLUTIONS, STUBS]
    for module, path in sorted(chosen.items()):
        source = (SOLUTIONS / module).read_text() + "\n\n" + path.read_text()
        subs.append(make_submission(base / path.stem, {module: source}))
    return subs


def test_honest_scores_are_the_same_in_every_backend(engine, process_engine, tmp_path):
    """Every test of honest code (right or wrong) has the same status and score with namespaces
    and in the process sandbox: isolation may refuse attacks, never cost an honest point. CI's
    three runs compare the two backends each machine offers: root's and the process sandbox as
    root, a user's and the process sandbox as that user."""
    def outcomes(report: dict) -> list[tuple]:
        return [(t["name"], t["status"], t["score"]) for e in report["exercises"] for t in e["tests"]]

    subs = honest_corpus(tmp_path)
    assert len(subs) == 8
    for sub in subs:
        strongest, process = engine.grade(sub), process_engine.grade(sub)
        assert process["sandbox"]["backend"] == "process"
        assert outcomes(strongest) == outcomes(process), sub.name
        assert strongest["score"] == {"solutions": FULL_MARKS, "exercises": 0}.get(sub.name, strongest["score"])


def test_landlock_rules_leave_the_secrets_out(tmp_path):
    """The process sandbox's Landlock rules grant what a namespaced worker would see, the folders
    that hold a secret split around it, and no link that leads out of a granted folder."""
    public = tmp_path / "package"
    (public / "cases" / "hidden").mkdir(parents=True)
    (public / "cases" / "public").mkdir()
    for name in ("cases/course.yaml", "cases/kit.py", "cases/hidden/test_x.py", "cases/public/test_y.py", "cli.py"):
        (public / name).write_text("x")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (public / "cases" / "escape").symlink_to(outside)
    (public / "cases" / "inside").symlink_to(public / "cases" / "public")
    plan = SandboxPlan(mode="process", readonly_paths=[str(public), "/usr"],
                       hidden_paths=[str(public / "cases" / "hidden"), str(public / "cases" / "course.yaml")])
    granted = {path for path, _ in confine.readable(plan)}
    assert {str(public / n) for n in ("cli.py", "cases/kit.py", "cases/public")} <= granted
    assert "/usr" in granted and "/proc" in granted and "/dev/null" in granted
    assert not [p for p in granted if p.startswith((str(public / "cases" / "hidden"), str(outside)))
                or p in (str(public), str(public / "cases"), str(public / "cases" / "course.yaml"))]

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

    monkeypatch.setattr(launcher, "make_launcher",
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
