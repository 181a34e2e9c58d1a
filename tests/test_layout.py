"""The trust boundary in the layout: the import-linter contracts, and what import-linter cannot check.

pyproject.toml's contracts keep the sandboxed side (grader/sandboxed, grader/protocol) clear of
the host, the cases, the CLI and the exports, keep the hidden tests out of everything shipped,
keep the students' modules out of every static import, and lay the engine's packages out with
no cycle. Here: the contracts run and each one fails on a planted violation; the one place the
worker imports student code; the grader modules a worker holds; and that the trusted process
holds no student module after grading.
"""

from __future__ import annotations

import ast
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10: pytest's own dependency
    import tomli as tomllib

import pytest

from grader import catalog
import grader
from grader.host.student_code import StudentCode

from conftest import ROOT, SOLUTIONS, make_submission, venv_tool

PACKAGE = Path(grader.__file__).resolve().parent
CONTRACTS = {c["id"]: c for c in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]}


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """The venv's lint-imports on the grader package found at `root` (its pyproject.toml's contracts)."""
    tool = venv_tool("lint-imports")
    if tool is None:
        pytest.skip("lint-imports is not installed in this venv (the dev extra)")
    return subprocess.run([str(tool), "--no-cache"], cwd=root, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root), "HOME": str(root), "COLUMNS": "500"})


# ----------------------------------------------------------------------------- the contracts

def test_the_contracts_hold():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in result.stdout


def module_names(folder: Path) -> set[str]:
    """The modules and packages directly in a package's folder."""
    return {p.stem for p in folder.glob("*.py") if p.name != "__init__.py"} | \
        {p.name for p in folder.iterdir() if (p / "__init__.py").is_file()}


def test_the_contracts_name_every_module_and_the_catalogues_exercise_modules():
    """Two contracts list modules by hand: every module of the package must be a source of the
    hidden-tests one and forbidden to the sandboxed side (but the protocol), or a new module
    would escape them. The exercise modules are the catalogue's."""
    tops = {f"grader.{m}" for m in module_names(PACKAGE)}
    sources = set(CONTRACTS["hidden"]["source_modules"])
    assert tops - sources == {"grader.cases"}
    assert {f"grader.cases.{m}" for m in module_names(PACKAGE / "cases")} - sources == {"grader.cases.hidden"}
    assert tops - set(CONTRACTS["sandboxed"]["forbidden_modules"]) == {"grader.sandboxed", "grader.protocol"}
    helpers_forbidden = set(CONTRACTS["helpers"]["forbidden_modules"])
    assert tops - helpers_forbidden == {"grader.cases"}
    assert {f"grader.cases.{m}" for m in module_names(PACKAGE / "cases")} - helpers_forbidden == {"grader.cases.public"}
    assert CONTRACTS["exercises"]["forbidden_modules"] == [m.removesuffix(".py") for m in catalog.load().modules]


def test_the_course_helpers_are_the_module_the_helpers_contract_names():
    assert CONTRACTS["helpers"]["source_modules"] == ["grader.cases.public.helpers"]
    assert [h.relative_to(PACKAGE.parent).with_suffix("").as_posix().replace("/", ".")
            for h in catalog.load().helpers] == CONTRACTS["helpers"]["source_modules"]


PLANTS = {
    # contract id -> (file, the line planted in it)
    "sandboxed": ("sandboxed/helpers.py", "from grader.host import results"),
    "hidden": ("cases/kit.py", "from grader.cases.hidden import oracle"),
    "helpers": ("cases/public/helpers.py", "from grader.cases import kit"),
    "validate-layers": ("validate/lazy.py", "from grader.validate import audit"),
    "exercises": ("host/intake.py", "import grad"),
    "layers": ("protocol/wire.py", "import grader.sandboxed.seal"),
    "host-layers": ("host/distributed.py", "from grader.host import runner"),
    "sandboxed-layers": ("sandboxed/seal.py", "from grader.sandboxed import worker"),
    "similarity-layers": ("similarity/normalize.py", "from grader.similarity import index"),
}


