"""`grader export gradescope`: the zip, and its run_autograder run against a temporary root laid out
like Gradescope's /autograder. Every results.json is checked against the JSON Schema of Gradescope's
specification (tests/schemas/, a draft: Gradescope publishes none)."""

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest

from grader import catalog
from grader.cli import main
from grader.exports import gradescope
from grader.exports.submit import write_submission

from conftest import FULL_MARKS, SOLUTIONS, max_scores, scores
from sample_submissions import wrong_zip

SCHEMA = json.loads((Path(__file__).parent / "schemas" / "gradescope_results.schema.json").read_text())


def valid(results: dict) -> dict:
    jsonschema.Draft202012Validator(SCHEMA).validate(results)
    return results


@pytest.fixture(scope="module")
def autograder_zip(tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "gradescope.zip"
    assert main(["export", "gradescope", "--out", str(out)]) == 0
    return out


def make_root(tmp_path, autograder_zip, submission_zip, unpack=True):
    """A folder laid out like /autograder after Gradescope has built the image and received a submission."""
    root = tmp_path / "autograder"
    for sub in ("source", "submission", "results"):
        (root / sub).mkdir(parents=True)
    with zipfile.ZipFile(autograder_zip) as zf:
        zf.extractall(root / "source")
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
    (root / "submission_metadata.json").write_text("{}")
    if unpack:
        with zipfile.ZipFile(submission_zip) as zf:
            zf.extractall(root / "submission")
    else:
        shutil.copy(submission_zip, root / "submission")
    return root


def run_autograder(root: Path, python: str = sys.executable, fails: bool = False, stderr: list | None = None,
                   stdout: list | None = None) -> dict | None:
    """run_autograder, locally (AUTOGRADER_ROOT set): exit 0 when it graded, non-zero when it could not.
    Its results.json, or None when it wrote none (Gradescope's autograder error, no score)."""
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "AUTOGRAD_LAB_PYTHON": python}
    env.pop("PYTHONPATH", None)  # the run must import the package the zip carries, nothing else
    done = subprocess.run(["bash", str(root / "run_autograder")], env=env, capture_output=True, text=True, timeout=300)
    assert (done.returncode != 0) == fails, done.stderr
    if stderr is not None:
        stderr.append(done.stderr)
    if stdout is not None:
        stdout.append(done.stdout)
    written = root / "results" / "results.json"
    return json.loads(written.read_text()) if written.exists() else None


def test_the_zip_holds_setup_run_autograder_a_cpu_torch_and_the_package(autograder_zip):
    with zipfile.ZipFile(autograder_zip) as zf:
        names = set(zf.namelist())
        modes = {i.filename: i.external_attr >> 16 for i in zf.infolist()}
        setup = zf.read("setup.sh").decode()
        requirements = zf.read("requirements.txt").decode()
        config = json.loads(zf.read(gradescope.CONFIG_FILE))
    assert {"setup.sh", "run_autograder", "requirements.txt", gradescope.CONFIG_FILE} <= names
    assert all(modes[n] & stat.S_IXUSR for n in ("setup.sh", "run_autograder"))
    assert f'"{gradescope.TORCH_REQUIREMENT}" --index-url {gradescope.TORCH_CPU_INDEX}' in setup
    assert requirements.splitlines() == [f"--extra-index-url {gradescope.TORCH_CPU_INDEX}", gradescope.TORCH_REQUIREMENT,
                                         "-e /autograder/source/autograd_lab"]
    assert config == {"seed": 0, "device": "cpu"}
    package = {n for n in names if n.startswith("autograd_lab/")}
    assert {"autograd_lab/pyproject.toml", "autograd_lab/grader/cases/hidden/test_grad.py",
            "autograd_lab/grader/exports/gradescope.py"} <= package
    assert not [n for n in names if "__pycache__" in n or "solutions/" in n or n.startswith("autograd_lab/tests/")]


def test_run_autograder_gives_the_reference_full_marks(tmp_path, autograder_zip, engine):
    sub = write_submission({p.name: p.read_bytes() for p in SOLUTIONS.glob("*.py")}, tmp_path / "ref.zip")
    root = make_root(tmp_path, autograder_zip, sub)
    results = valid(run_autograder(root))
    report = engine.grade(sub)
    hidden_tests = root / "source" / "autograd_lab" / "grader" / "cases" / "hidden"
    assert stat.S_IMODE(hidden_tests.stat().st_mode) == 0o700, "the zip's hidden tests are closed to other users"
    assert results["score"] == report["score"] == FULL_MARKS
    assert len(results["tests"]) == sum(len(e["tests"]) for e in report["exercises"])
    assert {t["status"] for t in results["tests"]} == {"passed"}
    assert isinstance(results["execution_time"], float) and results["execution_time"] > 0
    assert results["extra_data"]["autograd_lab"]["sandbox"]["backend"] == report["sandbox"]["backend"]


