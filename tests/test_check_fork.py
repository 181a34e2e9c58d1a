"""`grader check` imports torch once: its zygote is forked from the check's own process (which holds public
tests only), and the workers it forks are the same sandbox as a started zygote's. Each case runs in a
fresh interpreter: a fork is refused where other threads run, as in a test session that ran others.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, SOLUTIONS

pytestmark = pytest.mark.slow

# hvp, right, that prints what its worker sees: its environment, and whether the course's hidden tests
# or their oracle are loaded in its interpreter
LOOKING_HVP = (SOLUTIONS / "grad.py").read_text().replace(
    "def hvp(f, x: Tensor, v: Tensor) -> Tensor:\n",
    "def hvp(f, x: Tensor, v: Tensor) -> Tensor:\n"
    "    import json as _json, os as _os, sys as _sys\n"
    "    print('SEEN', _json.dumps({'env': sorted(_os.environ), 'hidden': sorted(m for m in _sys.modules\n"
    "          if m.startswith('grader.cases.hidden')), 'cwd': _os.getcwd()}))\n", 1)

CHECK = """
import json, sys
from pathlib import Path
from grader.host.launcher import ForkedZygote
from grader.host.runner import Engine, Options
folder = Path(sys.argv[1])
engine = Engine(Options(folders=("public",), fork_zygote=True, show_output=True, exercises={"hvp"}))
try:
    report = engine.grade(folder)
finally:
    engine.close()
print(json.dumps({"forked": type(engine.launcher.process) is ForkedZygote, "ended": engine.launcher.process.poll(),
                  "report": report}))
"""

REFUSED = """
import json
import os
import grader.cases.hidden.test_grad  # noqa: F401  (a process that holds hidden tests)
from grader import catalog
from grader.host.launcher import ForkedZygote, make_launcher
from grader.protocol.limits import Limits
launcher = make_launcher(Limits(), catalog.load(), fork=True)
try:
    print(json.dumps({"forked": type(launcher.process) is ForkedZygote, "plan": launcher.plan.mode}))
finally:
    launcher.close()
"""


def run(code: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_a_check_forks_its_zygote_and_its_workers_see_a_clean_sandbox(tmp_path):
    folder = tmp_path / "sub"
    folder.mkdir()
    for module in SOLUTIONS.glob("*.py"):
        (folder / module.name).write_text(module.read_text())
    (folder / "grad.py").write_text(LOOKING_HVP)
    result = run(CHECK, str(folder))
    assert result["forked"] and result["ended"] is not None  # forked, and gone once the engine closed
    report = result["report"]
    hvp = next(e for e in report["exercises"] if e["name"] == "hvp")
    assert report["score"] == report["max_score"] > 0 and all(t["status"] == "passed" for t in hvp["tests"])
    seen = json.loads(next(t for t in hvp["tests"] if t["name"] == "test_hvp_small")["output"].split("SEEN ", 1)[1]
                      .splitlines()[0])
    assert seen["hidden"] == []  # no hidden test and no oracle in the worker's interpreter
    assert set(seen["env"]) <= {"PATH", "HOME", "LANG", "TMPDIR", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED",
                                "OMP_NUM_THREADS", "MKL_NUM_THREADS"}  # nothing of the check's environment
    assert report["sandbox"]["backend"] != "process" or seen["cwd"] != str(ROOT)


def test_a_process_that_holds_hidden_tests_starts_its_zygote_instead():
    result = run(REFUSED)
    assert result == {"forked": False, "plan": result["plan"]} and result["plan"]


def test_the_check_forks_its_zygote_before_it_imports_pytest(tmp_path):
    """The real `grader check`: the zygote is forked once torch is imported and before pytest is, so that its
    warm-up runs beside pytest's import (the cold check's latency, issue 22); its workers hold no pytest."""
    folder = tmp_path / "sub"
    folder.mkdir()
    for module in SOLUTIONS.glob("*.py"):
        (folder / module.name).write_text(module.read_text())
    (folder / "grad.py").write_text((SOLUTIONS / "grad.py").read_text().replace(
        "def hvp(f, x: Tensor, v: Tensor) -> Tensor:\n",
        "def hvp(f, x: Tensor, v: Tensor) -> Tensor:\n"
        "    import sys as _sys\n"
        "    print('PYTEST-LOADED', sorted(m for m in _sys.modules if m.split('.')[0] in ('pytest', '_pytest')))\n", 1))
    done = subprocess.run([sys.executable, "-m", "grader", "check", str(folder), "--exercise", "hvp", "-v"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, env={**os.environ, "NO_COLOR": "1"})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    seen = [line.split("PYTEST-LOADED ", 1)[1] for line in done.stdout.splitlines() if "PYTEST-LOADED " in line]
    assert seen and set(seen) == {"[]"}, seen[:3]
