"""`grader export student`: the bundle students get; and the course as files of the grader package.

It unzips into one folder, `autograd-lab-student/`, holding the stubs (`exercises/`), the part of
the grader package students run (`grader check`, `grader submit`) with the course's public tests and
worker-side helpers, the problem set as a notebook (`autograd_lab.ipynb`, `grader export notebook`),
a course file that lists only the public tests, the docstring examples of the
stubs as the course wrote them, a `pyproject.toml` whose only dependencies are torch, pytest, pyyaml
and hypothesis (the property checks' inputs), and a bilingual README whose lines a student copies and pastes. It never holds the
solutions, the hidden tests (nor their names), the instructors' code (LMS exports, otter-grader,
Gradescope, Dask), the project's own tests, or anything under version control that is not listed
here; `check_bundle` proves it on the finished zip.

Whichever course is exported (`--course PATH`), it takes the package's own course's place,
`grader/cases/`, in the zip (`course_package_files`): the grader in the bundle, and in the otter and
Gradescope autograders, grades that course without being told.
"""

from __future__ import annotations

import ast
import io
import stat
import sys
import time
import zipfile
from pathlib import Path

import yaml

from grader import catalog as catalog_module
from grader.cases import examples
from grader.errors import UsageError

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # grader/
CHECKOUT = PACKAGE_DIR.parent
TOP = "autograd-lab-student"  # the one folder the bundle unzips into
FORBIDDEN_PARTS = ("cases/hidden", "solutions", "tests/", "__pycache__", ".git")
DEFAULT_COURSE_PARTS = ("grader/cases/public/", "grader/cases/hidden/", "grader/cases/course.yaml")  # replaced
INSTRUCTOR_PARTS = ("grader/lms/", "grader/exports/otter.py", "grader/exports/gradescope.py", "grader/host/distributed.py",
                    "grader/validate/", "grader/similarity/")
PACKAGE_SUFFIXES = (".py", ".json", ".yaml", ".ini")

STUDENT_README = """\
# autograd-lab: the autograd problem set / 自动求导习题

Edit the {count} files in `exercises/`; each function's docstring says what to do, with examples.
编辑 `exercises/` 中的 {count} 个文件；每个函数的文档字符串都说明了要做什么，并附有示例。

## Once: a virtual environment with a CPU build of torch / 只需一次：建立虚拟环境并安装 CPU 版 torch

In this folder (Python 3.10 or newer) / 在本文件夹中（Python 3.10 或更新版本）:

    python3 -m venv .venv && . .venv/bin/activate
    pip install torch --index-url https://download.pytorch.org/whl/cpu
    pip install -e .

(Windows: `.venv\\Scripts\\activate`. A plain `pip install torch` on Linux downloads the large CUDA build;
for a GPU use `pip install torch` instead of the second line. / 在 Linux 上直接 `pip install torch` 会下载很大的
CUDA 版本；需要 GPU 时把第二行换成 `pip install torch`。)

## Check, as often as you like / 随时检查

    grader check                              # every exercise / 全部习题
    grader check --exercise {example:<20}  # one exercise / 单个习题
    grader check --seed 123456                # repeat the property checks of an earlier run / 重现之前的性质检查

`grader check` runs the public checks: the public tests and every docstring example. Your grade
uses hidden tests with other, random inputs, so follow each docstring's conventions. Some exercises
also get a property check (worth no points) once their other checks pass: your answer on fresh random inputs, compared with finite
differences; a failure comes with the smallest input found, as a call to run. The seed is printed:
`grader check --seed N` runs the same inputs again.
`grader check` 运行公开检查：公开测试和文档字符串中的每个示例。评分时还会用其他随机输入运行隐藏测试，
所以请遵守每个文档字符串中的约定。部分习题在其他检查都通过后还有性质检查（不计分）：在新的随机输入上把你的结果与有限差分比较；
未通过时会给出找到的最小输入，写成可以直接运行的调用。随机种子会打印出来：`grader check --seed N` 重现同样的输入。

## Hand in / 提交

    grader submit                             # writes submission.zip / 生成 submission.zip

Hand in `submission.zip` as your course says. `grader submit` refuses a hand-in with a missing
module or one that does not import, and warns about functions still raising NotImplementedError.
按课程要求提交 `submission.zip`。模块缺失或无法导入时 `grader submit` 会拒绝生成，
仍抛出 NotImplementedError 的函数会给出警告。
"""

