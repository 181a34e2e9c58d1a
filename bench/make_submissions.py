"""Make a class of sample submissions: copies of the reference, of the stubs, and of wrong ones.

Each wrong submission is the reference with one learner mistake from tests/submissions/wrong/
appended to the module it breaks (the later definition replaces the reference's). Used by
`make demo` (the bundled sample class) and by bench/benchmark.py (a class of N).

    python bench/make_submissions.py --out samples --copies 1
    python bench/make_submissions.py --out bench-out/class --total 200
"""

from __future__ import annotations

import argparse
import ast
import itertools
import shutil
from pathlib import Path

from grader import catalog

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
STUBS = ROOT / "exercises"
WRONG = ROOT / "tests" / "submissions" / "wrong"


def mistake_constants(path: Path) -> dict[str, str]:
    """EXERCISE, MODULE and PUBLIC of a mistake file, read without running it."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {t.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
            for t in node.targets if isinstance(t, ast.Name) and isinstance(node.value, ast.Constant)}


def write_wrong(folder: Path, mistake: Path) -> None:
    module = mistake_constants(mistake)["MODULE"]
    shutil.copytree(SOLUTIONS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    source = (SOLUTIONS / module).read_text(encoding="utf-8")
    (folder / module).write_text(source + "\n\n" + mistake.read_text(encoding="utf-8"), encoding="utf-8")


def kinds() -> list[tuple[str, Path | None]]:
    """(name, mistake file or None): the reference, the stubs, and every mistake."""
    wrong = sorted(WRONG.glob("*.py")) if WRONG.is_dir() else []
    return [("reference", None), ("stubs", None)] + [(f"{catalog.SAMPLE_PREFIX}{p.stem}", p) for p in wrong]


def make_class(out: Path, copies: int = 1, total: int | None = None) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    made = []
    plan = kinds()
    sequence = itertools.islice(itertools.cycle(plan), total) if total else (k for k in plan for _ in range(copies))
    counters: dict[str, int] = {}
    for name, mistake in sequence:
        counters[name] = counters.get(name, 0) + 1
        folder = out / f"{name}-{counters[name]:03d}"
        if folder.exists():
            shutil.rmtree(folder)
        if mistake is not None:
            write_wrong(folder, mistake)
        else:
            shutil.copytree(SOLUTIONS if name == "reference" else STUBS, folder,
                            ignore=shutil.ignore_patterns("__pycache__"))
        made.append(folder)
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--copies", type=int, default=1, help="copies of each kind")
    parser.add_argument("--total", type=int, default=None, help="make exactly this many, cycling through the kinds")
    args = parser.parse_args()
    made = make_class(args.out, args.copies, args.total)
    print(f"made {len(made)} submissions in {args.out}")
    device_specific = sorted(f"{catalog.SAMPLE_PREFIX}{name}" for name, entry in catalog.learner_mistakes(WRONG).items()
                             if catalog.device_only(entry))  # `grader report` names the same ones
    if device_specific:
        print(f"{len(device_specific)} of them ({', '.join(device_specific)}) are device-specific learner mistakes "
              "(DEVICE = 'cuda'): right on the CPU, they score full marks when graded there, and lose points on a GPU only")


if __name__ == "__main__":
    main()
