"""Time the student's path from unzipping the bundle to the first `grader check`, as its README says.

    PYTHONPATH=. python3 bench/student_path.py

Exports the student bundle, unzips it, and runs the README's lines in its folder: a fresh venv,
torch, `pip install -e .`, `grader check`; each step is timed. One line differs: the README installs
torch from download.pytorch.org's CPU index, which this project's machines cannot reach, so the
bench installs the same CPU build through pip's configured index (`pip install torch==<this torch>`).
The figure therefore includes a real torch install, from a local wheel cache where pip has one.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    import torch

    from grader.exports import bundle

    steps = []
    with tempfile.TemporaryDirectory(prefix="student-path-") as tmp:
        tmp = Path(tmp)
        bundle.build_student_bundle(tmp / "student.zip")
        start = time.perf_counter()

        def step(what: str, command: list[str], cwd: Path, ok=(0,)) -> subprocess.CompletedProcess:
            t = time.perf_counter()
            done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
            steps.append((what, time.perf_counter() - t))
            if done.returncode not in ok:
                raise SystemExit(f"{what} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
            return done

        t = time.perf_counter()
        zipfile.ZipFile(tmp / "student.zip").extractall(tmp)
        steps.append(("unzip", time.perf_counter() - t))
        folder = tmp / bundle.TOP
        step("python3 -m venv .venv", [sys.executable, "-m", "venv", ".venv"], folder)
        pip = [str(folder / ".venv" / "bin" / "python"), "-m", "pip", "install", "-q"]
        version = torch.__version__.split("+")[0]
        step(f"pip install torch=={version} (CPU)", pip + [f"torch=={version}"], folder)
        step("pip install -e .", pip + ["-e", "."], folder)
        check = step("grader check", [str(folder / ".venv" / "bin" / "grader"), "check"], folder, ok=(1,))
        total = time.perf_counter() - start
    for what, seconds in steps:
        print(f"{seconds:7.1f} s  {what}")
    print(f"{total:7.1f} s  from unzip to the first grader check's table")
    print("NumPy warning printed:", "NumPy" in check.stdout + check.stderr)


if __name__ == "__main__":
    main()
