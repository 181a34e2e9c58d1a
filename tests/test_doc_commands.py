"""What the docs show runs as shown: every command of a fenced shell block of README.md and docs/*.md.

Each command line is either run here, as written (the fast ones: report, feedback, diff, the notebook
and student exports, on a class of schema-valid score files made for the LMS tests), or named in
`RUN_ELSEWHERE` with the test that runs the same command (grading, validating, the student's loop, the
gradebook: seconds to minutes each, already run there). A new command in a doc fails this test until
it is one or the other. `[...]` in a command marks optional arguments: it runs without them.
docs/authoring.md's own steps are applied by tests/test_authoring.py.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT
from lms_factory import THREE_WRONG, class_scores, write_scores

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"```(?:sh|bash|shell)\n(.*?)```", re.S)

# Command (its start, as written) -> the test that runs the same command.
RUN_ELSEWHERE = {
    "make demo": ".ci/run (make test builds the venv demo uses); tests/test_validate.py (the sample maker)",
    "make test": ".ci/run",
    "python3 -m venv .venv && . .venv/bin/activate": "tests/test_bundle.py (a fresh venv for the student bundle)",
    "pip install torch": "tests/test_bundle.py",
    "pip install -e .": "tests/test_bundle.py",
    "grader check": "tests/test_cli.py, tests/test_check_output.py, tests/test_property_checks.py (--seed)",
    "grader submit": "tests/test_submit.py",
    "grader grade": "tests/test_cli.py, tests/test_lifecycle.py (--resume)",
    "grader gradebook": "tests/test_gradebook.py",
    "grader export canvas": "tests/test_lms_canvas.py",
    "grader validate": "tests/test_validate.py",
    "grader export moodle": "tests/test_lms_moodle.py",
    "grader publish lti": "tests/test_lms_lti.py (lti, lti-line-items, lti-jwks against a real platform)",
    "grader export prairielearn scores/ada.json": "tests/test_lms_prairielearn.py (writes /grade/results/ in its image)",
    "grader export github-classroom": "tests/test_lms_github_classroom.py",
}


def commands() -> list[tuple[str, str]]:
    """(doc, command) for every command line of every fenced shell block, comments stripped."""
    found = []
    for doc in DOCS:
        for block in FENCE.findall(doc.read_text(encoding="utf-8")):
            for line in re.sub(r"\\\n\s*", "", block).splitlines():  # continued lines joined
                command = re.sub(r"\s+#.*$", "", line).strip()
                if command and not command.startswith("#"):
                    found.append((doc.relative_to(ROOT).as_posix(), command))
    return found


def elsewhere(command: str) -> str | None:
    return next((where for start, where in RUN_ELSEWHERE.items() if command.startswith(start)), None)


def test_every_documented_command_is_run_here_or_by_a_named_test():
    assert len(commands()) >= 20
    for doc, command in commands():
        where = elsewhere(command)
        if where is None:
            assert command.startswith(FAST), f"{doc}: `{command}` is run by no test: run it here or name its test"
        else:
            for path in re.findall(r"(?:tests/\S+\.py|\.ci/\w+)", where):
                assert (ROOT / path).is_file(), (command, path)


FAST = ("grader report", "grader feedback", "grader diff", "grader export notebook", "grader export student",
        "grader export prairielearn scores/ --out", "openssl genpkey")


@pytest.fixture(scope="module")
def class_folder(tmp_path_factory) -> Path:
    """A folder with scores/, scores-before/ and scores-after/ (one of bob's three wrong exercises fixed), as the
    docs' commands expect."""
    folder = tmp_path_factory.mktemp("docs")
    class_scores(folder / "scores")
    shutil.copytree(folder / "scores", folder / "scores-before")
    write_scores(folder / "scores-after", {"ada": [], "bob": list(THREE_WRONG[1:])})
    return folder


@pytest.mark.parametrize("doc,command", list({c: (d, c) for d, c in commands() if c.startswith(FAST)}.values()),
                         ids=lambda value: value[:60])  # each distinct command once
def test_the_fast_documented_commands_run_as_written(class_folder, doc, command):
    runnable = re.sub(r"\s*\[[^\]]*\]", "", command)  # optional arguments left out
    script = f'grader() {{ "{sys.executable}" -m grader "$@"; }}\n{runnable}\n'
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(["bash", "-c", script], cwd=class_folder, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, f"{doc}: `{command}`\n{done.stdout[-1500:]}{done.stderr[-1500:]}"
