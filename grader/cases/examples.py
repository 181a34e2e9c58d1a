"""The examples in the stubs' docstrings, as data for the public docstring checks.

`grader check` runs every exercise's docstring examples (the `>>>` lines of the stubs) against the
student's code, as a public check without points. The examples come from the stubs as the course
wrote them, never from the student's copy (which the student may edit): in a source checkout they
are read from the course's stubs folder (the course file's `stubs:`); the student bundle and the
instructor zips carry them as `examples.json` beside the public tests, written at export time.
"""

from __future__ import annotations

import ast
import doctest
import json
from functools import lru_cache
from pathlib import Path

from grader import catalog as catalog_module

EXAMPLES_FILE = "examples.json"  # in the course's public folder, in exported copies only


def extract(stubs_dir: Path) -> dict[str, list[dict]]:
    """Exercise name -> its docstring's examples, [{source, want, line}] (line: in the stub's file), in order."""
    parser = doctest.DocTestParser()
    found: dict[str, list[dict]] = {}
    for path in sorted(stubs_dir.glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                doc = ast.get_docstring(node, clean=True) or ""
                examples = parser.get_examples(doc)
                if examples:
                    first = node.body[0].lineno  # the docstring's first line in the file
                    found[node.name] = [{"source": e.source, "want": e.want, "line": first + e.lineno}
                                        for e in examples]
    return found


def render(examples: dict[str, list[dict]]) -> str:
    return json.dumps(examples, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


def load(course: catalog_module.Catalog | None = None) -> dict[str, list[dict]]:
    """The course's examples: its examples.json where an export wrote one, else its stubs' docstrings."""
    course = course or catalog_module.load()
    return _load(course.folder("public") / EXAMPLES_FILE, course.place("stubs"))


@lru_cache(maxsize=8)
def _load(exported: Path, stubs: Path | None) -> dict[str, list[dict]]:
    if exported.is_file():
        return json.loads(exported.read_text(encoding="utf-8"))
    if stubs is not None and stubs.is_dir():
        return extract(stubs)
    return {}
