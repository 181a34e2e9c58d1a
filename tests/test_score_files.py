"""Score files as the grader writes them: valid, consistent, accepted by every exporter, resumable."""

import csv
import json

import pytest

from grader import catalog
from grader.host import results
from grader.host.runner import Options, grade_many
from grader.lms.scores import load_score_dir

from conftest import SOLUTIONS, STUBS, make_submission

BROKEN_HVP = "\ndef hvp(f, x, v):\n    return x * 0\n"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("graded")
    wrong = make_submission(tmp / "subs" / "wrong", {"grad.py": (SOLUTIONS / "grad.py").read_text() + BROKEN_HVP})
    out = tmp / "out"
    summary = grade_many([str(SOLUTIONS), str(STUBS), str(wrong)], out, Options(seed=5), workers=1)
    return out, summary, wrong


def test_one_valid_file_per_submission_and_a_summary(graded):
    out, summary, _ = graded
    assert sorted(p.name for p in out.iterdir()) == ["exercises.json", "solutions.json", "summary.csv", "wrong.json"]
    for path in out.glob("*.json"):
        report = json.loads(path.read_text())
        assert results.validate(report) == []
        assert len(report["exercises"]) == len(catalog.load().exercises)


def test_totals_add_up_exactly(graded):
    out, _, _ = graded
    for path in out.glob("*.json"):
        report = json.loads(path.read_text())
        for e in report["exercises"]:
            assert round(sum(t["score"] for t in e["tests"]), 4) == e["score"]
            assert round(sum(t["max_score"] for t in e["tests"]), 4) == e["max_score"]
        assert round(sum(e["score"] for e in report["exercises"]), 4) == report["score"]


def test_every_exporter_accepts_the_files(graded):
    out, _, _ = graded
    loaded = load_score_dir(out)
    assert loaded.problems == []
    assert sorted(s.submission for s in loaded.scores) == ["exercises", "solutions", "wrong"]


def test_summary_csv_has_a_row_per_submission(graded):
    out, _, _ = graded
    rows = list(csv.DictReader((out / "summary.csv").open()))
    by_name = {r["submission"]: r for r in rows}
    assert by_name["solutions"]["score"] == "100"
    assert by_name["exercises"]["score"] == "0"
    assert by_name["wrong"]["hvp"] != "5" and by_name["wrong"]["partial_grads"] == "5"


def test_resume_skips_finished_and_regrades_changed(graded, tmp_path):
    out, _, wrong = graded
    before = {p.name: p.stat().st_mtime_ns for p in out.glob("*.json")}
    summary = grade_many([str(SOLUTIONS), str(STUBS), str(wrong)], out, Options(seed=5), resume=True)
    assert sorted(summary.skipped) == ["exercises", "solutions", "wrong"] and summary.written == []
    (wrong / "grad.py").write_text((SOLUTIONS / "grad.py").read_text())  # the student fixed hvp
    summary = grade_many([str(SOLUTIONS), str(STUBS), str(wrong)], out, Options(seed=5), resume=True)
    assert [p.name for p in summary.written] == ["wrong.json"]
    assert json.loads((out / "wrong.json").read_text())["score"] == 100
    assert {p.name: p.stat().st_mtime_ns for p in out.glob("*.json") if p.name != "wrong.json"} == \
        {k: v for k, v in before.items() if k != "wrong.json"}
    assert summary.regraded == {"wrong": "submission changed"}


def test_every_file_records_the_tests_fingerprint(graded):
    from grader import catalog

    out, _, _ = graded
    for path in out.glob("*.json"):
        assert json.loads(path.read_text())["tests_sha256"] == catalog.tests_sha256()


def test_resume_regrades_everything_after_a_seed_change_and_says_why(graded, tmp_path):
    import shutil

    from grader.display import grading_summary

    out, _, wrong = graded
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    paths = [str(SOLUTIONS), str(STUBS), str(wrong)]
    summary = grade_many(paths, copy, Options(seed=6), resume=True)
    assert summary.skipped == [] and len(summary.written) == 3
    assert summary.regraded == {"solutions": "seed 5 -> 6", "exercises": "seed 5 -> 6", "wrong": "seed 5 -> 6"}
    assert all(json.loads(p.read_text())["seed"] == 6 for p in copy.glob("*.json"))
    assert "--resume regraded 3 with a score file already there: 3 seed 5 -> 6" in \
        grading_summary(summary.reports, 0, summary.seconds, str(copy), summary.regraded)
    # a file from before the fingerprint, or from other tests, is regraded too
    report = json.loads((copy / "solutions.json").read_text())
    report["tests_sha256"] = "0" * 64
    (copy / "solutions.json").write_text(json.dumps(report))
    summary = grade_many(paths, copy, Options(seed=6), resume=True)
    assert summary.regraded == {"solutions": "tests changed"} and sorted(summary.skipped) == ["exercises", "wrong"]


def test_atomic_write_leaves_no_temporary_files(tmp_path):
    path = tmp_path / "a.json"
    results.write_atomic(path, "{}")
    results.write_atomic(path, '{"x": 1}')
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]
    assert json.loads(path.read_text()) == {"x": 1}


