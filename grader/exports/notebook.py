"""`grader export notebook`: the problem set as one Jupyter notebook, made from the stubs and the course.

Never edited by hand: made from the course file (its modules, their lecture topics, its exercises)
and the stubs. The notebook holds, in order: a set-up cell that installs the student package where it
is missing (Colab; from the URL or file the instructor names with `--install`) and imports the check;
per module a bilingual section (the stub's module docstring) and a cell with the stub's imports and
helpers (marker `# module: grad.py`, tag `module:grad.py`); per exercise its docstring as Markdown,
its stub as a code cell (marker `# exercise: hvp`, tag `exercise:hvp`) and a check cell
(`check("hvp")`); at the end `check()` for all and `submit()`. The notebook metadata names the
course's name and version and the grader version (`grader.host.cells.METADATA_KEY`); the course and its
version are checked when the notebook is graded.

Cell ids are stable (`exercise-hvp`), so the same course gives the same bytes. A course made with
`--course` gets its own notebook with no change here.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from grader import catalog as catalog_module
from grader.errors import UsageError
from grader.exports.bundle import add_course_option
from grader.host.cells import METADATA_KEY

NOTEBOOK_NAME = "autograd_lab.ipynb"
DEFAULT_INSTALL = "autograd-lab-student.zip"  # the student bundle, uploaded beside the notebook

SETUP_SOURCE = '''\
# Set-up / 准备: installs the grader's student package where it is missing (Colab), then imports the checks.
# 若环境中没有评分程序的学生包（如 Colab），先安装它，再导入检查函数。
import importlib.util, subprocess, sys
if importlib.util.find_spec("grader") is None:
    subprocess.check_call([sys.executable, "-m", "pip", "install", "-q", {install!r}])
from grader.notebook import check, submit
'''

INTRO = """\
# {course}: the problem set / 习题

Fill in each exercise's code cell (the cells that begin with `# exercise: ...`), run it, then run the
check cell under it: `check("name")` runs the public checks on the code the kernel has run, in a
sandbox, and shows a table. `check()` checks everything. Your grade also uses hidden tests with
other, random inputs, so follow each docstring's conventions. Keep the first line of each exercise
cell; helpers and imports may go in any cell. When done, run `submit()` and hand in the file it
writes (or this notebook, as your course says).

在每个习题的代码单元格（以 `# exercise: ...` 开头）中完成代码并运行，然后运行其下方的检查单元格：
`check("名称")` 在沙箱中对内核已运行的代码执行公开检查并显示结果表，`check()` 检查全部习题。
评分时还会用其他随机输入运行隐藏测试，所以请遵守每个文档字符串中的约定。请保留每个习题单元格的第一行；
辅助函数和导入可以写在任何单元格中。完成后运行 `submit()`，按课程要求提交它生成的文件（或本 notebook）。

Run the set-up cell below first. / 请先运行下面的准备单元格。
"""


def register(commands, exports) -> None:
    p = exports.add_parser("notebook", help="the problem set as a Jupyter/Colab notebook, made from the stubs")
    p.add_argument("--out", type=Path, default=Path(NOTEBOOK_NAME), help=f"the .ipynb to write (default: {NOTEBOOK_NAME})")
    p.add_argument("--install", default=DEFAULT_INSTALL, metavar="URL_OR_FILE",
                   help="where the set-up cell installs the student package from, where it is missing "
                        f"(a URL of the student bundle, or a file beside the notebook; default: {DEFAULT_INSTALL})")
    add_course_option(p)
    p.set_defaults(func=cmd_export_notebook)


def cmd_export_notebook(args) -> int:
    course = catalog_module.use(args.course)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(notebook_text(course, args.install), encoding="utf-8")
    print(f"wrote {out}: {len(course.modules)} modules, {len(course.exercises)} exercises, with their checks")
    return 0


def notebook_text(course: catalog_module.Catalog | None = None, install: str = DEFAULT_INSTALL) -> str:
    """The notebook's file content (nbformat 4.5 JSON)."""
    return json.dumps(build_notebook(course or catalog_module.load(), install), indent=1, ensure_ascii=False) + "\n"


