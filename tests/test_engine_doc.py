"""docs/engine.md names real code: every module and function of its path exists, and every package points to it."""

from __future__ import annotations

import ast
import re
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "engine.md"
HOP = re.compile(r"^\| (\d+) \| [^|]+ \| `([^`]+)` \| `([^`]+)` \|")


def hops() -> list[tuple[int, str, str]]:
    return [(int(m[1]), m[2], m[3]) for line in PAGE.read_text(encoding="utf-8").splitlines()
            if (m := HOP.match(line))]


@lru_cache(maxsize=None)
def definitions(path: Path) -> set[str]:
    """Every top-level function and class of a module, and every `Class.method`."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            names |= {f"{node.name}.{n.name}" for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def test_the_path_is_numbered_without_gaps():
    numbers = [n for n, _, _ in hops()]
    assert len(numbers) > 20
    assert numbers == list(range(1, len(numbers) + 1))


@pytest.mark.parametrize("number, module, function", hops())
def test_every_hop_names_a_module_and_function_that_exist(number, module, function):
    path = ROOT / module
    assert path.is_file(), f"hop {number}: {module} does not exist"
    assert function in definitions(path), f"hop {number}: {module} defines no {function}"


def test_every_path_and_dotted_name_on_the_page_exists():
    text = PAGE.read_text(encoding="utf-8")
    for path in set(re.findall(r"`((?:grader|tests|bench)/[\w/.]+)`", text)):
        assert (ROOT / path).exists(), path
    for dotted in set(re.findall(r"`(grader(?:\.\w+)+)`", text)):
        assert _resolves(dotted), dotted


def _resolves(dotted: str) -> bool:
    """A package, a module, or a name defined in a module (`grader.host.runner.Engine`)."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:i])
        module = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
        if module.is_file():
            rest = ".".join(parts[i:])
            return not rest or rest in definitions(module)
    return False


def test_every_package_points_to_the_page():
    for init in sorted((ROOT / "grader").rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert "docs/engine.md" in doc, f"{init.relative_to(ROOT)}: its docstring does not point to docs/engine.md"


@pytest.mark.parametrize("page", ["README.md", "docs/engine.md"])
def test_the_sample_test_is_a_real_test_of_the_cases(page):
    text = (ROOT / page).read_text(encoding="utf-8")
    samples = [block for block in re.findall(r"```python\n(.*?)```", text, re.S) if "def test_" in block]
    assert samples, f"{page} shows no sample test"
    cases = [p.read_text(encoding="utf-8") for p in (ROOT / "grader" / "cases").rglob("test_*.py")]
    for sample in samples:
        assert any(sample.strip() in case for case in cases), f"{page}: the sample test is not one of grader/cases/"