def _pool_processes(pid: int) -> list[int]:
    """Children of `pid` that are multiprocessing pool processes (not its resource tracker)."""
    import os

    kids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    command = f.read()
            except (OSError, ValueError, IndexError):
                continue
            if parent == pid and b"spawn_main" in command:
                kids.append(int(entry))
    return kids


def test_a_dying_pool_process_loses_no_submission(tmp_path):
    """Kill a grading process in the middle of a run: every submission still gets its right score."""
    import os
    import signal
    import sys

    if not sys.platform.startswith("linux"):
        pytest.skip("reads /proc")
    killed = []

    def progress(report, done, total):
        if not killed:
            victims = _pool_processes(os.getpid())
            assert victims
            os.kill(victims[0], signal.SIGKILL)
            killed.append(victims[0])

    paths = [str(make_submission(tmp_path / "subs" / f"s{i}")) for i in range(6)]
    summary = grade_many(paths, tmp_path / "out", Options(seed=1), workers=2, progress=progress)
    assert killed
    assert len(summary.written) == 6
    for i in range(6):
        report = json.loads((tmp_path / "out" / f"s{i}.json").read_text())
        assert report["score"] == 100, report.get("submission_errors")


def test_version_1_0_files_are_still_read_and_an_unknown_version_is_refused(graded, tmp_path):
    """1.1 added optional fields only (tests_sha256, mistake, the gradebook's): a 1.0 file, as earlier
    graders wrote it, still validates and exports; a version this grader does not know is refused."""
    out, _, _ = graded
    report = json.loads((out / "wrong.json").read_text())
    assert report["schema_version"] == results.SCHEMA_VERSION == "1.5"  # 1.3 a public check's `output`, 1.4 `status`, 1.5 `counterexample`
    old = json.loads(json.dumps(report))
    old["schema_version"] = "1.0"
    old.pop("tests_sha256", None)
    for exercise in old["exercises"]:
        for test in exercise["tests"]:
            test.pop("mistake", None)
    assert results.validate(old) == []
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "wrong.json").write_text(json.dumps(old))
    assert load_score_dir(folder).problems == []
    old["schema_version"] = "2.0"
    assert results.validate(old) != []
    (folder / "wrong.json").write_text(json.dumps(old))
    assert load_score_dir(folder).problems != []


# -- the writer's and readers' schema check: a compiled predicate for valid files, jsonschema for the errors

def _small(report: dict) -> dict:
    """A real score file cut to a few exercises and tests (every kind of field kept): jsonschema checks its
    mutations in milliseconds."""
    small = json.loads(json.dumps(report))
    small["exercises"] = small["exercises"][:3]
    for e in small["exercises"]:
        e["tests"] = e["tests"][:1]
    return small


def _paths(value, where=()):
    yield where
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, where + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, where + (i,))


def _mutations(doc: dict):
    """Every field of `doc` replaced by values of other types and edge values, removed, and every object
    given an unknown key: valid and invalid documents, each once."""
    replacements = [None, True, False, 0, -1, 1.5, -0.5, float("nan"), "", "x", "X.py", "grad.py", "cpu",
                    "1.5", "a" * 64, "0" * 64, "mod.fn", [], [1], {}, {"id": "x", "en": "e", "zh": "z"}]
    for path in list(_paths(doc)):
        if not path:
            continue
        for new in replacements + ["drop", "extra"]:
            copy = json.loads(json.dumps(doc))
            parent = copy
            for step in path[:-1]:
                parent = parent[step]
            last = path[-1]
            if new == "drop":
                if isinstance(parent, dict):
                    del parent[last]
                else:
                    parent.pop(last)
            elif new == "extra":
                if not isinstance(parent[last], dict):
                    continue
                parent[last]["not_in_the_schema"] = 1
            else:
                parent[last] = new
            yield path, copy


def test_the_compiled_schema_check_agrees_with_jsonschema(graded):
    """The compiled check (every valid file's only check) says valid exactly where jsonschema finds no error,
    on each real file and on every mutation of every field of it."""
    from grader import score_files

    out, _, _ = graded
    check, validator = score_files._compiled_check(), score_files._jsonschema_validator()
    assert check is not None, "the score schema uses a keyword the compiled check does not know"
    compared = invalid = 0
    for path in sorted(out.glob("*.json")):
        report = json.loads(path.read_text())
        assert check(report) and not list(validator.iter_errors(report))
        for where, doc in _mutations(_small(report)):
            expected = not any(True for _ in validator.iter_errors(doc))
            assert check(doc) == expected, (path.name, where, doc)
            compared += 1
            invalid += not expected
    assert compared > 1000 and 100 < invalid < compared - 100  # both verdicts, many times each


def test_a_valid_file_is_not_given_to_jsonschema_and_an_invalid_one_is(graded, monkeypatch):
    from grader import score_files

    out, _, _ = graded
    report = json.loads((out / "solutions.json").read_text())
    asked = []
    real = score_files._jsonschema_validator
    monkeypatch.setattr(score_files, "_jsonschema_validator", lambda: asked.append(1) or real())
    assert results.validate(report) == [] and results.validate_if_possible(report) == [] and asked == []
    report["exercises"][0]["tests"][0]["status"] = "maybe"
    errors = results.validate(report)
    assert asked == [1] and len(errors) == 1 and "maybe" in errors[0] and errors[0].startswith("$.exercises[0].tests[0].status")
