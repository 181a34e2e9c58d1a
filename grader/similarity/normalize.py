"""What a student wrote for each exercise, normalised so that disguise does not hide a copy.

A module is parsed with `ast` (never run). Each exercise is the last top-level definition of its
name (a later definition replaces an earlier one, as Python does); a class exercise is its methods.
Normalised: docstrings and comments dropped, whitespace and parentheses canonical (`ast.unparse`),
every name the student chose becomes `V` (attributes and keywords, the API, stay), every literal
but True/False/None becomes `C`, `a += b` becomes `a = a + b`, `torch.add(a, b)` and `a.add(b)`
become `a + b` (likewise sub, mul, div, matmul, pow), and a one-line helper of the module
(`return EXPR`) is inlined where it is called; a longer helper's statements join the exercise.
Each statement, with the kinds of the blocks around it, is one unit: units are compared as a set,
so the order of statements does not matter. Given the module's text, a statement without blocks is
normalised once per process for its lines, its place in them and the module's helpers and imports:
the many hand-ins that write it the same way get its text from `_TEXTS`.
"""

from __future__ import annotations

import ast
import builtins
import copy
from dataclasses import dataclass

OPERATORS = {"add": ast.Add, "sub": ast.Sub, "subtract": ast.Sub, "mul": ast.Mult, "multiply": ast.Mult,
             "div": ast.Div, "divide": ast.Div, "true_divide": ast.Div, "matmul": ast.MatMult, "pow": ast.Pow}
KEPT_NAMES = frozenset(dir(builtins)) | {"torch", "math", "np", "numpy", "functools", "itertools"}
MAX_INLINE_DEPTH = 3
MAX_TEXTS = 50_000  # statements remembered (then all forgotten at once: memory stays bounded, ~10 MB)
_TEXTS: dict[tuple, tuple[str, tuple[str, ...]]] = {}  # key -> (normal text, helpers it calls)
_CONTEXTS: dict[tuple, int] = {}  # a module's helpers and imports -> a small number for the keys


@dataclass(frozen=True)
class Unit:
    """One normalised statement: its canonical text, and the lines of the source it came from."""
    text: str
    first_line: int
    last_line: int


def parse(source: str) -> ast.Module:
    """The module's tree; SyntaxError (or ValueError for NUL bytes) when it does not parse."""
    return ast.parse(source)


def exercise_units(tree: ast.Module, names: tuple[str, ...], source: str | None = None) -> dict[str, list[Unit]]:
    """name -> the normalised units of that exercise, for each of `names` the module defines (`source`,
    the text `tree` was parsed from, lets statements written the same way be normalised once)."""
    definitions = _top_level_definitions(tree)
    helpers = {n: d for n, d in definitions.items() if n not in names and isinstance(d, ast.FunctionDef)}
    aliases = _import_aliases(tree)
    memo = None if source is None or "\r" in source else _Memo(source, helpers, aliases)
    found = {}
    for name in names:
        node = definitions.get(name)
        if node is not None:
            found[name] = _units_of(node, helpers, aliases, memo)
    return found


class _Memo:
    """The key of a statement without blocks in `_TEXTS`: its whole lines and offsets in them (which
    determine its tree) and the module's context (the text of its helpers, its imports), which with the
    tree determine its normal text. Lines are split as the parser splits them (no "\r" in the text)."""

    def __init__(self, source: str, helpers: dict[str, ast.FunctionDef], aliases: dict[str, str]):
        self.lines = source.split("\n")
        context = (tuple(sorted(aliases.items())),
                   tuple((n, self.text(h)) for n, h in sorted(helpers.items())))
        self.context = _CONTEXTS.setdefault(context, len(_CONTEXTS))
        if len(_CONTEXTS) > MAX_TEXTS:
            _CONTEXTS.clear()
            _TEXTS.clear()

    def text(self, node: ast.AST) -> str:
        return "\n".join(self.lines[node.lineno - 1:node.end_lineno])

    def key(self, stmt: ast.stmt) -> tuple:
        return self.context, self.text(stmt), stmt.col_offset, stmt.end_col_offset


def _top_level_definitions(tree: ast.Module) -> dict[str, ast.AST]:
    definitions: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            definitions[node.name] = node  # the last one wins, as at run time
    return definitions


def _import_aliases(tree: ast.Module) -> dict[str, str]:
    """`import torch as T` -> {"T": "torch"}; `from torch import autograd` -> {"autograd": "torch.autograd"}."""
    aliases = {}
    for node in _statements(tree.body):
        if isinstance(node, ast.Import):
            for a in node.names:
                aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    return aliases


def _statements(body: list[ast.stmt]):
    """Every statement of a block and of the blocks inside it (imports are statements: walking the
    statements alone, not every expression node, finds them all)."""
    for node in body:
        yield node
        for f in ("body", "orelse", "finalbody"):
            inner = getattr(node, f, None)
            if isinstance(inner, list):
                yield from _statements(inner)
        for h in getattr(node, "handlers", None) or ():
            yield from _statements(h.body)
        for case in getattr(node, "cases", None) or ():
            yield from _statements(case.body)


def _units_of(node: ast.AST, helpers: dict[str, ast.FunctionDef], aliases: dict[str, str], memo) -> list[Unit]:
    functions = [m for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))] \
        if isinstance(node, ast.ClassDef) else [node]
    units: list[Unit] = []
    called: list[str] = []
    for function in functions:
        prefix = f"{function.name}:" if isinstance(node, ast.ClassDef) else ""
        units += _block_units(_body(function), prefix, helpers, aliases, called, memo)
    seen = set()
    for name in called:  # helpers too long to inline: their statements are part of the answer
        if name in seen or len(seen) >= 10:
            continue
        seen.add(name)
        units += _block_units(_body(helpers[name]), "", helpers, aliases, called, memo)
    return units


