"""The warm check: `WarmChecker` (the API `grader check --watch` and the notebook build on) and the watcher.

A checker is reused for many checks; a hang or a crash of the student's code costs that check's
verdict only. The separate-process mode (for a caller that ran student code, a notebook kernel)
speaks JSON lines with its trusted side.
"""

from __future__ import annotations

import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from unittest import mock

import pytest

from grader.errors import UsageError
from grader.host import watch
from grader.host.warm import WarmChecker
from grader.protocol.limits import Limits

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
HOSTILE = ROOT / "tests" / "submissions" / "hostile"


def grad_with(attack: str) -> str:
    """The reference grad.py with a hostile submission's functions appended (they replace the reference's)."""
    return (SOLUTIONS / "grad.py").read_text() + (HOSTILE / attack / "grad.append.py").read_text()


def verdicts(report: dict) -> dict[str, str]:
    """Exercise -> the worst status of its tests."""
    order = ["passed", "failed", "error", "timeout"]
    return {e["name"]: max((t["status"] for t in e["tests"]), key=order.index) for e in report["exercises"]}


@pytest.fixture(scope="module")
def remote_checker():
    checker = WarmChecker(separate_process=True, limits=Limits(call_timeout_s=1.5, exercise_budget_s=3.0))
    yield checker
    checker.close()


def test_a_checker_in_its_own_process_survives_a_hang_and_a_crash(remote_checker):
    first = remote_checker.check(exercises=["hvp"], folder=SOLUTIONS)
    assert verdicts(first) == {"hvp": "passed"} and first["score"] == first["max_score"] > 0

    hang = remote_checker.check(exercises=["jacobian_rows"], sources={"grad": grad_with("infinite_loop_call")})
    assert verdicts(hang) == {"jacobian_rows": "timeout"}
    crash = remote_checker.check(exercises=["hvp"], sources={"grad": grad_with("segfault_in_call")})
    assert verdicts(crash) == {"hvp": "error"}
    assert "SIGSEGV" in " ".join(t["message"] for e in crash["exercises"] for t in e["tests"])

    # the same checker goes on: every exercise of the module from its source text, then a folder
    again = remote_checker.check(sources={"grad.py": (SOLUTIONS / "grad.py").read_text()})
    assert set(verdicts(again)) == {"partial_grads", "nth_derivative", "hvp", "jacobian_rows"}
    assert set(verdicts(again).values()) == {"passed"}
    stubs = remote_checker.check(exercises=["hvp", "make_leaf"], folder=ROOT / "exercises")
    assert set(verdicts(stubs)) == {"make_leaf", "hvp"} and "passed" not in verdicts(stubs).values()
    assert stubs["score"] == 0


def test_an_unknown_exercise_says_what_was_meant_in_both_languages(remote_checker):
    with pytest.raises(UsageError, match="did you mean: hpv -> hvp") as raised:
        remote_checker.check(exercises=["hpv"], folder=SOLUTIONS)
    assert "你是不是想写" in str(raised.value)
    with pytest.raises(UsageError, match="unknown module"):
        remote_checker.check(sources={"gard": "x = 1"})


def test_a_checker_in_this_process_is_reusable_and_closes():
    with WarmChecker() as checker:
        for _ in range(2):
            report = checker.check(exercises=["partial_grads"], sources={"grad": (SOLUTIONS / "grad.py").read_text()})
            assert verdicts(report) == {"partial_grads": "passed"}
        zygote = checker._side.engine.launcher.process
    assert zygote.poll() is not None  # closed: its zygote is gone


# ----------------------------------------------------------------------------- grader check --watch

def read_verdict(lines: queue.Queue, timeout: float = 120.0) -> str:
    """The watcher's output up to its next "watching" line: one verdict."""
    out, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            break
        if line is None:
            break
        out.append(line)
        if line.startswith("watching "):
            return "".join(out)
    raise AssertionError(f"no verdict within {timeout} s:\n{''.join(out)}")


def test_the_watcher_gives_a_verdict_per_save_and_survives_a_crash_and_a_hang(tmp_path):
    folder = tmp_path / "exercises"
    shutil.copytree(SOLUTIONS, folder)
    grad = folder / "grad.py"
    watcher = subprocess.Popen([sys.executable, "-m", "grader", "check", str(folder), "--watch", "--exercise", "hvp",
                                "--exercise", "jacobian_rows", "--exercise", "make_leaf", "--timeout", "1.5"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(x) for x in watcher.stdout] + [lines.put(None)], daemon=True).start()
    try:
        first = read_verdict(lines, timeout=60) if watcher.poll() is None else ""
        assert "3 of 3 exercises pass" in first, watcher.poll()
        grad.write_text(grad_with("segfault_in_call"))
        crashed = read_verdict(lines)
        assert "saved grad.py" in crashed and "SIGSEGV" in crashed and "1 of 2 exercises pass" in crashed
        assert "make_leaf" not in crashed  # graph.py was not saved: only grad.py's exercises run again
        grad.write_text(grad_with("infinite_loop_call"))
        assert "timeout" in read_verdict(lines)
        grad.write_text((SOLUTIONS / "grad.py").read_text())
        assert "2 of 2 exercises pass" in read_verdict(lines)
    finally:
        watcher.send_signal(signal.SIGINT)  # Ctrl-C
        code = watcher.wait(timeout=30)
    assert code == 0
    assert "stopped watching / 已停止监视" in watcher.stderr.read()


def test_without_watchfiles_saves_are_polled(tmp_path):
    module = tmp_path / "grad.py"
    module.write_text("a = 1\n")
    changes = watch.module_changes(tmp_path, ["grad.py", "graph.py"])
    threading.Timer(0.3, lambda: module.write_text("a = 2\n")).start()
    with mock.patch.dict(sys.modules, {"watchfiles": None}):  # import watchfiles fails
        assert next(changes) == ["grad.py"]
