"""A grading run's lifetime: nothing outlives `grader grade`, and the machine's faults stop it cleanly.

Each test runs the real command in a process of its own, as an instructor would. A run's
processes are found by two marks: the grading process and its pool processes (and
multiprocessing's resource tracker) inherit an environment variable, and the zygote, the
workers and what a submission forks carry the run's TMPDIR, a fresh folder per test, in their
command line (the zygote's names it). The run's scratch folders go to that TMPDIR too. Faults of the machine are real where this machine allows it (as root: a
small tmpfs, a read-only mount, in a mount namespace of the test's own) and injected at the write
otherwise.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from grader.host import lifecycle, results, runner

from conftest import SOLUTIONS, STUBS, make_submission, venv_tool

MARK = "AUTOGRAD_LAB_TEST_RUN"
GONE_WITHIN_S = 5.0  # "within a few seconds" of the grading process's death


def grader_command() -> list[str]:
    tool = venv_tool("grader")
    if tool is None:
        pytest.skip("the grader command is not installed in this venv")
    return [str(tool)]


class Run:
    """`grader grade ARGS` started in a session of its own, with its own TMPDIR and mark. `prefix`
    runs it through another command; `grade` replaces the `grader grade` command itself."""

    def __init__(self, tmp_path: Path, args: list[str], prefix: list[str] | None = None, name: str = "run",
                 grade: list[str] | None = None):
        self.scratch = tmp_path / f"{name}-tmp"
        self.scratch.mkdir()
        self.token = uuid.uuid4().hex
        self.log = tmp_path / f"{name}.log"
        env = {**os.environ, "TMPDIR": str(self.scratch), MARK: self.token, "COLUMNS": "200"}
        with open(self.log, "w") as log:
            command = [*(prefix or []), *(grade or [*grader_command(), "grade"]), *args]
            self.process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True, preexec_fn=default_stop_signals)

    def wait(self, timeout: float = 300) -> int:
        return self.process.wait(timeout=timeout)

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def default_stop_signals() -> None:
    """As a terminal's foreground job: the stop signals act, even where the tests run with them ignored."""
    for signum in lifecycle.STOP_SIGNALS:
        signal.signal(signum, signal.SIG_DFL)


def score_files(out: Path) -> list[Path]:
    return sorted(out.glob("*.json")) if out.is_dir() else []