def _body(function: ast.AST) -> list[ast.stmt]:
    body = list(function.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return body


def _one_line_helper(helper: ast.FunctionDef) -> ast.expr | None:
    body = _body(helper)
    if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
        return body[0].value
    return None


def _block_units(body: list[ast.stmt], prefix: str, helpers, aliases, called: list[str], memo=None) -> list[Unit]:
    units = []
    for stmt in body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # a bare string: a comment in disguise
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            units += _block_units(_body(stmt), prefix + "def>", helpers, aliases, called, memo)
            continue
        blocks = [(f, getattr(stmt, f)) for f in ("body", "orelse", "finalbody") if getattr(stmt, f, None)]
        handlers = getattr(stmt, "handlers", None) or []
        if memo is not None and not blocks and not handlers:
            text = _remembered_text(stmt, memo, helpers, aliases, called)
            units.append(Unit(prefix + text, stmt.lineno, stmt.end_lineno))
            continue
        header = copy.copy(stmt)
        for f, _ in blocks:
            setattr(header, f, [ast.Pass()])
        if handlers:
            header.handlers = []
        text = _normal_text(header, helpers, aliases, called)
        last = stmt.end_lineno if not blocks else max(stmt.lineno, blocks[0][1][0].lineno - 1)
        units.append(Unit(prefix + text, stmt.lineno, last))
        kind = type(stmt).__name__
        for f, block in blocks:
            units += _block_units(block, f"{prefix}{kind}.{f}>", helpers, aliases, called, memo)
        for h in handlers:
            units += _block_units(h.body, f"{prefix}{kind}.except>", helpers, aliases, called, memo)
    return units


def _remembered_text(stmt: ast.stmt, memo: _Memo, helpers, aliases, called: list[str]) -> str:
    key = memo.key(stmt)
    found = _TEXTS.get(key)
    if found is None:
        before = len(called)
        found = (_normal_text(copy.copy(stmt), helpers, aliases, called), tuple(called[before:]))
        if len(_TEXTS) >= MAX_TEXTS:
            _TEXTS.clear()
        _TEXTS[key] = found
    else:
        called.extend(found[1])
    return found[0]


def _normal_text(stmt: ast.stmt, helpers, aliases, called: list[str]) -> str:
    # in place: each statement is normalised once (the transformation is idempotent when a helper's
    # statements are reached again), and copying every tree costs more than the rest of a review
    tree = _Normaliser(helpers, aliases, called).visit(stmt)
    text = ast.unparse(tree)  # no fix_missing_locations: only statements need a line, and each new one copies it
    return " ".join(text.replace("\n    pass", "").split())


class _Normaliser(ast.NodeTransformer):
    def __init__(self, helpers, aliases, called: list[str], depth: int = 0):
        self.helpers, self.aliases, self.called, self.depth = helpers, aliases, called, depth

    def visit_AugAssign(self, node: ast.AugAssign):
        target = self.visit(node.target)
        value = ast.BinOp(left=copy.deepcopy(target), op=node.op, right=self.visit(node.value))
        return ast.copy_location(ast.Assign(targets=[target], value=value), node)  # unparse reads its line

    def visit_Call(self, node: ast.Call):
        func = node.func
        if isinstance(func, ast.Name) and func.id in self.helpers:
            inline = _one_line_helper(self.helpers[func.id])
            if inline is not None and self.depth < MAX_INLINE_DEPTH:
                return _Normaliser(self.helpers, self.aliases, self.called, self.depth + 1).visit(copy.deepcopy(inline))
            self.called.append(func.id)
        op = _operator_of(func, self.aliases)
        if op is not None and not node.keywords:
            if op[0] == "function" and len(node.args) == 2:
                return self.visit(ast.BinOp(left=node.args[0], op=op[1](), right=node.args[1]))
            if op[0] == "method" and len(node.args) == 1:
                return self.visit(ast.BinOp(left=func.value, op=op[1](), right=node.args[0]))
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name):
        if node.id in self.helpers:
            return ast.Name(id="F", ctx=node.ctx)
        origin = self.aliases.get(node.id)
        if origin is not None:
            return _dotted(origin, node.ctx)
        return ast.Name(id=node.id if node.id in KEPT_NAMES else "V", ctx=node.ctx)

    def visit_arg(self, node: ast.arg):
        return ast.arg(arg="V")

    def visit_Constant(self, node: ast.Constant):
        if node.value is None or isinstance(node.value, bool) or node.value is Ellipsis:
            return node
        return ast.Constant(value="C")

    def visit_JoinedStr(self, node: ast.JoinedStr):
        return ast.Constant(value="C")


def _operator_of(func: ast.expr, aliases: dict[str, str]):
    """("function", op) for torch.add & co., ("method", op) for x.add(y) & co., else None."""
    if not isinstance(func, ast.Attribute) or func.attr not in OPERATORS:
        return None
    owner = func.value
    if isinstance(owner, ast.Name) and aliases.get(owner.id, owner.id) == "torch":
        return "function", OPERATORS[func.attr]
    return "method", OPERATORS[func.attr]


def _dotted(path: str, ctx) -> ast.expr:
    parts = path.split(".")
    node: ast.expr = ast.Name(id=parts[0], ctx=ast.Load())
    for part in parts[1:]:
        node = ast.Attribute(value=node, attr=part, ctx=ast.Load())
    return node
