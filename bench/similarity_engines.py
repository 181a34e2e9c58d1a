"""Which engine finds the corpus's disguised copies: copydetect, Dolos, and grader/similarity.

Measure: for each exercise, the copy pairs scored strictly above the best-scored independent pair
(recall at the rank of the first independent pair), summed over the exercises the corpus has both
kinds of pairs for (tests/similarity_corpus.py). The general engines get each exercise as a file of
its own (the definition and the module's helper functions), copydetect the stub's definition as
boilerplate; Dolos runs in Node (`npm install @dodona/dolos-lib` in --dolos-dir) and is skipped,
with the reason, when it cannot. The shipped grader never depends on Node.

    python bench/similarity_engines.py [--dolos-dir DIR]
"""

from __future__ import annotations

import argparse
import ast
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import similarity_corpus as sc  # noqa: E402
from grader import catalog  # noqa: E402
from grader.similarity import handins, index  # noqa: E402

DOLOS_SCRIPT = """
import { Dolos } from "@dodona/dolos-lib";
const [files, k, w] = [JSON.parse(process.argv[2]), Number(process.argv[3]), Number(process.argv[4])];
const dolos = new Dolos({ language: "python", kgramLength: k, kgramsInWindow: w });
const report = await dolos.analyzePaths(files);
console.log(JSON.stringify(report.allPairs().map(p => [p.leftFile.path, p.rightFile.path, p.similarity])));
"""


def exercise_source(source: str, exercise: str, exercise_names: set[str]) -> str | None:
    """The exercise's last definition and the module's helper functions, as a file of its own."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    lines = source.splitlines()
    defs = [n for n in tree.body if getattr(n, "name", None) == exercise]
    if not defs:
        return None
    helpers = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name not in exercise_names]
    return "\n\n".join("\n".join(lines[n.lineno - 1:n.end_lineno]) for n in helpers + defs[-1:]) + "\n"


def split_by_exercise(corpus: Path, out: Path, course) -> dict[str, Path]:
    names = {e.name for e in course.exercises}
    folders = {}
    for e in course.exercises:
        folder = out / e.name
        (folder / "class").mkdir(parents=True)
        (folder / "stub").mkdir()
        stub = exercise_source((course.place("stubs") / e.module).read_text(encoding="utf-8"), e.name, names)
        (folder / "stub" / "stub.py").write_text(stub or "", encoding="utf-8")
        for hand_in in sorted(corpus.iterdir()):
            module = hand_in / e.module
            text = exercise_source(module.read_text(encoding="utf-8"), e.name, names) if module.is_file() else None
            if text:
                (folder / "class" / f"{hand_in.name}.py").write_text(text, encoding="utf-8")
        folders[e.name] = folder
    return folders


def copydetect_scores(folder: Path, noise: int) -> dict[tuple[str, str], float]:
    from copydetect import CopyDetector

    detector = CopyDetector(test_dirs=[str(folder / "class")], boilerplate_dirs=[str(folder / "stub")],
                            extensions=["py"], noise_t=noise, guarantee_t=noise, display_t=0.0, silent=True,
                            autoopen=False)
    detector.run()
    files = [Path(f).stem for f in detector.test_files]
    scores = {}
    for i, a in enumerate(files):
        for j, b in enumerate(files):
            if i < j:
                s = detector.similarity_matrix[i, j]
                scores[tuple(sorted((a, b)))] = float(max(0.0, (s[0] + s[1]) / 2))
    return scores


def dolos_scores(folder: Path, dolos_dir: Path, k: int, window: int) -> dict[tuple[str, str], float]:
    files = sorted(str(p) for p in (folder / "class").glob("*.py"))
    script = dolos_dir / "similarity_bench.mjs"
    script.write_text(DOLOS_SCRIPT, encoding="utf-8")
    out = subprocess.run(["node", str(script), json.dumps(files), str(k), str(window)], cwd=dolos_dir,
                         capture_output=True, text=True, timeout=300, check=True).stdout
    return {tuple(sorted((Path(a).stem, Path(b).stem))): float(s) for a, b, s in json.loads(out)}


def our_scores(corpus: Path, course) -> dict[str, dict[tuple[str, str], float]]:
    stub = handins.stub_fingerprints(course)
    result = index.review([handins.read(p, course, stub) for p in sorted(corpus.iterdir())],
                          [e.name for e in course.exercises])
    return {e: {(p.a, p.b): p.by_exercise.get(e, 0.0) for p in result.pairs(None, exercise=e)} for e in result.exercises}


def recall(scores_by_exercise, origins, exercises) -> tuple[int, int, list[str]]:
    above = total = 0
    missed = []
    for e in exercises:
        k, n = sc.recall_at_first_independent(scores_by_exercise.get(e, {}), sc.pair_labels(origins, e))
        above, total = above + k, total + n
        if k < n:
            missed.append(f"{e} {k}/{n}")
    return above, total, missed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dolos-dir", type=Path, default=None, help="folder whose node_modules has @dodona/dolos-lib")
    args = parser.parse_args()
    course = catalog.load()
    work = Path(tempfile.mkdtemp(prefix="similarity-engines-"))
    try:
        origins = sc.make_corpus(work / "corpus", {e.name for e in course.exercises},
                                 {e.name: e.module for e in course.exercises})
        measured = [e.name for e in course.exercises if not all(sc.pair_labels(origins, e.name).values())]
        folders = split_by_exercise(work / "corpus", work / "split", course)
        engines = {"grader/similarity (ours)": lambda: our_scores(work / "corpus", course)}
        for noise in (5, 10, 25):
            engines[f"copydetect noise_t={noise}, stub as boilerplate"] = \
                lambda n=noise: {e: copydetect_scores(folders[e], n) for e in measured}
        for k, w in ((5, 3), (10, 5), (23, 17)):
            engines[f"Dolos k={k}, window={w}"] = \
                lambda k=k, w=w: {e: dolos_scores(folders[e], args.dolos_dir, k, w) for e in measured}
        print(f"corpus: {len(origins)} hand-ins; {len(measured)} exercises with copy and independent pairs")
        for name, run in engines.items():
            if name.startswith("Dolos") and (args.dolos_dir is None or not (args.dolos_dir / "node_modules").is_dir()):
                print(f"{name}: not run (no --dolos-dir with @dodona/dolos-lib installed)")
                continue
            try:
                above, total, missed = recall(run(), origins, measured)
            except Exception as exc:  # an engine that will not run: say why
                print(f"{name}: did not run: {type(exc).__name__}: {str(exc)[:300]}")
                continue
            print(f"{name}: {above}/{total} copy pairs above the first independent pair "
                  f"({above / total:.1%}); short of it: {', '.join(missed) or 'none'}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