def wait_for_score_files(out: Path, count: int, run: Run, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while len(score_files(out)) < count:
        assert run.process.poll() is None, f"the run ended early ({run.process.returncode}):\n{run.output()}"
        assert time.monotonic() < deadline, f"no {count} score files after {timeout} s:\n{run.output()}"
        time.sleep(0.05)


def assert_complete_score_files(out: Path) -> list[dict]:
    """Every score file in `out` is whole and valid, and no temporary file is left beside them."""
    reports = []
    for path in score_files(out):
        report = json.loads(path.read_text(encoding="utf-8"))
        assert results.validate(report) == [], path
        assert len(report["exercises"]) == 19
        reports.append(report)
    assert [p.name for p in out.iterdir() if p.name.endswith(".tmp")] == []
    return reports


# ----------------------------------------------------------------------------- the run's processes

def _stat(pid: str) -> tuple[str, int, int] | None:
    """(state, parent pid, start time) of a process, None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return fields[0], int(fields[1]), int(fields[19])


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def run_processes(run: Run) -> dict[int, int]:
    """pid -> start time of every live (not zombie) process that carries the run's mark."""
    token, scratch = run.token.encode(), str(run.scratch).encode()
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        stat = _stat(pid)
        if stat is None or stat[0] == "Z":
            continue
        if token in _read(f"/proc/{pid}/environ") or scratch in _read(f"/proc/{pid}/cmdline"):
            found[int(pid)] = stat[2]
    return found


def descendants(root: int) -> dict[int, int]:
    """pid -> start time of every process below `root`, now."""
    parents, starts = {}, {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        stat = _stat(pid)
        if stat is not None:
            parents[int(pid)], starts[int(pid)] = stat[1], stat[2]
    below, frontier = {}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in below:
                below[pid] = starts[pid]
                frontier.append(pid)
    return below


def alive(processes: dict[int, int]) -> list[int]:
    """The processes still running (a zombie has ended; a reused pid is another process)."""
    out = []
    for pid, start in processes.items():
        stat = _stat(str(pid))
        if stat is not None and stat[0] != "Z" and stat[2] == start:
            out.append(pid)
    return out


def wait_until_gone(run: Run, before: dict[int, int], timeout: float) -> tuple[float, list[int]]:
    """Seconds until no process of the run is left (those seen before, and any carrying its mark)."""
    start = time.monotonic()
    while True:
        left = alive(before) + [p for p in run_processes(run) if p not in before]
        if not left or time.monotonic() - start > timeout:
            return time.monotonic() - start, left
        time.sleep(0.05)


def describe(pids: list[int]) -> str:
    return "\n".join(f"{pid}: " + _read(f"/proc/{pid}/cmdline").replace(b"\0", b" ")[:150].decode(errors="replace")
                     for pid in pids)


# ----------------------------------------------------------------------------- submissions

# At import: a detached grandchild (setsid, double fork) that sleeps, then a loop that never ends.
BUSY = """

import os as _os
if _os.fork() == 0:
    _os.setsid()
    if _os.fork() == 0:
        import time as _time
        _time.sleep(3600)
    _os._exit(0)
_os.wait()
while True:
    pass
"""


def make_class(folder: Path, names: list[str], busy: str | None = None) -> Path:
    for name in names:
        overrides = {"graph.py": (SOLUTIONS / "graph.py").read_text() + BUSY} if name == busy else None
        make_submission(folder / name, overrides)
    return folder


# ----------------------------------------------------------------------------- nothing outlives the grader

def test_sigkill_mid_run_leaves_no_process_no_sandbox_folder_and_no_temporary_file(tmp_path):
    """SIGKILL to `grader grade` while one worker spins in a submission's import (with a detached
    grandchild of its own) and the other pool process grades: within a few seconds no process of
    the run is left, its TMPDIR is empty, and --out holds whole score files only."""
    subs = make_class(tmp_path / "subs", ["a-busy", "b-ref", "c-ref", "d-ref", "e-ref"], busy="a-busy")
    out = tmp_path / "out"
    run = Run(tmp_path, [str(subs), "--out", str(out), "--workers", "2", "--timeout", "120"])
    try:
        wait_for_score_files(out, 1, run)
        before = {**run_processes(run), **descendants(run.process.pid)}
        assert len(before) >= 8, describe(list(before))  # resource tracker, 2 pool processes, 2 zygotes, workers...
        run.process.send_signal(signal.SIGKILL)
        assert run.wait(30) == -signal.SIGKILL
        seconds, left = wait_until_gone(run, before, timeout=30)
    finally:
        for pid in run_processes(run):
            os.kill(pid, signal.SIGKILL)  # never leave the machine littered, whatever the outcome
    print(f"{len(before)} processes of the run gone {seconds:.2f} s after SIGKILL")
    assert left == [], "left running:\n" + describe(left)
    assert seconds < GONE_WITHIN_S
    assert list(run.scratch.iterdir()) == []
    assert {r["submission"] for r in assert_complete_score_files(out)} <= {"b-ref", "c-ref", "d-ref", "e-ref"}


@pytest.mark.parametrize("how", ["SIGINT to the process group, as Ctrl-C in a terminal", "SIGTERM"])
def test_a_stop_signal_ends_the_run_cleanly_and_resume_finishes_it(tmp_path, how):
    subs = make_class(tmp_path / "subs", [f"s{i}" for i in range(6)])
    out = tmp_path / "out"
    args = [str(subs), "--out", str(out), "--workers", "2"]
    run = Run(tmp_path, args)
    try:
        wait_for_score_files(out, 1, run)
        before = {**run_processes(run), **descendants(run.process.pid)}
        if how == "SIGTERM":
            run.process.send_signal(signal.SIGTERM)
        else:
            os.killpg(run.process.pid, signal.SIGINT)
        code = run.wait(60)
        # The run waits for its pool processes and their zygotes; multiprocessing's resource
        # tracker ends when the run's end closes its pipe.
        _, left = wait_until_gone(run, before, timeout=GONE_WITHIN_S)
    finally:
        for pid in run_processes(run):
            os.kill(pid, signal.SIGKILL)
    signum = signal.SIGTERM if how == "SIGTERM" else signal.SIGINT
    output = run.output()
    assert code == 128 + signum, output
    assert left == [], "left running:\n" + describe(left)
    assert list(run.scratch.iterdir()) == []
    written = assert_complete_score_files(out)
    assert f"grader: stopped: interrupted by {signal.Signals(signum).name}" in output
    assert f"score files: {len(written)} written by this run; each is complete" in output
    assert f"no score file yet: {6 - len(written)} of 6 submissions" in output
    assert f"to go on, run: grader grade {subs} --out {out} --workers 2 --resume" in output
    assert "Traceback" not in output
    assert len(written) < 6

    if how == "SIGTERM":  # and the line it printed finishes the job, keeping what was written
        kept = {p.name: p.stat().st_mtime_ns for p in score_files(out)}
        (out / ".s5.json.k3j_9x2a.tmp").write_text('{"half": ')  # as a SIGKILL in the middle of a write leaves
        again = Run(tmp_path, [*args, "--resume"], name="resume")
        assert again.wait() == 0, again.output()
        assert f"({len(written)} unchanged, kept from an earlier run)" in again.output()
        assert len(assert_complete_score_files(out)) == 6
        assert {p.name: p.stat().st_mtime_ns for p in score_files(out) if p.name in kept} == kept


# ----------------------------------------------------------------------------- the machine's faults

def in_mount_namespace(script: str) -> list[str]:
    """A prefix that runs the command inside `script`'s mounts, in a mount namespace of its own (root only)."""
    return ["unshare", "--mount", "--propagation", "private", "sh", "-ec", script + '\nexec "$@"', "sh"]


def test_an_out_that_is_a_file_is_refused_before_anything_is_graded(tmp_path):
    subs = make_class(tmp_path / "subs", ["s0"])
    target = tmp_path / "scores.json"
    target.write_text("not a folder")
    run = Run(tmp_path, [str(subs), "--out", str(target)])
    assert run.wait() == 2
    assert run.output().strip().splitlines()[-1] == (
        f"grader: error: --out {target} is a file, not a folder: nothing was graded or written. "
        "Give a folder for the score files (it is made if it does not exist).")
    assert target.read_text() == "not a folder"


def test_a_read_only_out_is_refused_and_debug_adds_the_traceback(tmp_path):
    subs = make_class(tmp_path / "subs", ["s0"])
    out = tmp_path / "out"
    out.mkdir()
    if os.geteuid() == 0:  # root writes through permissions: a read-only mount it is
        prefix, what = in_mount_namespace(f"mount -t tmpfs -o ro,size=1m tmpfs {out}"), "the file system is read-only"
        remedy = "mount it writable"
    else:
        out.chmod(0o555)
        prefix, what, remedy = None, "permission denied", "make the folder writable for you"
    try:
        run = Run(tmp_path, [str(subs), "--out", str(out)], prefix=prefix)
        assert run.wait() == 2
        debug = Run(tmp_path, [str(subs), "--out", str(out), "--debug"], prefix=prefix, name="debug")
        assert debug.wait() == 2
    finally:
        out.chmod(0o755)
    message = (f"grader: error: cannot write in --out {out} ({what}): nothing was graded or written. "
               f"To go on: {remedy}, or choose another --out.")
    assert run.output().strip().splitlines()[-1] == message
    assert "Traceback" not in run.output()
    assert "Traceback (most recent call last)" in debug.output() and message in debug.output()
    assert list(out.iterdir()) == []


ENOSPC_AT_SECOND_FSYNC = """
import errno, os, sys
from grader import cli
real, calls = os.fsync, []
def fsync(fd):
    calls.append(fd)
    if len(calls) > 1:  # the first score file is written; the disk is full from then on
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    return real(fd)
os.fsync = fsync
sys.exit(cli.main(["grade", *sys.argv[1:]]))
"""


def test_a_full_disk_stops_the_run_with_whole_score_files_and_resume_finishes(tmp_path):
    """A full disk mid-run: the run stops at the score file that did not fit, says how many were
    written and how to go on, and leaves no partial file. As root the disk is a real 200 KiB tmpfs
    (a score file is 45 to 170 KB), and --resume finishes once it is bigger; otherwise ENOSPC
    comes from the second score file's fsync."""
    subs = make_class(tmp_path / "subs", ["a-ref", "c-ref"])
    make_submission(subs / "b-stubs", base=STUBS)
    out, kept = tmp_path / "out", tmp_path / "kept"
    args = [str(subs), "--out", str(out), "--workers", "1"]
    if os.geteuid() == 0:
        # Inside the namespace: grade into the small tmpfs, copy what it holds out, make it bigger, resume.
        grader = " ".join(grader_command())
        script = (f"mkdir -p {out} {kept}/full {kept}/resumed\n"
                  f"mount -t tmpfs -o size=200k tmpfs {out}\n"
                  f"set +e; {grader} grade {' '.join(args)}; echo $? > {kept}/full.rc; set -e\n"
                  f"cp -a {out}/. {kept}/full/\n"
                  f"mount -o remount,size=64m {out}\n"
                  f"{grader} grade {' '.join(args)} --resume > {kept}/resumed.log 2>&1 || true\n"
                  f"cp -a {out}/. {kept}/resumed/")
        run = Run(tmp_path, [], grade=["unshare", "--mount", "--propagation", "private", "sh", "-ec", script])
        assert run.wait() == 0, run.output()
        code, full = int((kept / "full.rc").read_text()), kept / "full"
        csv_line = "summary.csv: written, one row per score file (1)"  # a few hundred bytes still fit
    else:
        run = Run(tmp_path, args, grade=[sys.executable, "-c", ENOSPC_AT_SECOND_FSYNC])
        code, full = run.wait(), out
        csv_line = f"summary.csv: cannot write summary.csv in {out} (no space left on the device that holds it)"
    output = run.output()
    assert code == 3, output
    assert [r["submission"] for r in assert_complete_score_files(full)] == ["a-ref"]
    assert f"""grader: stopped: cannot write b-stubs.json in {out} (no space left on the device that holds it)
  score files: 1 written by this run; each is complete (a score file is written whole or not at all)
  {csv_line}
  no score file yet: 2 of 3 submissions
  to go on: free some space on that device, then run: grader grade {' '.join(args)} --resume""" in output
    assert "Traceback" not in output
    if os.geteuid() == 0:
        resumed = kept / "resumed"
        assert "(1 unchanged, kept from an earlier run)" in (kept / "resumed.log").read_text()
        assert [r["submission"] for r in assert_complete_score_files(resumed)] == ["a-ref", "b-stubs", "c-ref"]


def test_a_submission_that_vanishes_mid_run_gets_no_score_file_and_the_run_says_so(tmp_path):
    names = [f"s{i}" for i in range(6)]
    subs = make_class(tmp_path / "subs", names)
    out = tmp_path / "out"
    args = [str(subs), "--out", str(out), "--workers", "2"]
    run = Run(tmp_path, args)
    wait_for_score_files(out, 1, run)
    (subs / "s5").rename(tmp_path / "s5-away")  # graded last: two more rounds of the pool before its turn
    assert run.wait() == 1, run.output()
    output = run.output()
    assert [r["submission"] for r in assert_complete_score_files(out)] == names[:5]
    assert "1 submission has no score file: it vanished during the run" in output
    assert f"  s5: {subs / 's5'} was there when the run started and is gone now" in output
    assert f"to grade it: put it back, then run: grader grade {' '.join(args)} --resume" in output
    assert "Traceback" not in output
    (tmp_path / "s5-away").rename(subs / "s5")
    again = Run(tmp_path, [*args, "--resume"], name="resume")
    assert again.wait() == 0, again.output()
    assert [r["submission"] for r in assert_complete_score_files(out)] == names


def test_a_second_run_on_the_same_out_is_refused_while_the_first_goes_on(tmp_path):
    subs = make_class(tmp_path / "subs", ["s0", "s1", "s2"])
    out = tmp_path / "out"
    first = Run(tmp_path, [str(subs), "--out", str(out), "--workers", "1"], name="first")
    deadline = time.monotonic() + 60
    while not (out.is_dir() and lifecycle.lock_holder(out)):
        assert first.process.poll() is None and time.monotonic() < deadline, first.output()
        time.sleep(0.05)
    second = Run(tmp_path, [str(subs), "--out", str(out), "--workers", "1"], name="second")
    assert second.wait() == 2
    assert first.process.poll() is None, "the first run ended before the second was refused: no overlap tested"
    message = second.output().strip().splitlines()[-1]
    assert message.startswith(f"grader: error: --out {out} is in use by another grader grade (pid {first.process.pid}: ")
    assert message.endswith("two runs must not write the same score files. Nothing was graded or written by this "
                            "run. Wait for that run to end (or stop it), then rerun with --resume to keep its score "
                            "files; or choose another --out.")
    assert first.wait() == 0, first.output()
    assert [r["submission"] for r in assert_complete_score_files(out)] == ["s0", "s1", "s2"]


def test_what_a_killed_run_was_writing_is_removed_and_nothing_else(tmp_path):
    """A SIGKILL between creating a score file's temporary and renaming it leaves the temporary:
    the next run, holding the folder's lock, removes it."""
    out = tmp_path / "out"
    out.mkdir()
    results.write_atomic(out / "alice.json", "{}")
    (out / ".bob.json.k3j_9x2a.tmp").write_text('{"half": ')  # write_atomic's temporary, left by a SIGKILL
    (out / "notes.tmp").write_text("the instructor's")
    (out / ".notes.tmp").write_text("the instructor's")
    assert results.remove_temporaries(out) == [".bob.json.k3j_9x2a.tmp"]
    assert sorted(p.name for p in out.iterdir()) == [".notes.tmp", "alice.json", "notes.tmp"]


def test_a_run_on_a_cluster_reads_each_submission_when_its_turn_comes_and_reports_one_that_vanished(tmp_path):
    present = make_submission(tmp_path / "present")
    gone = tmp_path / "gone"
    finished = []
    from grader import catalog
    course = catalog.load(None)
    read = list(runner._read_present([(str(present), "present"), (str(gone), "gone")], course, finished.append))
    assert [sub.name for sub in read] == ["present"]
    assert finished == [runner.Vanished("gone", f"{gone} was there when the run started and is gone now")]


# ----------------------------------------------------------------------------- a long class, a broken sandbox

def test_a_class_of_thousands_of_submissions_starts_its_sandbox(tmp_path):
    """Every submission's path is hidden from the workers: 3,000 of them (240 KB) go to the zygote
    whole, beyond the kernel's 128 KiB limit on one command-line argument."""
    from grader import catalog
    from grader.host.launcher import make_launcher
    from grader.protocol.limits import Limits

    paths = [f"{tmp_path}/a-class-folder-with-a-long-name/submission-of-student-{i:05d}" for i in range(3000)]
    assert len("".join(paths)) > 200_000
    launcher = make_launcher(Limits(), catalog.load(), extra_hidden=paths)
    try:
        assert launcher.plan.hidden_paths[-3000:] == paths
        assert len(_read(f"/proc/{launcher.process.pid}/cmdline")) < 1000
    finally:
        launcher.close()


def test_a_sandbox_that_cannot_start_stops_the_run_and_scores_no_one(tmp_path, monkeypatch):
    """A zygote that cannot start is the machine's fault: no submission gets a score file (a 0
    would be a wrong grade), and the run says why, in one line, wherever the engine was started."""
    def broken_engine(options, slot=0, ahead=False):
        raise RuntimeError("the worker zygote failed to start: Traceback (most recent call last):\n"
                           "  File ...\nOSError: [Errno 7] Argument list too long")

    monkeypatch.setattr(runner, "Engine", broken_engine)
    why = ("the sandbox could not start (the worker zygote failed to start: Traceback (most recent call last): ... "
           "OSError: [Errno 7] Argument list too long)")
    out = tmp_path / "out"
    with pytest.raises(runner.RunStopped) as stopped:
        runner.grade_many([str(SOLUTIONS), str(STUBS)], out, runner.Options(), workers=1)
    assert str(stopped.value) == why
    assert stopped.value.summary.written == [] and list(out.iterdir()) == []

    # In a pool process: each submission it is given raises, and the grading process stops the run.
    monkeypatch.setattr(lifecycle, "become_pool_process", lambda close: None)
    monkeypatch.setattr(runner, "_engine", None)
    monkeypatch.setattr(runner, "_engine_failure", "")
    runner._init_pool_process(runner.Options())
    with pytest.raises(runner.EngineUnavailable, match=r"^the sandbox could not start \(the worker zygote"):
        runner._grade_in_pool(str(SOLUTIONS), "ref")
