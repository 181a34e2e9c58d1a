"""A class of N distinct hand-ins for the similarity scale bench, made from what the corpus is made of.

Each hand-in draws, per module, its base from the reference or one of the independent solutions
(tests/submissions/independent/), replaces some exercises by a learner mistake of
tests/submissions/wrong/ (the later definition wins, as in the corpus), adds statements of its own
to some functions (random expressions over the function's arguments: the little code every student
writes differently), and is disguised half the time (tests/similarity_corpus.py's disguises, with
its own seed). No two hand-ins are alike, and most share most of their code with many others: the
shape of a real class, at any size.

    python bench/similarity_class.py --out DIR --total N [--seed S]
"""

from __future__ import annotations

import argparse
import ast
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import similarity_corpus as sc  # noqa: E402

UNARY = ("torch.sin({})", "torch.exp({})", "{}.abs()", "{}.sum()", "{}.mean()", "torch.tanh({})", "{}.detach()",
         "{}.clone()", "torch.relu({})", "{}.pow(2)", "({}).sqrt()", "{}.flatten()")
BINARY = ("{} + {}", "{} - {}", "{} * {}", "{} / ({} + 1)", "torch.maximum({}, {})", "torch.where({} > 0, {}, 0)")


def sources() -> dict[str, dict[str, str]]:
    """base name -> module -> text: the reference and each independent style."""
    found = {"ref": sc.reference_modules()}
    for style in sorted(p for p in sc.INDEPENDENT.iterdir() if p.is_dir()):
        found[style.name] = {p.name: p.read_text(encoding="utf-8") for p in sorted(style.glob("*.py"))}
    return found


def mistakes() -> dict[str, list[str]]:
    """module -> the learner mistakes' sources for its exercises."""
    by_module: dict[str, list[str]] = {}
    for path in sorted(sc.WRONG.glob("*.py")):
        by_module.setdefault(sc._constant(path, "MODULE"), []).append(path.read_text(encoding="utf-8"))
    return by_module


def random_expression(rng: random.Random, names: list[str], depth: int) -> str:
    if depth == 0 or rng.random() < 0.25:
        return rng.choice(names) if rng.random() < 0.8 else repr(round(rng.uniform(0.1, 3.0), 2))
    if rng.random() < 0.5:
        return rng.choice(UNARY).format(random_expression(rng, names, depth - 1))
    return rng.choice(BINARY).format(random_expression(rng, names, depth - 1), random_expression(rng, names, depth - 1))


class _OwnStatements(ast.NodeTransformer):
    """Adds to some functions a statement or two of the student's own, over the function's arguments."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def visit_FunctionDef(self, node):
        self.generic_visit(node)
        names = [a.arg for a in node.args.args if a.arg not in ("self", "ctx")]
        if names and self.rng.random() < 0.6:
            for k in range(self.rng.randint(1, 2)):
                line = f"_mine_{k} = {random_expression(self.rng, names, self.rng.randint(2, 4))}"
                node.body.insert(self.rng.randint(0, max(0, len(node.body) - 1)), ast.parse(line).body[0])
        return node


def hand_in(index: int, seed: int, bases: dict[str, dict[str, str]], wrong: dict[str, list[str]],
            exercises: set[str]) -> dict[str, str]:
    rng = random.Random(seed * 1_000_003 + index)
    modules = {}
    for module in bases["ref"]:
        base = rng.choice([b for b in bases if module in bases[b]])
        text = bases[base][module]
        for mistake in wrong.get(module, []):
            if rng.random() < 0.04:
                text += "\n\n" + mistake
        tree = _OwnStatements(rng).visit(ast.parse(text))
        text = ast.unparse(ast.fix_missing_locations(tree)) + "\n"
        if rng.random() < 0.5:
            text = sc.disguise(text, rng.randrange(1_000_000), exercises)
        modules[module] = text
    return modules


def make_class(out: Path, total: int, exercises: set[str], seed: int = 0) -> list[Path]:
    bases, wrong = sources(), mistakes()
    return [sc.write(out / f"student-{i:05d}", hand_in(i, seed, bases, wrong, exercises)) for i in range(total)]


def main() -> None:
    from grader import catalog

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--total", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    made = make_class(args.out, args.total, {e.name for e in catalog.load().exercises}, args.seed)
    print(f"made {len(made)} hand-ins in {args.out}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
