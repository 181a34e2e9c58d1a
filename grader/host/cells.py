"""Exercise modules out of a notebook's code cells: parsing only, never running a cell.

A hand-in notebook (`.ipynb`) and the cells a student's kernel has run both come here as a list of
cells. Each cell is labelled by its marker line (`# exercise: hvp`, `# module: grad.py`) or, where
the marker was edited away, by its tag (`exercise:hvp`, `module:grad.py`). A module's source is made
of its labelled cells and every unlabelled cell, in the notebook's order; where no cell of the
notebook is labelled (a copy whose metadata, tags and markers are gone), of every code cell in order,
as the kernel would run them top to bottom. The last definition of a name wins, as in the kernel.

Only what defines something is kept: imports (hoisted to the top, so that reordered cells still
import before they define; an import that fails is skipped), `def`, `class` and assignments (an
assignment that raises is skipped). Everything else at a cell's top level (calls that try a
function, prints, `os.system(...)`, loops) is dropped, and IPython magics and `!` lines are turned
into calls by IPython's own transformer (a line-based fallback drops them where IPython is missing),
so they are dropped too. Imports of the grader itself (the check cells) are dropped. Outputs are never
read. A cell that does not parse is skipped with a message. Nothing here runs a cell: the modules
are text, graded in the sandbox like any other. `Extracted.cell_line` leads a line of a module made
here back to the cell and line that wrote it (a notebook check's tracebacks name cells, not modules).

`read_notebook` reads an `.ipynb` within size and cell limits, validates it with nbformat where
installed (a JSON reader otherwise, so students need no nbformat for `grader submit`), and checks the
assignment's identity from the notebook metadata written by `grader export notebook`.
"""

from __future__ import annotations

import ast
import bisect
import functools
import json
import re
from dataclasses import dataclass, field

from grader import catalog

MAX_NOTEBOOK_BYTES = 64 * 1024 * 1024  # outputs of many megabytes are read, never kept
MAX_CELLS = 20_000
MAX_CELL_BYTES = 256 * 1024
MAX_PROBLEMS = 5  # messages about single cells; the rest are counted
METADATA_KEY = "autograd_lab"  # notebook metadata: {"course": name, "version": ..., "grader_version": ...}
MARKER = re.compile(r"^\s*#\s*(exercise|module)\s*:\s*([A-Za-z_][\w.]*)\s*$")
TAG = re.compile(r"^(exercise|module):([A-Za-z_][\w.]*)$")
KEPT_IMPORTS = (ast.Import, ast.ImportFrom)
KEPT_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
KEPT_ASSIGNMENTS = (ast.Assign, ast.AnnAssign, ast.AugAssign)


@dataclass
class Cell:
    index: int  # 1-based position among the notebook's cells (or the kernel's run order)
    source: str
    id: str | None = None
    tags: tuple[str, ...] = ()


@dataclass
class Extracted:
    modules: dict[str, bytes] = field(default_factory=dict)
    origins: dict[str, dict] = field(default_factory=dict)  # exercise -> {cell, id, found_by}
    problems: list[str] = field(default_factory=list)
    undefined: dict[str, str] = field(default_factory=dict)  # exercise of a module made here that no cell defines -> its problem
    written: dict[str, list] = field(default_factory=dict, repr=False)  # module -> [(cell, statement)] in it
    # module -> sorted (line in the module, cell, line in the cell, last line of its statement in the
    # module), for each line of the module where a node of a cell's statement starts (`_places`); made
    # when first asked for (8 ms a notebook: a check's tracebacks need it, a hand-in's grading does not)
    places: dict[str, list[tuple[int, int, int, int]]] = field(default_factory=dict, repr=False)

    def cell_line(self, module: str, line: int) -> tuple[int, int] | None:
        """(cell, line in that cell) of a line of one of the modules made here; None for a line no cell
        wrote (the header, the imports gathered at the top). A line inside a node counts from the line
        where the node starts: the module is the cells' code re-written, with the same nodes."""
        if module not in self.places and module in self.modules:
            self.places[module] = _places(self.modules[module].decode(), self.written.get(module, []))
        places = self.places.get(module, [])
        at = bisect.bisect_right(places, (line, float("inf"))) - 1
        if at < 0 or line > places[at][3]:
            return None
        start, cell, cell_line, _ = places[at]
        return cell, cell_line + line - start