@pytest.fixture(scope="module")
def checkout_copy(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("layout")
    shutil.copytree(PACKAGE, root / "grader", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", root)
    return root


@pytest.mark.parametrize("contract", sorted(PLANTS))
def test_each_contract_catches_a_planted_import(checkout_copy, contract):
    assert set(PLANTS) == set(CONTRACTS), "one planted violation per contract"
    path, line = PLANTS[contract]
    target = checkout_copy / "grader" / path
    original = target.read_text()
    target.write_text(original + f"\n{line}  # planted\n")
    try:
        result = lint_imports(checkout_copy)
    finally:
        target.write_text(original)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{CONTRACTS[contract]['name']} BROKEN" in result.stdout, result.stdout


# ----------------------------------------------------------------------------- what import-linter cannot check

DYNAMIC = {"__import__", "exec", "eval", "compile", "import_module", "exec_module", "load_module",
           "spec_from_file_location", "reload", "run_path", "run_module"}


def _called(node: ast.Call) -> str | None:
    f = node.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None


def _one_statement(node) -> bool:
    """compile(source, name, "single" or "eval"): one statement or expression (a docstring example),
    never a module's source."""
    if not (isinstance(node, ast.Call) and _called(node) == "compile"):
        return False
    mode = node.args[2] if len(node.args) > 2 else next((k.value for k in node.keywords if k.arg == "mode"), None)
    return isinstance(mode, ast.Constant) and mode.value in ("single", "eval")


def dynamic_imports(folder: Path) -> list[tuple[str, str, str]]:
    """(file, enclosing function, what) for every call that could import a module or run a module's
    source by name or text: the import functions, and exec or compile of anything but one statement."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        scopes: list[str] = []

        def visit(node):
            named = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            if named:
                scopes.append(node.name)
            if isinstance(node, ast.Call) and _called(node) in DYNAMIC and not _one_statement(node) \
                    and not (_called(node) == "exec" and node.args and _one_statement(node.args[0])):
                found.append((path.name, ".".join(scopes), _called(node)))
            for child in ast.iter_child_nodes(node):
                visit(child)
            if named:
                scopes.pop()

        visit(tree)
    return found


def test_student_modules_are_imported_in_one_function_of_the_worker():
    """...and the course's worker-side helpers are loaded, by path, in one function of the helpers' tables
    (before any student code runs: the zygote calls it, or a spawned worker before its first request)."""
    assert dynamic_imports(PACKAGE / "sandboxed") == [
        ("helpers.py", "load_course", "spec_from_file_location"), ("helpers.py", "load_course", "exec_module"),
        ("worker.py", "Worker._import_student_module", "import_module")]


def test_the_dynamic_import_check_sees_what_it_looks_for(tmp_path):
    (tmp_path / "m.py").write_text("import importlib\n\nclass C:\n    def f(self):\n        exec('1')\n\n"
                                   "def g():\n    return importlib.import_module('x'), __import__('y')\n\n"
                                   "def h(s):\n    exec(compile(s, 'm', 'single'), {})\n    compile(s, 'm', 'exec')\n")
    assert dynamic_imports(tmp_path) == [("m.py", "C.f", "exec"), ("m.py", "g", "import_module"),
                                         ("m.py", "g", "__import__"), ("m.py", "h", "compile")]


def test_a_worker_holds_only_sandboxed_and_protocol_modules(engine):
    """The zygote and its workers import the sandboxed side and the protocol, never the host's
    engine, the CLI, the cases or the exports (grader/__init__.py imports nothing)."""
    probe = b"import sys\ndef grader_modules():\n    return sorted(m for m in sys.modules if m.split('.')[0] == 'grader')\n"
    student = StudentCode({"grad.py": probe}, engine.launcher, {"grader_modules": "grad"}, engine.options.limits)
    try:
        result = student.call("grader_modules")
    finally:
        student.close()
    assert result.outcome == "returned", result.exception
    assert "grader.sandboxed.worker" in result.value
    assert [m for m in result.value if m != "grader" and not m.startswith(("grader.sandboxed", "grader.protocol"))] == []


PATCH_A_PROBE = """

import sys

sys.modules["grader.sandboxed.helpers_course_0"].probe_smooth_abs = lambda *args: ((args[1], args[1], args[1]), None)
"""

REWRITE_A_PROBE = """

import grader.sandboxed.helpers

grader.sandboxed.helpers.PROBES["smooth_abs"].__code__ = (lambda *args: ((args[1], args[1], args[1]), None)).__code__
"""


@pytest.mark.parametrize("patch, message", [
    (PATCH_A_PROBE, "changed the grader's code in the worker (grader.sandboxed.helpers_course_0.probe_smooth_abs)"),
    (REWRITE_A_PROBE, "the grader does not allow rewriting a function's __code__"),
])
def test_the_course_helpers_are_sealed_like_the_workers_own_code(engine, tmp_path, patch, message):
    """The course's probes are loaded by path, yet a submission that rebinds one is caught: the seal
    guards them (they are modules of the sandboxed side in the worker); rewriting one's code is refused
    (the worker's audit hook)."""
    source = (SOLUTIONS / "extensions.py").read_text() + patch
    report = engine.grade(make_submission(tmp_path / "sub", {"extensions.py": source}))
    course = catalog.load()
    extensions = set(course.exercises_in("extensions.py"))
    assert {e["name"] for e in report["exercises"] if e["score"] < e["max_score"]} == extensions
    messages = " ".join(t["message"] for e in report["exercises"] if e["name"] in extensions for t in e["tests"])
    assert message in messages


def student_modules(folder: Path) -> list[str]:
    """Modules in this process that are the catalogue's exercise modules or come from `folder`."""
    names = {m.removesuffix(".py") for m in catalog.load().modules}
    folder = folder.resolve()
    held = []
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if name in names or (isinstance(file, str) and Path(file).resolve().is_relative_to(folder)):
            held.append(name)
    return held


def test_the_trusted_process_holds_no_student_module_after_grading(engine, tmp_path):
    folder = make_submission(tmp_path / "sub")
    report = engine.grade(folder)
    assert report["score"] == report["max_score"]  # the student's code ran: in the workers
    assert student_modules(folder) == []
    assert student_modules(SOLUTIONS) == []


def test_the_student_module_check_finds_one(tmp_path):
    folder = make_submission(tmp_path / "sub")
    spec = importlib.util.spec_from_file_location("grad", folder / "grad.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["grad"] = module
    try:
        spec.loader.exec_module(module)
        assert student_modules(folder) == ["grad"]
    finally:
        del sys.modules["grad"]