def build_notebook(course: catalog_module.Catalog, install: str = DEFAULT_INSTALL) -> dict:
    import grader

    stubs = course.place("stubs")
    if stubs is None or not stubs.is_dir():
        raise UsageError(f"{course.path}: the course's stubs folder ({stubs}) is not there")
    cells = [markdown("intro", INTRO.format(course=course.name)), code("setup", SETUP_SOURCE.format(install=install), ["setup"])]
    for module in course.modules:
        cells += module_cells(course, module, (stubs / module).read_text(encoding="utf-8"))
    cells += [markdown("all", "## Everything / 全部习题\n\nEvery public check, then the file to hand in. "
                              "/ 运行全部公开检查，然后生成要提交的文件。"),
              code("check-all", "check()", ["check"]), code("submit", "submit()", ["submit"])]
    metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                "language_info": {"name": "python"},
                METADATA_KEY: {"course": course.name, "version": course.version, "grader_version": grader.__version__,
                               "modules": course.modules}}
    notebook = {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}
    _validate(notebook)
    return notebook


def module_cells(course: catalog_module.Catalog, module: str, source: str) -> list[dict]:
    """A module's section: its docstring, its imports and helpers, then each exercise's three cells."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    exercises = set(course.exercises_in(module))
    lecture = course.module_info.get(module, {}).get("lecture", "")
    stem = module.removesuffix(".py")
    cells = [markdown(f"module-{stem}", f"## `{module}`" + (f": {lecture}" if lecture else "") + "\n\n"
                      + rst_to_markdown(ast.get_docstring(tree) or ""))]
    definitions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name in exercises}
    skip = {id(n) for n in definitions.values()}
    if tree.body and _is_docstring(tree.body[0]):
        skip.add(id(tree.body[0]))
    preamble = "".join(_segment(lines, n) for n in tree.body if id(n) not in skip)
    cells.append(code(f"module-{stem}-code", f"# module: {module}\n" + preamble.strip() + "\n", [f"module:{module}"]))
    for name in course.exercises_in(module):
        node = definitions.get(name)
        if node is None:
            raise UsageError(f"{module}: the stub defines no {name} at its top level")
        cells += [markdown(f"doc-{name}", f"### `{name}`\n\n" + rst_to_markdown(ast.get_docstring(node) or "")),
                  code(f"exercise-{name}", f"# exercise: {name}\n" + _segment(lines, node).strip() + "\n", [f"exercise:{name}"]),
                  code(f"check-{name}", f'check("{name}")', ["check"])]
    return cells


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _segment(lines: list[str], node: ast.stmt) -> str:
    start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return "".join(lines[start - 1:node.end_lineno]) + "\n"


def rst_to_markdown(text: str) -> str:
    """A docstring as Markdown: ``code`` as `code`; each doctest example (from `>>>` to the next blank
    line) as a Python code block."""
    out, in_example = [], False
    for line in text.splitlines():
        if line.lstrip().startswith(">>>") and not in_example:
            out.append("```python")
            in_example = True
        elif in_example and not line.strip():
            out.append("```")
            in_example = False
        out.append(line if in_example else re.sub(r"``([^`]+)``", r"`\1`", line))
    if in_example:
        out.append("```")
    return "\n".join(out).strip() + "\n"


def markdown(cell_id: str, text: str) -> dict:
    return {"cell_type": "markdown", "id": cell_id, "metadata": {}, "source": text}


def code(cell_id: str, text: str, tags: list[str]) -> dict:
    return {"cell_type": "code", "id": cell_id, "metadata": {"tags": tags}, "source": text,
            "execution_count": None, "outputs": []}


def _validate(notebook: dict) -> None:
    try:
        import nbformat
    except ImportError:
        return  # the format is checked by the test suite, which has nbformat
    nbformat.validate(nbformat.from_dict(notebook))
