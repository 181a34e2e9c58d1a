"""The similarity corpus, made by code: disguised copies of the reference and of learner mistakes,
and independent hand-ins written by hand in other idioms (tests/submissions/independent/).

Each hand-in's exercises carry an origin: the hand-in (or hand-written solution) the code came
from. Two hand-ins' answers to an exercise are a copy pair when their origins are the same, an
independent pair otherwise. Disguises: names renamed, statements reordered, comments and blank lines
changed, spellings swapped (`a + b` -> `torch.add(a, b)`, `x = x + y` -> `x += y`), a helper extracted.
"""

from __future__ import annotations

import ast
import random
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
WRONG = ROOT / "tests" / "submissions" / "wrong"
INDEPENDENT = ROOT / "tests" / "submissions" / "independent"
KEEP = {"torch", "Tensor", "range", "len", "type", "None", "True", "False", "tuple", "list", "dict", "int", "float",
        "isinstance", "ValueError", "sum", "max", "min", "zip", "enumerate", "staticmethod", "ctx"}


class _Rename(ast.NodeTransformer):
    def __init__(self, keep: set[str], seed: int):
        self.keep, self.names, self.rng = keep, {}, random.Random(seed)

    def _new(self, name: str) -> str:
        if name in self.keep or name.startswith("__"):
            return name
        return self.names.setdefault(name, f"{self.rng.choice(['tmp', 'val', 'q', 'arr', 'my'])}_{len(self.names)}")

    def visit_Name(self, node):
        node.id = self._new(node.id)
        return node

    def visit_arg(self, node):
        node.arg = self._new(node.arg)
        return node

    def visit_FunctionDef(self, node):
        node.name = self._new(node.name)
        return self.generic_visit(node)


class _Spellings(ast.NodeTransformer):
    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Add):
            return ast.Call(func=ast.Attribute(value=ast.Name(id="torch", ctx=ast.Load()), attr="add", ctx=ast.Load()),
                            args=[node.left, node.right], keywords=[])
        return node

    def visit_Assign(self, node):
        self.generic_visit(node)
        v = node.value
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and isinstance(v, ast.BinOp) \
                and isinstance(v.left, ast.Name) and v.left.id == node.targets[0].id:
            return ast.AugAssign(target=node.targets[0], op=v.op, value=v.right)
        return node


def _reorder(body: list[ast.stmt]) -> None:
    """Swap neighbouring assignments that do not use each other's names (the function still works)."""
    for i in range(len(body) - 1):
        a, b = body[i], body[i + 1]
        if isinstance(a, ast.Assign) and isinstance(b, ast.Assign):
            names_a = {n.id for n in ast.walk(a) if isinstance(n, ast.Name)}
            names_b = {n.id for n in ast.walk(b) if isinstance(n, ast.Name)}
            if not names_a & names_b:
                body[i], body[i + 1] = b, a


def _extract_leaf_helper(tree: ast.Module) -> None:
    """`x.detach().clone().requires_grad_(True)` becomes `_fresh(x)`, with `_fresh` defined at the top."""
    class Extract(ast.NodeTransformer):
        used = False

        def visit_Call(self, node):
            self.generic_visit(node)
            if ast.unparse(node).endswith(".detach().clone().requires_grad_(True)"):
                Extract.used = True
                inner = node.func.value.func.value.func.value
                return ast.Call(func=ast.Name(id="_fresh", ctx=ast.Load()), args=[inner], keywords=[])
            return node

    Extract().visit(tree)
    if Extract.used:
        tree.body.insert(0, ast.parse("def _fresh(t):\n    return t.detach().clone().requires_grad_(True)").body[0])