def test_results_match_grader_grade_test_by_test_and_hide_hidden_inputs(tmp_path, autograder_zip, engine):
    sub = wrong_zip("wrong_hvp", tmp_path / "wrong_hvp.zip")
    results = valid(run_autograder(make_root(tmp_path, autograder_zip, sub)))
    report = engine.grade(sub)
    expected = [(f"{e['name']}: {t['name']}", t["score"], t["max_score"], t["status"] == "passed")
                for e in report["exercises"] for t in e["tests"]]
    got = [(t["name"], t["score"], t["max_score"], t["status"] == "passed") for t in results["tests"]]
    assert got == expected
    assert results["score"] == report["score"] == FULL_MARKS - max_scores(report)["hvp"] + scores(report)["hvp"]
    hidden = [t for t in results["tests"] if t["name"].startswith("hvp: ") and "random" in t["name"]]
    assert hidden and all(t["visibility"] == "after_published" and t["status"] == "failed" for t in hidden)
    for t in hidden:
        assert "checks: " in t["output"], "a failed hidden test shows its hint"
        assert re.search(r"-?\d+\.\d", t["output"]) is None, t["output"]
    public = [t for t in results["tests"] if t["name"] == "hvp: test_hvp_small"]
    assert public[0]["visibility"] == "visible" and "got [" in public[0]["output"]
    public = [t for e in report["exercises"] for t in e["tests"] if t["visibility"] == "visible"]
    passed = sum(t["status"] == "passed" for t in public)
    assert passed < len(public) and f"{passed} of {len(public)} public tests passed" in results["output"]


def test_an_upload_left_zipped_is_graded(tmp_path, autograder_zip, engine):
    sub = wrong_zip("wrong_grads_per_step", tmp_path / "upload.zip")
    results = valid(run_autograder(make_root(tmp_path, autograder_zip, sub, unpack=False)))
    assert results["score"] == engine.grade(sub)["score"] < 100


@pytest.mark.slow
def test_notebook_hand_ins_score_as_their_py_zips(tmp_path, autograder_zip, engine):
    """A notebook uploaded as it is, and one inside the uploaded zip: the scores of the .py zip of the
    same code, test by test."""
    from notebook_support import colab_copy, exported, with_mistake, with_reference, write

    for name, nb, zipped in (("wrong_hvp", with_mistake(with_reference(exported()), "wrong_hvp"), False),
                             ("wrong_grads_per_step", colab_copy(with_mistake(with_reference(exported()), "wrong_grads_per_step")), True)):
        work = tmp_path / name
        work.mkdir()
        notebook = write(nb, work / "autograd_lab.ipynb")
        upload = notebook
        if zipped:
            upload = work / "upload.zip"
            with zipfile.ZipFile(upload, "w") as zf:
                zf.write(notebook, "autograd_lab.ipynb")
        root = make_root(work, autograder_zip, upload, unpack=False)
        results = valid(run_autograder(root))
        report = engine.grade(wrong_zip(name, work / f"{name}.zip"))
        assert [(t["name"], t["score"]) for t in results["tests"]] == \
            [(f"{e['name']}: {t['name']}", t["score"]) for e in report["exercises"] for t in e["tests"]]
        assert results["score"] == report["score"] < FULL_MARKS


def last_terms_notebook(folder: Path) -> Path:
    """The reference as last term's notebook (version 2019.2): an ungradable hand-in, not this assignment's file."""
    from grader.host.cells import METADATA_KEY
    from notebook_support import exported, with_reference, write

    old = with_reference(exported())
    old["metadata"][METADATA_KEY]["version"] = "2019.2"
    folder.mkdir()
    return write(old, folder / "autograd_lab.ipynb")