class NotANotebook(ValueError):
    """The file cannot be read as a notebook (malformed, truncated, too large, another format)."""


# ----------------------------------------------------------------------------- reading a .ipynb

def read_notebook(data: bytes, name: str = "notebook.ipynb") -> tuple[list[Cell], dict, list[str]]:
    """(code cells, notebook metadata, problems) of an .ipynb's bytes; NotANotebook when unreadable."""
    if len(data) > MAX_NOTEBOOK_BYTES:
        raise NotANotebook(f"{name} is larger than {MAX_NOTEBOOK_BYTES // 2**20} MiB / {name} 超过 "
                           f"{MAX_NOTEBOOK_BYTES // 2**20} MiB")
    try:
        nb = json.loads(data.decode("utf-8", errors="replace"))
    except json.JSONDecodeError as exc:
        raise NotANotebook(f"{name} is not a notebook: its JSON is malformed or truncated (line {exc.lineno}: "
                           f"{exc.msg}) / {name} 不是有效的 notebook：JSON 格式错误或文件不完整") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells", nb.get("worksheets")), list):
        raise NotANotebook(f"{name} is not a notebook: no list of cells / {name} 不是 notebook：没有单元格列表")
    problems = _validate(nb, name)
    nb = _as_version_4(nb, name)
    raw_cells = nb.get("cells") or []
    if len(raw_cells) > MAX_CELLS:
        raise NotANotebook(f"{name} has {len(raw_cells)} cells (at most {MAX_CELLS}) / 单元格过多")
    cells = []
    for index, raw in enumerate(raw_cells, start=1):
        if not isinstance(raw, dict) or raw.get("cell_type") != "code":
            continue
        source = raw.get("source", "")
        source = "".join(s for s in source if isinstance(s, str)) if isinstance(source, list) else source
        if not isinstance(source, str):
            continue
        meta = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
        tags = meta.get("tags") if isinstance(meta.get("tags"), list) else []
        cells.append(Cell(index=index, source=source, id=raw.get("id") if isinstance(raw.get("id"), str) else None,
                          tags=tuple(t for t in tags if isinstance(t, str))))
    metadata = nb.get("metadata") if isinstance(nb.get("metadata"), dict) else {}
    return cells, metadata, problems


def _validate(nb: dict, name: str) -> list[str]:
    """nbformat's validation, as a note: a notebook that fails it is still read where its cells can be."""
    try:
        import nbformat
    except ImportError:
        return []
    try:
        nbformat.validate(nbformat.from_dict(nb), version=nb.get("nbformat"))
    except Exception as exc:  # ValidationError, an unknown version...
        first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
        return [f"{name} does not follow the notebook format ({first}); its code cells were read as far as possible "
                f"/ {name} 不完全符合 notebook 格式，已尽量读取其代码单元格"]
    return []


def _as_version_4(nb: dict, name: str) -> dict:
    """nbformat 4.x is read as it is; an older one is converted by nbformat where installed."""
    if nb.get("nbformat") == 4 or "cells" in nb:
        return nb
    try:
        import nbformat

        return nbformat.convert(nbformat.from_dict(nb), 4)
    except Exception as exc:
        raise NotANotebook(f"{name}: nbformat {nb.get('nbformat')} cannot be read ({type(exc).__name__}); save it "
                           f"again with Jupyter / 无法读取该 notebook 版本，请用 Jupyter 重新保存") from None


