"""Hostile and broken submissions: one test per technique, each with its outcome asserted.

The corpus and what each technique must come to are in tests/hostile_corpus.py; the sources in
tests/submissions/hostile/. Every test checks that the score file is schema-valid and lists
every exercise, that the attack's targets score 0 and every other exercise full marks (or,
for attacks that do not aim at the score, exactly the honest score), plus what is particular
to the technique. Slow techniques run on engines with small limits; anything that could hang
a broken grader runs under an alarm.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
import zipfile
from pathlib import Path

import pytest

import hostile_corpus as hc
from grader import catalog
from grader.host import results
from grader.host.runner import Engine, Options, grade_many
from grader.protocol.limits import Limits

from conftest import FULL_MARKS, SOLUTIONS, scores

ALL = [e.name for e in catalog.load().exercises]
HIDDEN_NAMES = sorted({t.name for e in catalog.load().exercises for t in e.tests if t.folder == "hidden"})
SOLUTION_LINES = sorted({line.strip() for p in SOLUTIONS.glob("*.py") for line in p.read_text().splitlines()
                         if len(line.strip()) >= 40} - {line.strip() for p in hc.STUBS.glob("*.py")
                                                         for line in p.read_text().splitlines()})


# ----------------------------------------------------------------------------- engines and helpers

def _engine(limits: Limits, **options):
    e = Engine(Options(seed=0, limits=limits, **options))
    return e


@pytest.fixture(scope="module")
def slow_engine():
    e = _engine(hc.LIMITS["slow"])
    yield e
    e.close()


@pytest.fixture(scope="module")
def tight_engine():
    e = _engine(hc.LIMITS["tight"])
    yield e
    e.close()


class Secrets:
    """Secrets planted before an engine starts: a token in the grader's environment, a file
    named with --hide, next to a canary file that is not hidden, in a folder on the grader's
    sys.path (so that the worker's file system shows that folder)."""

    def __init__(self):
        self.token = f"tok-{uuid.uuid4().hex}"
        self.marker = f"SECRET-MARKER-{uuid.uuid4().hex}"
        self.canary = f"SECRET-CANARY-{uuid.uuid4().hex}"
        self.folder = Path(tempfile.mkdtemp(prefix="autograd-lab-secrets-", dir="/var/tmp"))
        self.folder.chmod(0o755)
        self.secret_file = self.folder / "answers_secret.txt"
        self.secret_file.write_text(f"{self.marker}\n")
        (self.folder / "public_secret_canary.txt").write_text(f"{self.canary}\n")
        for path in self.folder.iterdir():
            path.chmod(0o644)

    def leaks(self, output: str) -> list[str]:
        found = [name for name in HIDDEN_NAMES if name in output]
        found += [what for what, value in (("marker", self.marker), ("token", self.token)) if value in output]
        found += [f"solutions: {line}" for line in SOLUTION_LINES if line in output]
        return found


@pytest.fixture(scope="module")
def secrets():
    s = Secrets()
    os.environ["AUTOGRAD_LAB_LMS_TOKEN"] = s.token
    sys.path.append(str(s.folder))
    yield s
    sys.path.remove(str(s.folder))
    del os.environ["AUTOGRAD_LAB_LMS_TOKEN"]
    shutil.rmtree(s.folder, ignore_errors=True)


@pytest.fixture(scope="module")
def secrets_engine(secrets):
    e = _engine(Limits(), extra_hidden=[str(secrets.secret_file)])
    yield e
    e.close()


@pytest.fixture(scope="module")
def process_engine(secrets):
    """The process sandbox: what a Docker container that denies unshare (Gradescope) gets."""
    e = _engine(Limits(), extra_hidden=[str(secrets.secret_file)], sandbox="process")
    yield e
    e.close()


def grade(engine: Engine, technique: str, tmp_path: Path, **subs) -> dict:
    report = engine.grade(hc.build(technique, tmp_path / technique, **subs), name=technique)
    assert results.validate(report) == []
    return report


def assert_held(report: dict, targets=None, technique: str | None = None) -> None:
    """Targets at 0, every other exercise full marks, every exercise listed, schema-valid."""
    if targets is None:
        targets = hc.targets(technique or report["submission"], report["sandbox"])
    problems = hc.held(report, tuple(targets), ALL)
    assert problems == [], "\n".join(problems)


def assert_next_graded(engine: Engine) -> None:
    """The run survives: the reference, graded right after, gets full marks."""
    report = engine.grade(SOLUTIONS, name="reference-after")
    assert results.validate(report) == [] and report["score"] == report["max_score"] == FULL_MARKS


def messages(report: dict, *exercises: str) -> str:
    return "\n".join(t["message"] for e in report["exercises"] if not exercises or e["name"] in exercises
                     for t in e["tests"])


def statuses(report: dict, exercise: str) -> set[str]:
    return {t["status"] for e in report["exercises"] if e["name"] == exercise for t in e["tests"]}


def comm_name() -> str:
    return "agl" + uuid.uuid4().hex[:10]  # at most 15 characters


@contextlib.contextmanager
def bounded(seconds: int):
    """Fail instead of hanging, should the grader hang (SIGALRM interrupts a blocking read)."""
    def alarm(signum, frame):
        raise TimeoutError(f"the grading run did not finish in {seconds} s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def namespaced(report: dict) -> bool:
    """Whether the report's worker had namespaces (root's or a user's), or the process sandbox."""
    return report["sandbox"]["backend"] in ("root-namespaces", "user-namespaces")


def max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_corpus_covers_every_technique():
    """Each technique has its folder, and each folder is a technique: at least 24, as the issue asks."""
    folders = {p.name for p in hc.CORPUS.iterdir() if p.is_dir()}
    assert folders == set(hc.BY_NAME)
    assert len(hc.TECHNIQUES) >= 24
    tests = {name[len("test_"):] for name in globals() if name.startswith("test_")}
    assert set(hc.BY_NAME) <= tests, sorted(set(hc.BY_NAME) - tests)


# ============================================================================= issue 2: in-process graders fooled

def test_always_equal(engine, tmp_path):
    report = grade(engine, "always_equal", tmp_path)
    assert_held(report)
    assert "AlwaysEqual object (not a plain torch.Tensor)" in messages(report, "hvp")


def test_tensor_subclass(engine, tmp_path):
    report = grade(engine, "tensor_subclass", tmp_path)
    assert_held(report)
    assert "Liar object (not a plain torch.Tensor)" in messages(report, "hvp")


def test_patch_torch_compare(engine, tmp_path):
    report = grade(engine, "patch_torch_compare", tmp_path)
    assert_held(report)
    assert "wrong shape" in messages(report, "hvp")


def test_worker_per_module_keeps_a_patched_torch_to_its_module(tmp_path):
    """With Limits(worker_per_module=True) each module gets a worker of its own: the same attack
    holds, the reference still scores 100, and the score file says how many workers ran."""
    e = _engine(Limits(worker_per_module=True), counterexamples=False)  # a search starts a fresh worker of its own
    try:
        report = grade(e, "patch_torch_compare", tmp_path)
        assert_held(report)
        assert report["sandbox"]["workers"] == "one per module (6 started)"
        assert e.grade(SOLUTIONS)["score"] == FULL_MARKS
    finally:
        e.close()


def test_patch_pytest(engine, tmp_path):
    report = grade(engine, "patch_pytest", tmp_path)
    assert_held(report)


def test_fake_score_file(tmp_path):
    """The score file is written by the trusted process after the worker is gone: the fake ones
    land in the worker's private /tmp and /work, or nowhere."""
    out = tmp_path / "out"
    name = f"fake-{uuid.uuid4().hex[:8]}"
    sub = hc.build("fake_score_file", tmp_path / name, OUT_DIR=out, NAME=name)
    summary = grade_many([str(sub), str(SOLUTIONS)], out, Options(seed=0))
    report = next(r for r in summary.reports if r["submission"] == name)
    assert_held(report, technique="fake_score_file")
    assert sorted(p.name for p in out.iterdir()) == sorted([f"{name}.json", "solutions.json", "summary.csv"])
    assert json.loads((out / f"{name}.json").read_text()) == report
    assert f"{name},{report['score']}," in (out / "summary.csv").read_text()
    assert "fake_score_file: wrote" in report["output"]  # it did write, in its own sandbox
    for path in (Path(f"/tmp/{name}.json"), Path.cwd() / f"{name}.json", Path("/autograder/results/results.json")):
        assert not path.exists()


# ============================================================================= the reporter itself

def test_patch_grader_encoder(engine, tmp_path):
    report = grade(engine, "patch_grader_encoder", tmp_path)
    assert_held(report)
    assert "changed the grader's code in the worker" in messages(report, *hc.GRAD)


def test_patch_grader_metadata(engine, tmp_path):
    """Before the reply path was sealed, this scored full marks on safe_add_."""
    report = grade(engine, "patch_grader_metadata", tmp_path)
    assert_held(report)
    assert scores(report)["safe_add_"] == 0
    assert "changed the grader's code in the worker (grader.sandboxed.worker.Encoder.tensor)" in messages(report, "safe_add_")


# ============================================================================= output

def test_print_flood(engine, tmp_path):
    report = grade(engine, "print_flood", tmp_path)
    assert_held(report)
    assert report["score"] == FULL_MARKS
    cap = hc.LIMITS["default"].output_kb * 1024
    assert len(report["output"]) <= cap + 200
    assert "more characters of output dropped" in report["output"]


# ============================================================================= secrets

def walked(output: str) -> dict[str, int]:
    line = next(line for line in output.splitlines() if line.startswith("WALKED"))
    return {key: int(value) for key, value in (item.split("=") for item in line.split()[1:])}


def test_read_secrets(secrets_engine, secrets, tmp_path):
    targets = [str(hc.ROOT / p) for p in ("grader/cases/hidden", "grader/cases/course.yaml", "solutions", "tests")]
    targets += [str(secrets.secret_file), str(secrets.folder / "public_secret_canary.txt")]
    report = grade(secrets_engine, "read_secrets", tmp_path, TARGETS=repr(targets), WALK_ROOT="/")
    assert_held(report)
    output = report["output"]
    assert secrets.leaks(output) == []
    assert secrets.canary in output  # it would have printed the marker had it been readable
    assert "dropped" not in output
    stats = walked(output)
    if namespaced(report):
        assert stats["files"] > 1000, stats  # it did walk its whole file system
    else:  # Landlock: not even / can be listed, but what a worker needs can be read
        assert "Landlock" in report["sandbox"]["filesystem"]
        assert stats["dirs"] < 50 and stats["read"] > 50, stats


def test_read_secrets_in_the_process_sandbox(process_engine, secrets, tmp_path):
    """Without namespaces (Docker denying unshare, as on Gradescope) the worker sees the
    machine's file system as a user of its own: the secret paths are unreadable to it. The
    walk is targeted: other checkouts of this project on a developer's machine are not the
    grader's to protect."""
    targets = [str(hc.ROOT / p) for p in ("grader/cases/hidden", "grader/cases/hidden/test_grad.py",
                                          "grader/cases/course.yaml", "solutions", "solutions/grad.py", "tests")]
    targets.append(str(secrets.secret_file))
    public = str(hc.ROOT / "grader/cases/public/test_grad.py")
    report = grade(process_engine, "read_secrets", tmp_path, TARGETS=repr(targets + [public]), WALK_ROOT="")
    assert_held(report, technique="read_secrets")
    assert report["sandbox"]["backend"] == "process"
    # As root the worker is a user of its own; otherwise only Landlock keeps the secrets from it.
    assert report["sandbox"]["user"].startswith("uid ") if os.geteuid() == 0 else \
        "Landlock" in report["sandbox"]["filesystem"]
    output = report["output"]
    assert secrets.leaks(output) == []
    for target in targets:
        assert f"DENIED {target}" in output
    # The public tests were readable, and printed (under Landlock the folders around a secret cannot be
    # listed, so a walk from the grader package finds nothing: the file is read by its path).
    assert f"READ {public}" in output and "test_hvp_small" in output


def test_read_secrets_from_an_installed_grader(tmp_path):
    """The grader installed outside /work and /tmp (as /autograder/source on Gradescope): its
    package is bound into the worker, the public tests with it, but not the hidden tests, the
    course file that names them, or the solutions next to it."""
    install = Path(tempfile.mkdtemp(prefix="autograd-lab-install-", dir="/var/tmp"))
    try:
        install.chmod(0o755)
        checkout = install / "checkout"
        shutil.copytree(hc.ROOT / "grader", checkout / "grader", ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copytree(SOLUTIONS, checkout / "solutions")
        shutil.copy(hc.ROOT / "pyproject.toml", checkout)
        targets = [str(checkout / p) for p in ("grader/cases/hidden", "grader/cases/course.yaml", "solutions")]
        public = str(checkout / "grader/cases/public/test_grad.py")
        sub = hc.build("read_secrets", tmp_path / "read_secrets", TARGETS=repr(targets + [public]), WALK_ROOT="/")
        code = ("import json, sys; from grader.host.runner import Engine, Options; e = Engine(Options()); "
                "r = e.grade(sys.argv[1], name='read_secrets'); e.close(); print(json.dumps(r))")
        done = subprocess.run([sys.executable, "-c", code, str(sub)], cwd="/", capture_output=True, text=True,
                              timeout=120, env={**os.environ, "PYTHONPATH": str(checkout)})
        assert done.returncode == 0, done.stderr[-2000:]
        report = json.loads(done.stdout.splitlines()[-1])
    finally:
        shutil.rmtree(install, ignore_errors=True)
    assert_held(report, technique="read_secrets")
    output = report["output"]
    assert f"DENIED {checkout}/grader/cases/hidden" in output  # an empty mount, mode 000; or not granted by Landlock
    if namespaced(report):
        assert f"READ {checkout}/grader/cases/course.yaml: 0 bytes" in output  # /dev/null bound over it
    else:
        assert f"DENIED {checkout}/grader/cases/course.yaml" in output
    assert [name for name in HIDDEN_NAMES if name in output] == []
    assert [line for line in SOLUTION_LINES if line in output] == []
    assert f"READ {public}" in output and "test_hvp_small" in output  # the public tests next to them


def test_env_secrets(secrets_engine, secrets, tmp_path):
    report = grade(secrets_engine, "env_secrets", tmp_path)
    assert_held(report)
    assert "ENV PATH=" in report["output"]
    assert secrets.token not in report["output"] and "AUTOGRAD_LAB_LMS_TOKEN" not in report["output"]


def test_env_secrets_in_the_process_sandbox(process_engine, secrets, tmp_path):
    """Without a PID namespace the grader's processes are visible, but their environ is not."""
    report = grade(process_engine, "env_secrets", tmp_path)
    assert_held(report, technique="env_secrets")
    assert f"PROCENV {os.getpid()}: PermissionError" in report["output"]
    assert secrets.token not in report["output"]


def test_network(engine, tmp_path):
    listeners = []
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(8)
    port = tcp.getsockname()[1]
    listeners.append(tcp)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", port))
    listeners.append(udp)
    with contextlib.suppress(OSError):
        tcp6 = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        tcp6.bind(("::1", port))
        tcp6.listen(8)
        listeners.append(tcp6)
    abstract = f"autograd-lab-test-{uuid.uuid4().hex}"
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    unix.bind("\0" + abstract)
    unix.listen(8)
    listeners.append(unix)
    try:
        report = grade(engine, "network", tmp_path, PORT=port, ABSTRACT=abstract)
        readable, _, _ = select.select(listeners, [], [], 0.2)
    finally:
        for s in listeners:
            s.close()
    assert readable == []  # no connection, no datagram arrived
    assert_held(report)
    assert report["sandbox"]["network"].startswith("none")
    tried = [line for line in report["output"].splitlines() if line.startswith("NET ")]
    assert len(tried) == 6 and not [line for line in tried if line.endswith(": connected")], tried
    # No route in an empty network namespace; no socket at all under the process sandbox's seccomp filter.
    refused = "OSError 101" if namespaced(report) else "PermissionError 13"
    assert f"NET tcp 127.0.0.1: {refused}" in tried and f"NET udp 127.0.0.1: {refused}" in tried


# ============================================================================= time

def test_infinite_loop_call(slow_engine, tmp_path):
    start = time.perf_counter()
    slow_engine.grade(SOLUTIONS)
    reference_s = time.perf_counter() - start
    start = time.perf_counter()
    report = grade(slow_engine, "infinite_loop_call", tmp_path)
    cost_s = time.perf_counter() - start - reference_s
    assert_held(report)
    assert statuses(report, "jacobian_rows") == {"timeout"}
    limits = hc.LIMITS["slow"]
    assert cost_s < limits.exercise_budget_s + 5, cost_s  # one exercise's budget, not 9 tests x 2 s
    assert_next_graded(slow_engine)


def test_infinite_loop_import(slow_engine, tmp_path):
    start = time.perf_counter()
    report = grade(slow_engine, "infinite_loop_import", tmp_path)
    assert_held(report)
    assert "did not finish in time" in messages(report, *hc.GRAPH)
    assert time.perf_counter() - start < hc.LIMITS["slow"].call_timeout_s + 6  # the import is tried once


def test_signal_handlers(tight_engine, tmp_path):
    report = grade(tight_engine, "signal_handlers", tmp_path)
    assert_held(report)
    assert statuses(report, "hvp") == {"timeout"}


def test_slowloris_reply(slow_engine, tmp_path):
    with bounded(90):
        report = grade(slow_engine, "slowloris_reply", tmp_path)
    assert_held(report)
    assert statuses(report, "hvp") == {"timeout"}
    assert_next_graded(slow_engine)


def test_budget_exhaustion(tight_engine, tmp_path):
    """No call passes the limit, yet the submission's budget ends the slow calls; what comes
    after is reported 'no time left', and the next submission gets a budget of its own."""
    limits = hc.LIMITS["tight"]
    start = time.perf_counter()
    with bounded(120):
        report = grade(tight_engine, "budget_exhaustion", tmp_path, SLEEP=0.3)
    elapsed = time.perf_counter() - start
    assert results.validate(report) == [] and [e["name"] for e in report["exercises"]] == ALL
    assert elapsed < limits.submission_budget_s + 8, elapsed
    out_of_time = [t for e in report["exercises"] for t in e["tests"] if "no time left" in t["message"]]
    assert out_of_time and all(t["status"] == "timeout" and t["score"] == 0 for t in out_of_time)
    assert report["score"] < 100
    # No points without work: an exercise whose general (hidden) tests never ran earns nothing for its
    # public tests alone, even where they passed before the budget ran out.
    general = {e.name: set(e.general) for e in catalog.load().exercises}
    for e in report["exercises"]:
        ran = [t for t in e["tests"] if t["name"].split("[")[0] in general[e["name"]]]
        if all("no time left" in t["message"] for t in ran):
            assert e["score"] == 0, e["name"]
    assert_next_graded(tight_engine)


# ============================================================================= exits, crashes, exceptions

def test_exit_at_import(engine, tmp_path):
    report = grade(engine, "exit_at_import", tmp_path)
    assert_held(report)
    assert "SystemExit" in messages(report, *hc.BACKWARD)
    assert "importing accumulation.py killed the worker" in messages(report, *hc.ACCUMULATION)


def test_exit_in_call(engine, tmp_path):
    report = grade(engine, "exit_in_call", tmp_path)
    assert_held(report)
    assert "exited with status 0" in messages(report, "hvp")
    assert "raised SystemExit" in messages(report, "jacobian_rows")
    assert_next_graded(engine)


def test_segfault_at_import(engine, tmp_path):
    report = grade(engine, "segfault_at_import", tmp_path)
    assert_held(report)
    assert "SIGSEGV" in messages(report, *hc.EXTENSIONS)


def test_segfault_in_call(engine, tmp_path):
    report = grade(engine, "segfault_in_call", tmp_path)
    assert_held(report)
    assert "SIGSEGV" in messages(report, "hvp")


def test_base_exceptions(engine, tmp_path):
    report = grade(engine, "base_exceptions", tmp_path)
    assert_held(report)
    for exercise, name in (("hvp", "KeyboardInterrupt"), ("jacobian_rows", "SystemExit"),
                           ("nth_derivative", "GeneratorExit"), ("partial_grads", "Unprintable")):
        assert name in messages(report, exercise)
    assert_next_graded(engine)


def test_recursion_bomb(engine, tmp_path):
    report = grade(engine, "recursion_bomb", tmp_path)
    assert_held(report)
    assert "RecursionError" in messages(report, "hvp")
    assert "SIGSEGV" in messages(report, "jacobian_rows")


# ============================================================================= memory and processes

def test_memory_bomb(slow_engine, tmp_path):
    limits = hc.LIMITS["slow"]
    report = grade(slow_engine, "memory_bomb", tmp_path, TOUCH_MB=3 * limits.memory_mb)
    assert_held(report)
    output = report["output"]
    assert "RLIMIT_AS stays" in output and "lifted" not in output
    assert "20 GB torch.empty refused" in output and "20 GB bytearray refused" in output
    got = max(int(line.split("got ")[1].split()[0]) for line in output.splitlines() if "memory_bomb: got" in line)
    assert got <= limits.memory_mb
    sandbox = report["sandbox"]
    assert sandbox["memory_limit_mb"] == limits.memory_mb
    assert 100 < sandbox["peak_memory_mb"] < limits.memory_mb + 600  # the worker's own ~250 MB, plus the limit


def test_fork_memory_bomb(slow_engine, tmp_path):
    report = grade(slow_engine, "fork_memory_bomb", tmp_path)
    assert_held(report)
    assert "more memory than at its start, together" in messages(report, "hvp")
    assert report["sandbox"]["peak_memory_mb"] < 6 * 384  # stopped before all children had their share


def _fork_bomb(engine, tmp_path):
    comm = comm_name()
    try:
        report = grade(engine, "fork_bomb", tmp_path, COMM=comm)
        assert_held(report, technique="fork_bomb")
        refused = [int(line.split("after ")[1].split(":")[0]) for line in report["output"].splitlines()
                   if "fork refused after" in line]
        limit = report["sandbox"]["processes_limit"]
        if any("process-count limit is shared" in note for note in report["sandbox"]["notes"]):
            # The process sandbox without a user id of its own caps the grader's user id at what it
            # ran at the worker's start plus the limit, as the report says; a thread of the grader
            # that ends meanwhile leaves its slot to the worker (CI once saw 64 of 64).
            assert refused and max(refused) <= limit
        else:
            assert refused and max(refused) < limit  # the worker itself counts
        assert "all 200 forks allowed" not in report["output"]
        time.sleep(0.2)
        assert hc.processes_named(comm) == []  # none outlived its worker
    finally:
        for pid in hc.processes_named(comm):
            os.kill(pid, signal.SIGKILL)


def test_fork_bomb(engine, tmp_path):
    _fork_bomb(engine, tmp_path)


def test_fork_bomb_in_the_process_sandbox(process_engine, tmp_path):
    _fork_bomb(process_engine, tmp_path)


@pytest.mark.parametrize("sandbox", [None, "process"])
def test_detached_child(tmp_path, sandbox):
    """A setsid + double fork child waits for its worker to end, then rewrites score files:
    it dies with the worker (PID namespace, or the subreaper without one), the file stays."""
    comm, name, out = comm_name(), f"detached-{uuid.uuid4().hex[:8]}", tmp_path / "out"
    sub = hc.build("detached_child", tmp_path / name, COMM=comm, OUT_DIR=out, NAME=name)
    try:
        summary = grade_many([str(sub)], out, Options(seed=0, sandbox=sandbox))
        written = (out / f"{name}.json").read_bytes()
        assert_held(json.loads(written), technique="detached_child")
        time.sleep(1.0)
        assert hc.processes_named(comm) == []
        assert (out / f"{name}.json").read_bytes() == written
        assert json.loads(written) == summary.reports[0]
    finally:
        for pid in hc.processes_named(comm):
            os.kill(pid, signal.SIGKILL)


def test_threads_left_running(engine, tmp_path):
    report = grade(engine, "threads_left_running", tmp_path)
    assert_held(report)
    assert report["score"] == FULL_MARKS


def test_forked_worker_copy(engine, tmp_path):
    report = grade(engine, "forked_worker_copy", tmp_path)
    assert_held(report)
    assert report["score"] == FULL_MARKS


def test_signal_the_grader(engine, tmp_path):
    report = grade(engine, "signal_the_grader", tmp_path)
    assert_held(report)
    assert_next_graded(engine)


def _kill_parent_in_call(engine, tmp_path):
    """Issue 18: a worker that kills its parent and its process group kills nothing but itself.
    In a PID namespace it is the namespace's init, which its own SIGKILL does not reach, and its
    parent is in another process group; without one it dies, and its parent lives to say how."""
    report = grade(engine, "kill_parent_in_call", tmp_path)
    assert_held(report)
    if namespaced(report):
        assert statuses(report, "intermediate_grads") == {"passed"}
    else:
        assert "killed by SIGKILL" in messages(report, "intermediate_grads")
        assert "kill_parent_in_call: PermissionError" in report["output"]  # the parent was out of reach
    assert_next_graded(engine)


def test_kill_parent_in_call(engine, tmp_path):
    _kill_parent_in_call(engine, tmp_path)


def test_kill_parent_in_call_in_the_process_sandbox(process_engine, tmp_path):
    _kill_parent_in_call(process_engine, tmp_path)


# ============================================================================= what comes back

def test_huge_return(engine, tmp_path):
    before = max_rss_mb()
    report = grade(engine, "huge_return", tmp_path)
    assert_held(report)
    assert "too large" in messages(report, "hvp")
    assert max_rss_mb() - before < 150  # the 400 MB reply was refused unread


def test_garbage_types(engine, tmp_path):
    report = grade(engine, "garbage_types", tmp_path)
    assert_held(report)
    text = messages(report)
    for kind in ("generator", "function", "module", "set"):
        assert f"a {kind} object" in text


def test_pickle_payload(engine, tmp_path):
    marker = tmp_path / "unpickled-and-ran"
    report = grade(engine, "pickle_payload", tmp_path, MARKER_FILE=marker)
    assert_held(report)
    assert not marker.exists()
    assert "a bytes object" in messages(report, "hvp") and "a Payload object" in messages(report, "jacobian_rows")


# ============================================================================= the interpreter's state

def test_sys_state(engine, tmp_path):
    report = grade(engine, "sys_state", tmp_path)
    assert_held(report)  # full marks, or (Landlock) grad.py's import refused its writes to /tmp
    if hc.targets("sys_state", report["sandbox"]):
        assert "Permission denied: '/tmp/planted'" in messages(report, *hc.GRAD)
    else:
        assert report["score"] == FULL_MARKS


def test_delete_own_files(engine, tmp_path):
    report = grade(engine, "delete_own_files", tmp_path)
    assert_held(report)
    assert report["score"] == FULL_MARKS


# ============================================================================= untrusted files

def test_planted_conftest(engine, tmp_path):
    folder = hc.build("planted_conftest", tmp_path / "planted_conftest")
    for submission in (folder, shutil.make_archive(str(tmp_path / "planted_conftest_zip"), "zip", folder)):
        report = engine.grade(submission, name="planted_conftest")
        assert_held(report)
        assert "PLANTED" not in report.get("output", "")


def test_planted_startup_files(engine, tmp_path):
    report = grade(engine, "planted_startup_files", tmp_path)
    assert_held(report)
    assert report["score"] == FULL_MARKS and "PLANTED" not in report.get("output", "")


def test_shadow_modules(engine, tmp_path):
    folder = hc.build("shadow_modules", tmp_path / "shadow_modules")
    for submission in (folder, shutil.make_archive(str(tmp_path / "shadow_modules_zip"), "zip", folder)):
        report = engine.grade(submission, name="shadow_modules")
        assert_held(report)
        assert report["score"] == FULL_MARKS and "SHADOW" not in report.get("output", "")


def test_invalid_utf8(engine, tmp_path):
    report = grade(engine, "invalid_utf8", tmp_path)
    assert_held(report)
    text = messages(report, *hc.GRAD)
    assert "grad.py could not be imported: SyntaxError" in text and "utf-8" in text.lower()
    assert any(e.startswith("grad.py could not be imported: SyntaxError") for e in report["submission_errors"])


def test_syntax_error(engine, tmp_path):
    report = grade(engine, "syntax_error", tmp_path)
    assert_held(report)
    assert "graph.py could not be imported: SyntaxError" in messages(report, *hc.GRAPH)
    assert "line" in messages(report, *hc.GRAPH)
    assert any(e.startswith("graph.py could not be imported: SyntaxError") for e in report["submission_errors"])


def test_symlinked_paths(engine, tmp_path):
    folder = hc.build("symlinked_paths", tmp_path / "symlinked_paths")
    linked_dir = engine.grade(folder / "linked_dir", name="symlinked_paths")
    assert_held(linked_dir)
    assert "exercises/grad.py lies under a symbolic link: rejected" in linked_dir["submission_errors"]
    linked_module = engine.grade(folder / "linked_module", name="symlinked_paths")
    assert_held(linked_module)
    assert "grad.py is a symbolic link: rejected" in linked_module["submission_errors"]


def _zip_report(engine, technique, tmp_path, **kwargs):
    archive = hc.SPECIAL[technique](tmp_path / "sub" / technique, **kwargs)
    report = engine.grade(archive, name=technique)
    assert_held(report)
    return report


def test_zip_traversal(engine, tmp_path):
    report = _zip_report(engine, "zip_traversal", tmp_path)
    errors = "\n".join(report["submission_errors"])
    assert errors.count("rejected") == 5 and "'..' in the path" in errors
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["sub", "zip_traversal.zip"]  # nothing extracted


def test_zip_absolute_path(engine, tmp_path):
    absolute = str(tmp_path / "outside" / "grad.py")
    report = _zip_report(engine, "zip_absolute_path", tmp_path, absolute=absolute)
    assert f"archive member '{absolute}' rejected: absolute path" in report["submission_errors"]
    assert not Path(absolute).exists()


def test_zip_symlink(engine, tmp_path):
    report = _zip_report(engine, "zip_symlink", tmp_path)
    assert "archive member 'grad.py' rejected: symbolic link" in report["submission_errors"]


def test_zip_device(engine, tmp_path):
    report = _zip_report(engine, "zip_device", tmp_path)
    assert sum("device, pipe or other special file" in e for e in report["submission_errors"]) == 2


def test_zip_bomb(engine, tmp_path):
    before = max_rss_mb()
    true_sizes = hc.zip_bomb(tmp_path / "bomb")
    forged = hc.zip_bomb(tmp_path / "forged", forge_sizes=True)
    assert zipfile.ZipFile(forged).getinfo("grad.py").file_size == 2048
    for archive, why in ((true_sizes, "larger than 1024 KiB"), (forged, "Bad CRC-32")):
        report = engine.grade(archive, name="zip_bomb")
        assert_held(report)
        assert why in "\n".join(report["submission_errors"])
    many = engine.grade(hc.zip_many_members(tmp_path / "many"), name="zip_bomb")
    assert_held(many, targets=ALL)
    assert "members (at most 2000)" in many["submission_errors"][0]
    assert max_rss_mb() - before < 100  # nothing was inflated past the limit


# ============================================================================= issue 17: the probes' torch

def _tampered(engine, technique: str, tmp_path, handle: str) -> dict:
    """Graded: held, and each target's every test an error that says 'tampered' (in both languages)
    and names the handle the submission changed."""
    report = grade(engine, technique, tmp_path)
    assert_held(report)
    for exercise in hc.BY_NAME[technique].targets:
        assert statuses(report, exercise) == {"error"}, exercise
        text = messages(report, exercise)
        assert "tampered: the submission changed what the grader relies on" in text and "篡改" in text, text[:300]
        assert handle in text, text[:300]
    return report


def test_fake_grad_in_forward(engine, tmp_path):
    """torch.autograd.grad swapped by forward: the probe's derivatives never go through it."""
    _tampered(engine, "fake_grad_in_forward", tmp_path, "(torch.autograd.grad)")


def test_fake_grad_in_backward(engine, tmp_path):
    """Swapped during the first derivative and put back by the fake: seen after the step it ran in."""
    _tampered(engine, "fake_grad_in_backward", tmp_path, "(torch.autograd.grad)")


def test_fake_grad_at_import(engine, tmp_path):
    report = _tampered(engine, "fake_grad_at_import", tmp_path, "(torch.autograd.grad)")
    assert any("importing extensions.py" in e for e in report["submission_errors"])


def test_fake_engine_in_forward(engine, tmp_path):
    _tampered(engine, "fake_engine_in_forward", tmp_path, "(torch.autograd._engine_run_backward)")


def test_fake_execution_engine_at_import(engine, tmp_path):
    _tampered(engine, "fake_execution_engine_at_import", tmp_path, "Variable._execution_engine")


def test_fake_execution_engine_in_backward(engine, tmp_path):
    """Left in place: the next exercises of extensions.py run with the real engine again."""
    _tampered(engine, "fake_execution_engine_in_backward", tmp_path, "Variable._execution_engine")
    assert_next_graded(engine)


def test_fake_function_apply_at_import(engine, tmp_path):
    report = grade(engine, "fake_function_apply_at_import", tmp_path)
    assert_held(report)
    assert "does not allow rewriting a function's __code__" in messages(report, *hc.EXTENSIONS)


def test_fake_autograd_backward_in_call(engine, tmp_path):
    _tampered(engine, "fake_autograd_backward_in_call", tmp_path, "(torch.autograd.backward)")


def test_fake_tensor_backward_in_call(engine, tmp_path):
    _tampered(engine, "fake_tensor_backward_in_call", tmp_path, "(torch.Tensor.backward)")


def test_fake_tensor_backward_at_import(engine, tmp_path):
    """The worker put torch's names back before each call already (3 of 5 for the mistake); changing
    one the grader relies on is tampering now."""
    _tampered(engine, "fake_tensor_backward_at_import", tmp_path, "(torch.Tensor.backward)")


def test_fake_tensor_backward_make_leaf(engine, tmp_path):
    """A right make_leaf that also swaps Tensor.backward scores 0: tampering costs the exercise."""
    _tampered(engine, "fake_tensor_backward_make_leaf", tmp_path, "(torch.Tensor.backward)")


def test_torch_function_mode(engine, tmp_path):
    _tampered(engine, "torch_function_mode", tmp_path, "(a torch function mode)")


def test_profiler_in_forward(engine, tmp_path):
    report = grade(engine, "profiler_in_forward", tmp_path)
    assert_held(report)
    assert "does not allow sys.setprofile" in messages(report, "SmoothAbs")


def test_finalizer_after_call(engine, tmp_path):
    """The finalizer runs at the next call, in student time: the reply reports the real version."""
    report = grade(engine, "finalizer_after_call", tmp_path)
    assert_held(report)
    assert "version counter did not increase" in messages(report, "safe_add_")


# ============================================================================= issue 29: out of the step's reach

def test_frame_back_versions(engine, tmp_path):
    """The versions recorded before the call are a tuple of ints: a frame walk cannot lower them."""
    report = grade(engine, "frame_back_versions", tmp_path)
    assert_held(report)
    assert "version counter did not increase" in messages(report, "safe_add_")


@pytest.mark.parametrize("mode,backend", [
    ("continue", "strongest"), ("raise", "strongest"), ("continue", "process"), ("raise", "process"),
    pytest.param("exit", "strongest", marks=pytest.mark.xfail(strict=True, reason="known gap (docs/security.md): a "
                 "forged reply followed by the worker's end reads as an honest reply, then a crash of the next request")),
    pytest.param("hang", "strongest", marks=pytest.mark.xfail(strict=True, reason="known gap (docs/security.md): a "
                 "forged reply followed by a hang reads as an honest reply, then a timeout of the next request")),
])
def test_forged_reply_frame(slow_engine, process_engine, mode, backend, tmp_path):
    """safe_add_ writes a reply of its own on the worker's socket; the worker's honest reply follows it. The second
    frame for one request is found by the next request's read or by the ping before the worker ends: safe_add_ is
    tampered and scores 0, and the request that read the stale frame is made again, so no other exercise loses."""
    engine = slow_engine if backend == "strongest" else process_engine
    report = grade(engine, "forged_reply_frame", tmp_path, MODE=mode)
    assert_held(report)
    assert "a second reply came for one request" in messages(report, "safe_add_")
    assert_next_graded(engine)


def _worker_state_held(engine, technique: str, tmp_path) -> None:
    report = grade(engine, technique, tmp_path)
    assert_held(report)
    text = messages(report, "safe_add_")
    # a shadow of a method the worker looks up only after the seal has looked is found by the seal: "tampered"
    assert "version counter did not increase" in text or "tamper" in text, text[:300]


@pytest.mark.parametrize("backend", ["strongest", "process"])
def test_worker_method_via_frames(engine, process_engine, backend, tmp_path):
    """The Worker, reached through f_back from the step's own frame, with a method shadowed on the instance:
    the worker reads nothing of the instance before the seal has looked (the method is a bound default)."""
    _worker_state_held(engine if backend == "strongest" else process_engine, "worker_method_via_frames", tmp_path)


@pytest.mark.parametrize("backend", ["strongest", "process"])
def test_worker_counts_via_frames(engine, process_engine, backend, tmp_path):
    """A fact of the Worker rebound to an object whose comparison would run the student's code after the step:
    the facts compared before the seal are plain ints in `Guarded`, taken before any student code."""
    _worker_state_held(engine if backend == "strongest" else process_engine, "worker_counts_via_frames", tmp_path)


def test_ctypes_probe_defaults(engine, tmp_path):
    """A probe's positional default rewritten in place through ctypes: ctypes is refused (and the seal
    compares __defaults__ item by item)."""
    report = grade(engine, "ctypes_probe_defaults", tmp_path)
    assert_held(report)
    text = messages(report, *hc.EXTENSIONS)
    assert "refused" in text and "ctypes" in text and "已拒绝" in text, text[:300]


def test_subinterpreter_ctypes(engine, tmp_path):
    """A subinterpreter has none of the worker's audit hook: creating one (and importing the modules that do)
    is refused, so ctypes is reached there neither."""
    report = grade(engine, "subinterpreter_ctypes", tmp_path)
    assert_held(report)
    text = messages(report, *hc.EXTENSIONS)
    assert "refused" in text and "_xxsubinterpreters" in text and "已拒绝" in text, text[:300]


def test_counter_answer(engine, tmp_path):
    """A dict subclass is judged as the plain dict of its items (a NamedTuple as its tuple)."""
    report = grade(engine, "counter_answer", tmp_path)
    assert_held(report)


def _refused(engine, technique: str, tmp_path, what: str) -> dict:
    """Graded: held, and each target's messages say what was refused, in both languages."""
    report = grade(engine, technique, tmp_path)
    assert_held(report)
    text = messages(report, *hc.targets(technique, report["sandbox"]))
    assert "refused" in text and "已拒绝" in text and what in text, text[:400]
    return report


def test_kernel_clone_override(engine, tmp_path):
    """torch.library cannot register a kernel in a worker: the refusal fails the module's import."""
    _refused(engine, "kernel_clone_override", tmp_path, "torch.library")


def test_tb_frame_probe_values(engine, tmp_path):
    """Frames stay reachable (logging needs them), but the probe's earlier results are bytes by then."""
    report = grade(engine, "tb_frame_probe_values", tmp_path)
    assert_held(report)
    assert "refused" not in messages(report, "SmoothAbs")


def test_gi_frame_probe_values(engine, tmp_path):
    _refused(engine, "gi_frame_probe_values", tmp_path, "gi_frame")


def test_current_frames_thread(engine, tmp_path):
    """Refused in the thread that asked: the step that started it fails with the refusal."""
    _refused(engine, "current_frames_thread", tmp_path, "sys._current_frames")


def test_ctypes_argument_slot(engine, tmp_path):
    _refused(engine, "ctypes_argument_slot", tmp_path, "ctypes.")


@pytest.mark.parametrize("sandbox", ["strongest", "process"])
def test_itimer_virtual_at_import(sandbox, engine, process_engine, tmp_path):
    """The timer is cancelled when the import ends, in every sandbox (the process one has no PID
    namespace to ignore SIGVTALRM)."""
    report = grade(process_engine if sandbox == "process" else engine, "itimer_virtual_at_import", tmp_path)
    assert_held(report)
    assert "setitimer" in messages(report, *hc.GRAD)


def test_reply_thread_race(engine, tmp_path):
    report = grade(engine, "reply_thread_race", tmp_path)
    assert_held(report)


def test_reply_is_built_without_student_threads(tmp_path):
    """While a thread of the submission is alive, every reply is built and sent by a copy of the worker
    made by os.fork(), which has no other thread (50 replies in one worker, each checked); with no
    such thread, in the worker itself."""
    import threading

    from grader.protocol import wire
    from grader.sandboxed import guard, worker

    w = worker.Worker(None, str(tmp_path))
    read, w.fd = os.pipe()
    unsealed = worker.Guarded(lambda snapshot: None, (), w.relied, guard.restore_namespaces, w.namespaces,
                              *w.facts())

    def built_in():
        return {"outcome": "returned", "pid": os.getpid(), "threads": threading.active_count()}, []

    assert w._reply(unsealed, None, None, built_in, 7)[0]["pid"] == os.getpid()  # no thread: here
    stop = threading.Event()
    spinner = threading.Thread(target=lambda: stop.wait(60), daemon=True)
    spinner.start()
    try:
        for request_id in range(50):
            assert w._reply(unsealed, None, None, built_in, request_id) is worker.SENT
            size = int.from_bytes(os.read(read, 4), "big")
            data = b""
            while len(data) < size:
                data += os.read(read, size - len(data))
            body, _ = wire.unpack(data)
            assert body["id"] == request_id and body["pid"] != os.getpid() and body["threads"] == 1, body
    finally:
        stop.set()
        spinner.join()
        os.close(read)
        os.close(w.fd)


@pytest.mark.parametrize("backend", ["strongest", "process"])
def test_finalizer_in_worker_time(engine, process_engine, backend, tmp_path):
    """What a step put into the request (reached through f_back) is let go of in the next call's first step,
    in student time: its finalizer's torch mode is gone before versions_before is recorded, or found."""
    report = grade(engine if backend == "strongest" else process_engine, "finalizer_in_worker_time", tmp_path)
    assert_held(report)
    assert "version counter did not increase" in messages(report, "safe_add_")


def test_a_mode_left_between_calls_is_tampering(tmp_path):
    """A torch mode pushed between two calls (by a finalizer of the student's the worker ran) is found before
    the call records anything: the call answers 'tampered', and the mode is gone."""
    import threading

    import torch
    from torch.overrides import TorchFunctionMode

    from grader.protocol import wire
    from grader.sandboxed import worker

    w = worker.Worker(None, str(tmp_path))
    seen = []

    def run():  # (not the main thread: the test process's own signal handlers stay as they are)
        torch._C._push_on_torch_function_stack(TorchFunctionMode())
        seen.append(wire.unpack(w.handle(wire.pack({"op": "call", "id": 3, "target": "m.f"}, []))[4:])[0])
        seen.append(torch._C._len_torch_function_stack())

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    body, depth = seen
    assert body["outcome"] == "tampered" and body["id"] == 3, body
    assert "torch function mode" in body["detail"] and "between two calls" in body["detail"], body
    assert depth == 0


def test_logging_and_warnings(engine, tmp_path):
    """Honest code that uses frames through the standard library keeps full marks."""
    report = grade(engine, "logging_and_warnings", tmp_path)
    assert_held(report)


def test_refusals_name_what_they_refuse():
    """The hook's refusals, called directly: each names its event, in both languages; frames of code
    other than the grader's stay available."""
    import gc
    import sys as system

    from grader.sandboxed import guard

    guard.REFUSALS.clear()
    for event, args in (("sys._current_frames", ()), ("gc.get_objects", (None,)), ("ctypes.cdata", (0,)),
                        ("ctypes.dlopen", ("libc.so.6",)), ("object.__getattr__", ((x for x in ()), "gi_frame"))):
        with pytest.raises(RuntimeError, match="refused"):
            guard._audit(event, args)
    assert len(guard.REFUSALS) == 5 and all("已拒绝" in m for m in guard.REFUSALS)
    guard.REFUSALS.clear()
    guard._audit("sys._getframe", (system._getframe(),))  # this test's own frame: not the grader's
    guard._audit("gc.collect", ())
    gc.collect()
    worker_frame = type("F", (), {"f_globals": {"__name__": "grader.sandboxed.worker"}})()
    with pytest.raises(RuntimeError, match="grader's own frames"):
        guard._audit("sys._getframe", (worker_frame,))
    guard.REFUSALS.clear()


def test_subclass_answers_are_read_through_their_base_type():
    """A NamedTuple and a Counter whose own methods lie are encoded as the plain tuple and dict of their items."""
    import collections
    from typing import NamedTuple

    from grader.sandboxed.worker import Encoder

    class Pair(NamedTuple):
        a: int
        b: int

        def __iter__(self):  # never called: tuple's own C slicing reads the items
            raise AssertionError("the subclass's code ran")

    class Lying(collections.Counter):
        def items(self):
            raise AssertionError("the subclass's code ran")

    assert Encoder(()).value(Pair(1, 2)) == {"$tuple": [1, 2]}
    assert Encoder(()).value(Lying({"Mul": 2})) == {"$dict": [["Mul", 2]]}


def test_settle_resets_timers():
    """An interval timer or an alarm armed in a step is cancelled and named when the step ends."""
    from grader.sandboxed import guard

    signal.setitimer(signal.ITIMER_VIRTUAL, 100.0)
    assert guard._timers() == "an interval timer (signal.setitimer)"
    assert signal.getitimer(signal.ITIMER_VIRTUAL) == (0.0, 0.0)
    signal.alarm(100)
    # (on Linux alarm() arms ITIMER_REAL: it is cancelled with the interval timers)
    assert guard._timers() in ("an interval timer (signal.setitimer)", "an alarm (signal.alarm)")
    assert signal.alarm(0) == 0
    assert guard._timers() is None
