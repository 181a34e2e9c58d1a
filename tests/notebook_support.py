"""Notebooks for the notebook tests: the exported one, with the reference pasted into its cells, and
the copies that break notebooks in practice (Colab-style, cells duplicated or deleted...)."""

from __future__ import annotations

import ast
import copy
import json
from pathlib import Path

from grader import catalog
from grader.exports.notebook import build_notebook

ROOT = Path(__file__).resolve().parent.parent


def exported() -> dict:
    return build_notebook(catalog.load())


def reference_parts() -> tuple[dict[str, str], dict[str, str]]:
    """(exercise -> its reference definition, module -> the reference's imports and helpers)."""
    definitions, rest = {}, {}
    for path in sorted((ROOT / "solutions").glob("*.py")):
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines(keepends=True)
        others = []
        for node in ast.parse(source).body:
            start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            segment = "".join(lines[start - 1:node.end_lineno])
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                definitions[node.name] = segment
            elif not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
                others.append(segment)
        rest[path.name] = "".join(others)
    return definitions, rest


def with_reference(nb: dict) -> dict:
    """The exported notebook with the reference pasted into its exercise and module cells."""
    nb = copy.deepcopy(nb)
    definitions, rest = reference_parts()
    for cell in nb["cells"]:
        if cell["id"].startswith("exercise-"):
            name = cell["id"].removeprefix("exercise-")
            cell["source"] = f"# exercise: {name}\n" + definitions[name]
        elif cell["id"].startswith("module-") and cell["id"].endswith("-code"):
            module = cell["id"].removeprefix("module-").removesuffix("-code") + ".py"
            cell["source"] = f"# module: {module}\n" + rest[module]
    return nb


def with_mistake(nb: dict, name: str) -> dict:
    """The reference notebook with one learner mistake of sample_submissions.WRONG pasted in a cell of
    its own at the end (the later definition wins, as the mistake's .py zip appends it)."""
    from sample_submissions import WRONG

    nb = copy.deepcopy(nb)
    for module, source in WRONG[name].items():
        exercise = next(n.name for n in ast.parse(source).body if isinstance(n, (ast.FunctionDef, ast.ClassDef)))
        assert catalog.load().exercise(exercise).module == module
        nb["cells"].append(code(f"# exercise: {exercise}\n{source.lstrip()}"))
    return nb


def colab_copy(nb: dict) -> dict:
    """What Colab and cleaning tools leave: no notebook metadata, no tags, no cell ids, no markers;
    plus a `!pip` cell, an `os.system` cell, a try-it cell and every exercise cell duplicated."""
    nb = copy.deepcopy(nb)
    nb["metadata"] = {}
    nb["nbformat_minor"] = 4
    cells = []
    for cell in nb["cells"]:
        cell.pop("id", None)
        cell["metadata"] = {}
        if cell["cell_type"] == "code":
            cell["source"] = "\n".join(line for line in cell["source"].splitlines()
                                       if not line.startswith(("# exercise:", "# module:")))
        cells.append(cell)
        if cell["cell_type"] == "code" and "def " in cell["source"]:
            cells.append(copy.deepcopy(cell))
    cells.insert(1, code("!pip install -q torch\n%matplotlib inline"))
    cells.insert(2, code("import os\nos.system('echo pwned > /tmp/notebook-pwned')"))
    cells.append(code("print(partial_grads(lambda a, b: (a * b).sum(), torch.ones(2), torch.ones(2)))\n"
                      "r = hvp(None, None, None)"))
    nb["cells"] = cells
    return nb


def code(source: str) -> dict:
    return {"cell_type": "code", "metadata": {}, "source": source, "execution_count": None, "outputs": []}


def write(nb: dict, path: Path) -> Path:
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path