def identity_problem(metadata: dict, course: catalog.Catalog, name: str) -> str | None:
    """Why this notebook is another assignment's (another course's, or another version's of this
    course), from its metadata; None when it is this one's or says nothing (a copy whose metadata was
    cleaned is graded on its code; so is one written before versions were recorded)."""
    mine = metadata.get(METADATA_KEY)
    if not isinstance(mine, dict) or "course" not in mine:
        return None
    theirs = str(mine.get("course"))[:80]
    if theirs != course.name:
        return (f"{name} is the notebook of another assignment ({theirs!r}, not {course.name!r}): it was not graded; "
                f"hand in this course's notebook / {name} 是另一份作业（{theirs!r}，而非 {course.name!r}）的 notebook，"
                f"未评分；请提交本课程的 notebook")
    version = str(mine.get("version") or "")[:40]
    if version and course.version and version != course.version:
        return (f"{name} is the notebook of version {version!r} of {course.name!r}, not of this version "
                f"({course.version!r}): it was not graded; hand in the notebook of this version / {name} 是 "
                f"{course.name!r} 第 {version!r} 版的 notebook，而非本版（{course.version!r}），未评分；请提交本版的 notebook")
    return None


# ----------------------------------------------------------------------------- cells to modules

def extract(cells: list[Cell], course: catalog.Catalog | None = None, name: str = "the notebook") -> Extracted:
    """The course's modules made from these code cells (see the module docstring)."""
    course = course or catalog.load()
    out = Extracted()
    exercise_module = {e.name: e.module for e in course.exercises}
    parsed = []  # (cell, module label or None, found_by, statements)
    skipped = 0
    for cell in cells:
        module, found_by = _label(cell, exercise_module, course.modules)
        try:
            statements = parsed_cell(cell.source[:MAX_CELL_BYTES])
        except (SyntaxError, ValueError) as exc:
            skipped += 1
            if len(out.problems) < MAX_PROBLEMS:
                where = f" ({found_by} {module})" if module else ""
                out.problems.append(f"{name}: cell {cell.index}{where} does not parse, skipped: "
                                    f"{type(exc).__name__}: {getattr(exc, 'msg', str(exc))[:120]} (line {getattr(exc, 'lineno', '?')}) "
                                    f"/ 第 {cell.index} 个单元格有语法错误，已跳过")
            continue
        parsed.append((cell, module, found_by, statements))
    if skipped > MAX_PROBLEMS:
        out.problems.append(f"{name}: {skipped - MAX_PROBLEMS} more cells do not parse, skipped / 另有 "
                            f"{skipped - MAX_PROBLEMS} 个单元格有语法错误")
    labelled = any(module for _, module, _, _ in parsed)
    futures = sorted({alias.name for _, _, _, body in parsed for node in body
                      if isinstance(node, ast.ImportFrom) and node.module == "__future__" for alias in node.names})
    imports = list({ast.dump(node): node for _, _, _, body in parsed for node in body if _kept_import(node)}.values())
    for module in course.modules:
        cells_in = [(cell, found_by, body) for cell, label, found_by, body in parsed
                    if not labelled or label in (None, module)]
        body, defined, written = [], {}, []
        for cell, found_by, statements in cells_in:
            kept = [node for node in statements if isinstance(node, KEPT_DEFINITIONS + KEPT_ASSIGNMENTS)]
            body += [_guarded(node) for node in kept]
            written += [(cell, node) for node in kept]
            for node in kept:
                for bound in _bound_names(node):
                    defined[bound] = {"cell": cell.index, "id": cell.id, "found_by": found_by}
        mine = [e for e, m in exercise_module.items() if m == module]
        if not any(e in defined for e in mine):
            continue
        for exercise in mine:
            if exercise in defined:
                out.origins[exercise] = defined[exercise]
            else:
                out.undefined[exercise] = f"{name}: no cell defines {exercise}: its tests score 0 / 没有单元格定义 {exercise}"
                out.problems.append(out.undefined[exercise])
        out.modules[module] = module_source(futures, imports, body, name).encode()
        out.written[module] = written
    return out