STUDENT_PYPROJECT = """\
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "autograd-lab-student"
version = "{version}"
description = "The autograd problem set: stubs to complete and the grader's public checks"
requires-python = ">=3.10"
dependencies = ["torch>=2.1", "pytest>=7.4", "pyyaml>=6.0", "hypothesis>=6.100"]

[project.scripts]
grader = "grader.cli:main"

[tool.setuptools.packages.find]
include = ["grader", "grader.*"]

[tool.setuptools.package-data]
grader = ["schema/*.json", "cases/*.yaml", "cases/*.ini", "cases/public/*.py", "cases/public/*.json"]
"""


def register(commands, exports) -> None:
    p = exports.add_parser("student", help="the students' bundle: stubs, public tests and the grader")
    p.add_argument("--out", required=True, type=Path, help="the .zip to write")
    add_course_option(p)
    p.set_defaults(func=cmd_export_student)


def add_course_option(p) -> None:
    p.add_argument("--course", metavar="PATH", default=None,
                   help="the course file (or its folder) to use instead of the package's own course")


def cmd_export_student(args) -> int:
    course = catalog_module.use(args.course)
    out = build_student_bundle(args.out, course)
    problems = check_bundle(out, course)
    if problems:
        out.unlink()
        print("refusing to write the bundle:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    with zipfile.ZipFile(out) as zf:
        count = len(zf.namelist())
    print(f"wrote {out} ({count} files, in {TOP}/): stubs, public tests and the student's grader; no solutions, "
          f"no hidden tests, no instructor code")
    return 0


def bundle_files(course: catalog_module.Catalog) -> dict[str, bytes]:
    """Bundle path -> content."""
    stubs = course.place("stubs")
    if stubs is None or not stubs.is_dir():
        raise UsageError(f"{course.path}: the course's stubs folder ({stubs}) is not there: export from a source "
                         f"checkout, or name it with `stubs:` in the course file")
    import grader

    files: dict[str, bytes] = {}
    for module in course.modules:
        if (stubs / module).is_file():
            files[f"exercises/{module}"] = (stubs / module).read_bytes()
    files.update(package_files(FORBIDDEN_PARTS + INSTRUCTOR_PARTS + DEFAULT_COURSE_PARTS))
    files.update(course_package_files(course, ("public",)))
    from grader.exports.notebook import NOTEBOOK_NAME, notebook_text  # it builds on this module

    files[NOTEBOOK_NAME] = notebook_text(course).encode()
    files["pyproject.toml"] = STUDENT_PYPROJECT.format(version=grader.__version__).encode()
    files["README.md"] = STUDENT_README.format(count=len(course.modules), example=course.exercises[0].name).encode()
    return {f"{TOP}/{name}": data for name, data in files.items()}


def package_files(exclude: tuple[str, ...]) -> dict[str, bytes]:
    """The grader package's source and data files (path from the checkout -> content), leaving out
    every path that contains one of `exclude`."""
    files = {}
    for path in sorted(PACKAGE_DIR.rglob("*")):
        rel = path.relative_to(CHECKOUT).as_posix()
        if path.is_file() and not any(part in rel for part in exclude) and path.suffix in PACKAGE_SUFFIXES:
            files[rel] = path.read_bytes()
    return files


def course_package_files(course: catalog_module.Catalog, folders: tuple[str, ...]) -> dict[str, bytes]:
    """The course as files of the grader package, in the place of its own course (`grader/cases/`):
    its course file (with only the tests of `folders`, and paths that hold there), the test folders of
    `folders`, its worker-side helpers, and its stubs' docstring examples (`examples.json`)."""
    files: dict[str, bytes] = {}
    for folder in folders:
        source = course.folder(folder)
        files[f"grader/cases/{folder}/__init__.py"] = b""
        for path in sorted(source.rglob("*")) if source.is_dir() else []:
            if path.is_file() and path.suffix in PACKAGE_SUFFIXES and "__pycache__" not in path.parts:
                files[f"grader/cases/{folder}/{path.relative_to(source).as_posix()}"] = path.read_bytes()
    helpers = []
    for index, path in enumerate(course.helpers):
        inside = path.is_relative_to(course.folder("public"))
        rel = f"public/{path.relative_to(course.folder('public')).as_posix()}" if inside else f"public/helpers_{index}.py"
        files[f"grader/cases/{rel}"] = path.read_bytes()
        helpers.append(rel)
    files["grader/cases/public/" + examples.EXAMPLES_FILE] = examples.render(examples.load(course)).encode()
    files["grader/cases/course.yaml"] = course_yaml(course, folders, helpers)
    return files


def course_yaml(course: catalog_module.Catalog, folders: tuple[str, ...], helpers: list[str]) -> bytes:
    """The course file as it ships: the tests of `folders` only (a public copy names no hidden test,
    not even as a general case), the stubs where the student bundle puts them, the helpers' new places."""
    data = yaml.safe_load(course.path.read_text(encoding="utf-8"))
    for key in ("solutions", "learner_mistakes", "public", "hidden"):
        data.pop(key, None)
    data["stubs"], data["helpers"] = "../../exercises", helpers
    exercises = {}
    for name, entry in data["exercises"].items():
        kept = {k: v for k, v in entry.items() if k not in catalog_module.FOLDERS or k in folders}
        if "hidden" not in folders:
            kept.pop("general", None)
        if any(kept.get(f) for f in catalog_module.FOLDERS):
            exercises[name] = kept
    data["exercises"] = exercises
    data["modules"] = {m: info for m, info in (data.get("modules") or {}).items()
                       if any(e["module"] == m for e in exercises.values())}
    header = ("# The course file as exported by `grader export`" + ("" if "hidden" in folders else
              ": public tests only. Hidden tests are not part of\n# this bundle: the grade's rule that a public "
              "test's points need the exercise's general (hidden) case\n# applies when you are graded") + ".\n")
    return (header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=120)).encode()


