"""Classes for the tests of `grader report`, `grader feedback` and `grader diff`.

`hand_class()`: five score files written by hand, small enough that every figure of the report
can be computed on paper (the expected values are in tests/test_report_figures.py); each file is
valid against the score file schema.

`graded_class`: a real class graded by the engine: the reference, the stubs, three learner
mistakes, a syntax error, and a submission that tries to smuggle hidden inputs out through every
channel a student can see (printing, exception messages, type names, exit statuses).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from conftest import SOLUTIONS, STUBS, SUBMISSIONS, make_submission
from grader.host.results import score_file_name, validate
from sample_submissions import modules_of

# Reference with three functions replaced: each one sends its hidden arguments somewhere a
# student might read them back.
LEAKY_GRAD = (SOLUTIONS / "grad.py").read_text(encoding="utf-8") + '''

import os


def _values(x):
    return [round(float(a), 6) for a in x.detach().flatten()][:4]


def hvp(f, x, v):
    print("LEAKPRINT", _values(x), _values(v))
    raise ValueError(f"LEAKRAISE {_values(x)} {_values(v)}")


def jacobian_rows(f, x):
    name = "LEAKTYPE_" + "_".join(str(abs(int(1000 * a))) for a in _values(x))
    return type(name, (), {})()


def partial_grads(f, x, y):
    os._exit(1 + int(1000 * abs(_values(x)[0])) % 200)
'''
WRONG = ("hvp_sum_instead_of_v", "jacobian_rows_grad_of_sum", "grads_per_step_not_zeroed")


# ----------------------------------------------------------------------------- a class by hand

def test(name, visibility, max_score, status="passed", message="", mistake=None, hint=""):
    entry = {"name": name, "status": status, "score": max_score if status == "passed" else 0,
             "max_score": max_score, "visibility": visibility, "message": message, "duration_s": 0.01}
    if hint:
        entry["hint"] = hint
    if mistake:
        entry["mistake"] = mistake
    return entry


def score_file(name: str, a: list[dict], b: list[dict], duration_s: float, errors=(), **extra) -> dict:
    exercises = [
        {"name": "ex_a", "module": "graph.py", "tests": a},
        {"name": "ex_b", "module": "grad.py", "tests": b},
    ]
    for e in exercises:
        e["score"] = sum(t["score"] for t in e["tests"])
        e["max_score"] = sum(t["max_score"] for t in e["tests"])
    report = {
        "schema_version": "1.0", "submission": name,
        "score": sum(e["score"] for e in exercises), "max_score": sum(e["max_score"] for e in exercises),
        "device": "cpu", "torch_version": "2.13.0+cpu", "duration_s": duration_s, "grader_version": "0.1.0",
        "seed": 0, "submission_errors": list(errors), "sandbox": {"backend": "root-namespaces"},
        "exercises": exercises, **extra,
    }
    return report


M1 = {"id": "ex_a.m1", "en": "first mistake", "zh": "第一个错误"}
M2 = {"id": "ex_a.m2", "en": "second mistake", "zh": "第二个错误"}
IMPORT_ERROR = "graph.py could not be imported: SyntaxError: invalid syntax (graph.py, line 3)"
CRASH = "the worker process ended while a (it exited with status 3: os._exit or a fatal error in the student's code)"


def hand_class() -> list[dict]:
    """ex_a (4 points): a_pub 1 public, a_hid1 1.5 and a_hid2 1.5 hidden; ex_b (6 points): b_pub 2
    public, b_hid 4 hidden."""
    def a(pub="passed", hid1="passed", hid2="passed", **kw):
        return [test("a_pub", "visible", 1, pub, kw.get("m_pub", "")),
                test("a_hid1", "hidden", 1.5, hid1, kw.get("m_hid1", ""), kw.get("mistake1")),
                test("a_hid2", "hidden", 1.5, hid2, kw.get("m_hid2", ""), kw.get("mistake2"))]

    def b(pub="passed", hid="passed", m_hid="", m_pub=""):
        return [test("b_pub", "visible", 2, pub, m_pub), test("b_hid", "hidden", 4, hid, m_hid)]

    reports = [
        score_file("s1", a(hid2="failed", m_hid2="a has wrong values: second", mistake2=M2), b(), 1.0),
        score_file("s2", a(hid1="failed", hid2="failed", mistake1=M1, mistake2=M1, m_hid1="m1", m_hid2="m1"),
                   b(hid="failed", m_hid="b wrong / b 错"), 2.0),
        score_file("s3", a(pub="failed", hid1="timeout", hid2="error", m_pub="x has wrong values / x 的数值不对",
                           m_hid1="a did not return within 10.0 s", m_hid2=CRASH), b(), 3.0),
        score_file("s4", a("error", "error", "error", m_pub=IMPORT_ERROR, m_hid1=IMPORT_ERROR, m_hid2=IMPORT_ERROR),
                   b("error", "error", IMPORT_ERROR, IMPORT_ERROR), 4.0, errors=[IMPORT_ERROR]),
        score_file("s5", a(), b(), 10.0),
    ]
    for r in reports:
        assert validate(r) == [], validate(r)
    return reports


def write_class(reports: list[dict], folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for r in reports:
        (folder / score_file_name(r["submission"])).write_text(json.dumps(r, ensure_ascii=False), encoding="utf-8")
    return folder


def regraded(report: dict, **changes) -> dict:
    new = copy.deepcopy(report)
    new.update(changes)
    return new


# ----------------------------------------------------------------------------- a class graded for real

_GRADED: list[Path] = []  # each test module that imports the fixture has its own copy of it: grade once


@pytest.fixture(scope="session")
def graded_class(engine, tmp_path_factory) -> Path:
    """The score folder of a small real class (seed 0)."""
    if not _GRADED:
        _GRADED.append(grade_class(engine, tmp_path_factory.mktemp("report-class")))
    return _GRADED[0]


def grade_class(engine, root: Path) -> Path:
    out = root / "scores"
    out.mkdir()
    subs = {"reference": make_submission(root / "reference"), "stubs": make_submission(root / "stubs", base=STUBS),
            "leaky": make_submission(root / "leaky", {"grad.py": LEAKY_GRAD}),
            "syntax_error": make_submission(root / "syntax_error", {"graph.py": "def broken(:\n"})}
    for name in WRONG:
        source = (SUBMISSIONS / "wrong" / f"{name}.py").read_text(encoding="utf-8")
        module = next(line.split('"')[1] for line in source.splitlines() if line.startswith("MODULE"))
        subs[f"wrong-{name}"] = make_submission(root / name, modules_of(SOLUTIONS, {module: "\n\n" + source}))
    for name, folder in subs.items():
        report = engine.grade(folder, name=name)
        (out / score_file_name(name)).write_text(json.dumps(report, ensure_ascii=False), encoding="utf-8")
    return out


def load_folder(folder: Path) -> dict[str, dict]:
    return {r["submission"]: r for r in (json.loads(p.read_text(encoding="utf-8")) for p in sorted(folder.glob("*.json")))}