def _places(text: str, written: list[tuple[Cell, ast.stmt]]) -> list[tuple[int, int, int, int]]:
    """Where each cell's statements went in the module `text` (see `Extracted.places`): the module
    parsed again ends with those statements, in order, each with the same nodes as in its cell (a
    guarded assignment inside its try), so that walking both side by side pairs their lines."""
    statements = ast.parse(text).body[-len(written):] if written else []
    places = {}
    for (cell, node), statement in zip(written, statements):
        inner = statement.body[0] if isinstance(statement, ast.Try) and not isinstance(node, ast.Try) else statement
        for old, new in zip(ast.walk(node), ast.walk(inner)):
            if type(old) is not type(new):
                break
            if isinstance(old, (ast.stmt, ast.expr)):
                places.setdefault(new.lineno, (new.lineno, cell.index, old.lineno, statement.end_lineno))
    return sorted(places.values())


@functools.lru_cache(maxsize=4096)
def parsed_cell(source: str) -> tuple[ast.stmt, ...]:
    """A cell's top-level statements, parsed once per distinct source: a notebook's checks re-read
    every cell the kernel has run, most of them unchanged since the last check. The nodes are
    shared between calls, so nothing here or in `extract` may change them."""
    return tuple(ast.parse(python_source(source)).body)


def python_source(source: str) -> str:
    """A cell's code as Python: IPython's transformer turns magics and `!` lines into calls (which
    are then dropped as top-level calls); without IPython, such lines are dropped here."""
    transformer = _transformer()
    if transformer is None:
        lines = source.splitlines()
        if lines and lines[0].lstrip().startswith("%%"):
            return ""
        return "\n".join("" if line.lstrip().startswith(("!", "%")) else line for line in lines)
    return transformer.transform_cell(source)


_TRANSFORMER = []


def _transformer():
    """IPython's TransformerManager, made once; None without IPython."""
    if not _TRANSFORMER:
        try:
            from IPython.core.inputtransformer2 import TransformerManager
        except ImportError:
            _TRANSFORMER.append(None)
        else:
            _TRANSFORMER.append(TransformerManager())
    return _TRANSFORMER[0]


def _label(cell: Cell, exercise_module: dict[str, str], modules: list[str]) -> tuple[str | None, str]:
    """(module, "marker"|"tag") of a labelled cell; (None, "order") of any other."""
    first = next((line for line in cell.source.splitlines() if line.strip()), "")
    found = [("marker", MARKER.match(first))] + [("tag", TAG.match(t)) for t in cell.tags]
    for found_by, match in found:
        if match:
            kind, value = match.groups()
            module = exercise_module.get(value) if kind == "exercise" else (value if value in modules else None)
            if module:
                return module, found_by
    return None, "order"


def _kept_import(node: ast.stmt) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.module != "__future__" and (node.level or 0) == 0 and not _grader(node.module or "")
    return isinstance(node, ast.Import) and not any(_grader(alias.name) for alias in node.names)


def _grader(module: str) -> bool:
    return module == "grader" or module.startswith("grader.")


def _guarded(node: ast.stmt) -> ast.stmt:
    """An assignment that raises (a try-it cell's `r = f(x)`) is skipped, as its own statement."""
    if isinstance(node, KEPT_DEFINITIONS):
        return node
    return ast.Try(body=[node], handlers=[ast.ExceptHandler(type=ast.Name("Exception", ast.Load()), name=None,
                                                            body=[ast.Pass()])], orelse=[], finalbody=[])


def _bound_names(node: ast.stmt) -> list[str]:
    if isinstance(node, KEPT_DEFINITIONS):
        return [node.name]
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


def module_source(futures: list[str], imports: list[ast.stmt], body: list[ast.stmt], name: str) -> str:
    """The text of a module: its `from __future__` line, the notebook's imports (each skipped if it
    fails), then its definitions in the cells' order."""
    guarded_imports = [ast.Try(body=[node], handlers=[ast.ExceptHandler(type=ast.Name("ImportError", ast.Load()),
                                                                        name=None, body=[ast.Pass()])],
                               orelse=[], finalbody=[]) for node in imports]
    tree = ast.Module(body=guarded_imports + body, type_ignores=[])
    header = f"# Made by the grader from the code cells of {' '.join(name.split())[:200]} (parsing only; nothing was run).\n"
    future = f"from __future__ import {', '.join(futures)}\n" if futures else ""
    return future + header + ast.unparse(ast.fix_missing_locations(tree)) + "\n"