def build_student_bundle(out: Path, course: catalog_module.Catalog | None = None) -> Path:
    return write_zip(out, bundle_files(course or catalog_module.load()))


def write_zip(out: Path, files: dict[str, bytes], executable: tuple[str, ...] = (),
              date_time: tuple[int, ...] | None = None) -> Path:
    """A zip of these files (path -> content): regular files, 0644 or, if listed in `executable`, 0755."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    date_time = date_time or time.localtime()[:6]
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=date_time)
            info.external_attr = (stat.S_IFREG | (0o755 if name in executable else 0o644)) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return out


def check_bundle(path: Path, course: catalog_module.Catalog | None = None) -> list[str]:
    """Reasons the bundle must not ship: a solution, a hidden test, or a stub that is not a stub."""
    course = course or catalog_module.load()
    problems = []
    solutions_dir = course.place("solutions")
    solutions = {p.read_bytes() for p in solutions_dir.glob("*.py")} if solutions_dir and solutions_dir.is_dir() else set()
    hidden_names = {t.name for e in course.exercises for t in e.tests if t.folder == "hidden"}
    repair = {e.name for e in course.exercises if e.repair}
    with zipfile.ZipFile(path) as zf:
        for name in zf.namelist():
            data = zf.read(name)
            if not name.startswith(f"{TOP}/"):
                problems.append(f"{name}: outside the bundle's one folder {TOP}/")
            if any(part in name for part in FORBIDDEN_PARTS + INSTRUCTOR_PARTS):
                problems.append(f"{name}: a forbidden path")
            if data in solutions:
                problems.append(f"{name}: identical to a reference solution")
            text = data.decode("utf-8", errors="replace")
            for test in hidden_names:
                if test in text:
                    problems.append(f"{name}: names the hidden test {test}")
        for name in zf.namelist():
            if name.startswith(f"{TOP}/exercises/") and name.endswith(".py"):
                problems += [f"{name}: {p}" for p in _not_stubbed(zf.read(name), repair)]
    return problems


def stub_functions(source: bytes) -> tuple[list[str], list[str]]:
    """(functions whose body raises NotImplementedError, functions whose body does not): public
    functions and methods (SmoothAbs.forward as "forward"), read without running the code."""
    tree = ast.parse(io.BytesIO(source).read())
    functions = [(n.name, n) for n in tree.body if isinstance(n, ast.FunctionDef)]
    functions += [(f"{c.name}.{n.name}", n) for c in tree.body if isinstance(c, ast.ClassDef)
                  for n in c.body if isinstance(n, ast.FunctionDef)]
    stubs, written = [], []
    for name, node in functions:
        if not node.name.startswith("_"):
            raises = any(isinstance(n, ast.Raise) and "NotImplementedError" in ast.unparse(n) for n in ast.walk(node))
            (stubs if raises else written).append(name)
    return stubs, written


def _not_stubbed(source: bytes, repair: set[str]) -> list[str]:
    """Functions (and class methods) whose body does not raise NotImplementedError, but for the
    exercises the course ships with code to repair (`repair: true`)."""
    return [f"{name} does not raise NotImplementedError" for name in stub_functions(source)[1]
            if name.split(".")[0] not in repair]