def test_an_ungradable_result_is_never_a_score_on_gradescope(tmp_path, autograder_zip):
    """Gradescope's results.json has no ungradable status: any score in it is the student's grade. The first
    such submission gets no results.json, which Gradescope reports as an autograder error ("The autograder
    failed to execute correctly"), no score; a later one keeps the last graded submission's results and
    score, the reason first, where the submission limit looks."""
    from grader.policy import limits

    root = make_root(tmp_path, autograder_zip, last_terms_notebook(tmp_path / "old"), unpack=False)
    (root / "results" / "results.json").write_text('{"score": 0}')  # stale, or planted: never kept
    said, printed = [], []
    assert run_autograder(root, fails=True, stderr=said, stdout=printed) is None
    assert "autograder error" in printed[0] and "not a score" in printed[0] and "version '2019.2'" in said[0]
    earlier = {"score": 42.5, "output": "autograd-lab: 7 of 9 public tests passed.",
               "tests": [{"name": "an exercise: a test", "score": 2.5, "max_score": 5, "status": "failed"}]}
    (root / "submission_metadata.json").write_text(json.dumps({
        "created_at": "2026-12-02T10:00:00+08:00",
        "previous_submissions": [{"submission_time": "2026-12-01T09:00:00+08:00", "score": 42.5, "results": earlier}]}))
    results = valid(run_autograder(root, fails=True))
    assert results["score"] == 42.5 and results["tests"] == earlier["tests"]
    first, reason = results["output"].split("\n")[:2]
    assert first == limits.UNGRADABLE and "version '2019.2'" in reason
    assert "Your score stays 42.5, from your submission of 2026-12-01 09:00 (UTC+08:00)" in results["output"]
    assert results["extra_data"]["autograd_lab"] == {"status": "ungradable", "kept_from": "2026-12-01T09:00:00+08:00"}
    assert not limits.was_graded({"score": 42.5, "results": results})  # no attempt for the submission limit


def test_no_results_json_and_no_score_when_python_cannot_run(tmp_path, autograder_zip):
    sub = wrong_zip("wrong_hvp", tmp_path / "sub.zip")
    root = make_root(tmp_path, autograder_zip, sub)
    (root / "results" / "results.json").write_text('{"score": 100}')  # stale, or planted: never kept
    said, printed = [], []
    assert run_autograder(root, python="/bin/false", fails=True, stderr=said, stdout=printed) is None
    assert "no results.json (exit status 1): Gradescope records an autograder error, not a score" in printed[0]
    assert "autograd-lab: the autograder failed (exit status 1" in said[0]


def test_a_local_run_with_a_python_that_lacks_torch_says_so_and_fails(tmp_path, autograder_zip):
    """`AUTOGRAD_LAB_PYTHON=python3` on a machine whose python3 has no torch (docs/otter-gradescope.md): the
    local run names the missing module and what to change, and exits non-zero; it writes no results.json (no score)."""
    bare = tmp_path / "bare"
    subprocess.run([os.path.realpath(sys.executable), "-m", "venv", "--without-pip", str(bare)], check=True)
    root = make_root(tmp_path, autograder_zip, wrong_zip("wrong_hvp", tmp_path / "sub.zip"))
    said = []
    assert run_autograder(root, python=str(bare / "bin" / "python"), fails=True, stderr=said) is None
    assert "No module named" in said[0] and "AUTOGRAD_LAB_PYTHON" in said[0], said[0]


@pytest.mark.parametrize("where", ["engine", "everything"])
def test_a_grading_crash_is_ungradable_never_a_0(tmp_path, autograder_zip, monkeypatch, where):
    root = make_root(tmp_path, autograder_zip, wrong_zip("wrong_hvp", tmp_path / "sub.zip"))

    def boom(*args, **kwargs):
        raise RuntimeError("boom")

    if where == "engine":
        from grader.host.runner import Engine
        monkeypatch.setattr(Engine, "grade_loaded", boom)
    else:
        monkeypatch.setattr(gradescope, "grade", boom)
    checkout_hidden = gradescope.PACKAGE_DIR / "cases" / "hidden"
    mode = checkout_hidden.stat().st_mode
    assert gradescope.run(root) is None  # no score: Gradescope's autograder error
    assert checkout_hidden.stat().st_mode == mode, "only the package copy under the root is chmodded"
    assert not (root / "results" / "results.json").exists()
    (root / "submission_metadata.json").write_text(json.dumps({
        "created_at": "2026-12-02T10:00:00Z",
        "previous_submissions": [{"submission_time": "2026-12-01T10:00:00Z", "score": 61, "results": {"score": 61}}]}))
    gradescope.run(root)
    results = valid(json.loads((root / "results" / "results.json").read_text()))
    assert results["score"] == 61 and results["tests"] == []  # the last graded submission's, never a 0
    assert gradescope.is_ungradable(results)
    if where == "everything":  # the trace is the instructor's (stderr), the student reads what happened
        assert gradescope.CRASHED in results["output"] and "boom" not in results["output"]