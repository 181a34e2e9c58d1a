"""The warm check: `WarmChecker` (the API `grader check --watch` and the notebook build on) and the watcher.

A checker is reused for many checks; a hang or a crash of the student's code costs that check's
verdict only. The separate-process mode (for a caller that ran student code, a notebook kernel)
speaks JSON lines with its trusted side.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.errors import UsageError
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
