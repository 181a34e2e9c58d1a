"""The examples in the stubs' docstrings, as data for the public docstring checks.

`grader check` runs every exercise's docstring examples (the `>>>` lines of exercises/*.py) against
the student's code, as a public check without points. The examples come from the stubs as the course
wrote them, not from the student's copy (which the student may edit): `examples.json` beside the
public tests holds them, and ships with the grader. After changing a stub's docstring, run

    python -m grader.cases.examples        # rewrites grader/cases/public/examples.json

(the test suite fails while the file and the stubs disagree).
"""

from __future__ import annotations

import ast
import doctest
import json
import sys
from pathlib import Path

EXAMPLES_FILE = Path(__file__).parent / "public" / "examples.json"
STUBS_DIR = Path(__file__).resolve().parents[2] / "exercises"


def extract(stubs_dir: Path = STUBS_DIR) -> dict[str, list[dict]]:
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


def load() -> dict[str, list[dict]]:
    return json.loads(EXAMPLES_FILE.read_text(encoding="utf-8"))


if __name__ == "__main__":
    EXAMPLES_FILE.write_text(render(extract()), encoding="utf-8")
    print(f"wrote {EXAMPLES_FILE} ({sum(len(v) for v in load().values())} examples)", file=sys.stderr)