def disguise(source: str, seed: int, exercises: set[str]) -> str:
    """A copy of `source` a student might hand in to hide it: every disguise at once."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.body and isinstance(node.body[0], ast.Expr):
                node.body = node.body[1:] or [ast.Pass()]
            _reorder(node.body)
    _Spellings().visit(tree)
    _extract_leaf_helper(tree)
    keep = KEEP | exercises | {"forward", "backward"}
    _Rename(keep, seed).visit(tree)
    ast.fix_missing_locations(tree)
    lines = []
    for i, line in enumerate(ast.unparse(tree).splitlines()):
        lines.append(line.replace("    ", "  " if seed % 2 else "\t").rstrip())  # re-spaced (a consistent indent)
        if i % 4 == 3 and line.strip() and not line.rstrip().endswith((":", "(", ",")):
            lines.append(" " * (len(lines[-1]) - len(lines[-1].lstrip())) + f"# step {i} " + "a" * (seed % 5))
        if i % 7 == 0:
            lines.append("")
    return "\n".join(lines) + "\n"


def write(folder: Path, modules: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in modules.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def reference_modules() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(SOLUTIONS.glob("*.py"))}


def _constant(mistake: Path, name: str) -> str:
    return next(n.value.value for n in ast.parse(mistake.read_text(encoding="utf-8")).body
                if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", None) == name)


def with_mistake(mistake: Path) -> dict[str, str]:
    modules = reference_modules()
    module = _constant(mistake, "MODULE")
    modules[module] += "\n\n" + mistake.read_text(encoding="utf-8")
    return modules


def make_corpus(out: Path, exercises: set[str], exercise_module: dict[str, str]) -> dict[str, dict[str, str]]:
    """Write the corpus under `out`; return hand-in -> {exercise: origin}."""
    if out.exists():
        shutil.rmtree(out)
    origins: dict[str, dict[str, str]] = {}

    def add(name: str, modules: dict[str, str], origin_of) -> None:
        write(out / name, modules)
        defined = {n.name for text in modules.values() for n in ast.parse(text).body if hasattr(n, "name")}
        origins[name] = {e: origin_of(e) for e in exercises & defined}

    ref = reference_modules()
    add("ref", ref, lambda e: "ref")
    for seed in (1, 2):  # the whole hand-in copied, disguised
        add(f"ref-disguised-{seed}", {m: disguise(t, seed, exercises) for m, t in ref.items()}, lambda e: "ref")
    for i, mistake in enumerate(sorted(WRONG.glob("*.py"))[::12]):  # a learner's mistake, and a disguised copy
        modules = with_mistake(mistake)
        # the mistake's exercise was written anew (tests/submissions/wrong/), the rest is the reference's
        origin = (lambda e, m=_constant(mistake, "EXERCISE"), s=mistake.stem: f"wrong-{s}" if e == m else "ref")
        add(f"wrong-{mistake.stem}", modules, origin)
        add(f"wrong-{mistake.stem}-disguised", {m: disguise(t, 10 + i, exercises) for m, t in modules.items()}, origin)
    for style in sorted(p.name for p in INDEPENDENT.iterdir() if p.is_dir()):
        own = {p.name: p.read_text(encoding="utf-8") for p in sorted((INDEPENDENT / style).glob("*.py"))}
        add(f"independent-{style}", own, lambda e, s=style: f"independent-{s}")
        # one module copied from the reference, disguised, into an otherwise independent hand-in
        copied = dict(own)
        copied["extensions.py"] = disguise(ref["extensions.py"], 7, exercises)
        add(f"independent-{style}-copies-extensions", copied,
            lambda e, s=style: "ref" if exercise_module[e] == "extensions.py" else f"independent-{s}")
    return origins


def pair_labels(origins: dict[str, dict[str, str]], exercise: str) -> dict[tuple[str, str], bool]:
    """(a, b) with a < b -> True for a copy pair, False for an independent one, for one exercise."""
    answering = sorted(h for h, o in origins.items() if exercise in o)
    return {(a, b): origins[a][exercise] == origins[b][exercise]
            for i, a in enumerate(answering) for b in answering[i + 1:]}


def recall_at_first_independent(scores: dict[tuple[str, str], float], labels: dict[tuple[str, str], bool]) -> tuple[int, int]:
    """(copy pairs scored strictly above every independent pair, copy pairs): the issue's measure."""
    best_independent = max((scores.get(p, 0.0) for p, copy in labels.items() if not copy), default=-1.0)
    copies = [p for p, copy in labels.items() if copy]
    return sum(1 for p in copies if scores.get(p, 0.0) > best_independent), len(copies)
