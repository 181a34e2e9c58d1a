"""A copy of this project's course in a folder of its own, to change as an instructor would.

`copy_course(folder)` copies the course file, its test folders (tests, oracle, helpers), the stubs, the
solutions and the learner mistakes, and points the copied course file at the copies: `--course
folder/cases/course.yaml` then grades, validates and exports the copy, and a change to it (an exercise
removed, points changed, a test left unlisted) touches nothing of the checkout.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from grader import catalog

IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc")


def copy_course(folder: Path, source: catalog.Course | None = None) -> Path:
    """The copied course file (folder/cases/course.yaml)."""
    source = source or catalog.load()
    folder = Path(folder)
    shutil.copytree(source.root, folder / "cases", ignore=IGNORED)
    data = read(folder / "cases" / "course.yaml")
    for key, name in (("stubs", "exercises"), ("solutions", "solutions"), ("learner_mistakes", "wrong")):
        if source.place(key) is not None:
            shutil.copytree(source.place(key), folder / name, ignore=IGNORED)
            data[key] = f"../{name}"
    write(folder / "cases" / "course.yaml", data)
    return folder / "cases" / "course.yaml"


def read(course_file: Path) -> dict:
    return yaml.safe_load(Path(course_file).read_text(encoding="utf-8"))


def write(course_file: Path, data: dict) -> None:
    Path(course_file).write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")


def remove_exercise(course_file: Path, name: str) -> None:
    """Take an exercise out of a copied course, as docs/authoring.md says: its entry in the course file,
    its tests (public and hidden), its stub and its solution, and its learner mistakes."""
    course_file = Path(course_file)
    course = catalog.load(course_file)
    exercise = course.exercise(name)
    data = read(course_file)
    del data["exercises"][name]
    write(course_file, data)
    catalog._load.cache_clear()
    tests = {t.name for t in exercise.tests} | ({exercise.property_name} if exercise.property_name else set())
    for folder in catalog.FOLDERS:
        for path in sorted(course.folder(folder).glob("test_*.py")):
            remove_definitions(path, tests)
    for place in ("stubs", "solutions"):
        remove_definitions(course.place(place) / exercise.module, {name})
    for path in sorted(course.place("learner_mistakes").glob("*.py")):
        if f'EXERCISE = "{name}"' in path.read_text(encoding="utf-8"):
            path.unlink()


def remove_definitions(path: Path, names: set[str]) -> None:
    """Remove the module-level functions and classes named `names` (with their decorators) from a file."""
    import ast

    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    nodes = [n for n in ast.parse(text).body
             if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name in names]
    for node in sorted(nodes, key=lambda n: n.lineno, reverse=True):
        start = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
        del lines[start:node.end_lineno]
    path.write_text("".join(lines), encoding="utf-8")
