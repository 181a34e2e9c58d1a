"""`grader export student`: the bundle students get.

It holds the stubs (`exercises/`), the grader package with its public tests, a points file
that lists only the public tests, `pyproject.toml` and a short bilingual README. It never
holds the solutions, the hidden tests (nor their names), the project's own tests, or
anything under version control that is not listed here; `check_bundle` proves it on the
finished zip.
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

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # grader/
CHECKOUT = PACKAGE_DIR.parent
FORBIDDEN_PARTS = ("cases/hidden", "solutions", "tests/", "__pycache__", ".git")
PACKAGE_SUFFIXES = (".py", ".json", ".yaml", ".ini")

STUDENT_README = """\
# autograd-lab: the autograd problem set / 自动求导习题

Edit the six files in `exercises/`, then check your work with the public tests:
编辑 `exercises/` 中的六个文件，然后用公开测试检查：

    pip install -e .          # once / 只需一次 (torch, pytest, pyyaml)
    grader check              # all exercises / 全部习题
    grader check --exercise partial_grads

`grader check` runs the public tests only. Your grade also uses hidden tests with other,
random inputs, so make every function follow the conventions in its docstring.
`grader check` 只运行公开测试。评分时还会用其他随机输入运行隐藏测试，所以请让每个函数都遵守其文档字符串中的约定。

Submit the `exercises/` folder (or a .zip of it), as your course says.
按课程要求提交 `exercises/` 文件夹（或其 .zip 压缩包）。
"""


def register(commands, exports) -> None:
    p = exports.add_parser("student", help="the students' bundle: stubs, public tests and the grader")
    p.add_argument("--out", required=True, type=Path, help="the .zip to write")
    p.set_defaults(func=cmd_export_student)


def cmd_export_student(args) -> int:
    out = build_student_bundle(args.out)
    problems = check_bundle(out)
    if problems:
        out.unlink()
        print("refusing to write the bundle:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    with zipfile.ZipFile(out) as zf:
        count = len(zf.namelist())
    print(f"wrote {out} ({count} files): stubs, public tests and the grader; no solutions, no hidden tests")
    return 0


def bundle_files() -> dict[str, bytes]:
    """Bundle path -> content."""
    exercises = CHECKOUT / "exercises"
    if not exercises.is_dir():
        raise SystemExit(f"no exercises/ next to the grader package ({exercises}): export from a source checkout")
    files: dict[str, bytes] = {}
    for path in sorted(exercises.glob("*.py")):
        files[f"exercises/{path.name}"] = path.read_bytes()
    files.update(package_files(FORBIDDEN_PARTS))
    files["grader/cases/points.yaml"] = public_points_yaml()
    files["pyproject.toml"] = (CHECKOUT / "pyproject.toml").read_bytes()
    files["README.md"] = STUDENT_README.encode()
    return files


def package_files(exclude: tuple[str, ...]) -> dict[str, bytes]:
    """The grader package's source and data files (path from the checkout -> content), leaving out
    every path that contains one of `exclude`."""
    files = {}
    for path in sorted(PACKAGE_DIR.rglob("*")):
        rel = path.relative_to(CHECKOUT).as_posix()
        if path.is_file() and not any(part in rel for part in exclude) and path.suffix in PACKAGE_SUFFIXES:
            files[rel] = path.read_bytes()
    return files


def public_points_yaml() -> bytes:
    data = yaml.safe_load((PACKAGE_DIR / "cases" / "points.yaml").read_text(encoding="utf-8"))
    public = {name: {"module": e["module"], "public": e["public"]} for name, e in data.items() if e.get("public")}
    header = "# Points of the public tests. Hidden tests are not part of this bundle.\n"
    return (header + yaml.safe_dump(public, sort_keys=False, allow_unicode=True)).encode()


def build_student_bundle(out: Path) -> Path:
    return write_zip(out, bundle_files())


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


def check_bundle(path: Path) -> list[str]:
    """Reasons the bundle must not ship: a solution, a hidden test, or a stub that is not a stub."""
    problems = []
    solutions = {p.read_bytes() for p in (CHECKOUT / "solutions").glob("*.py")} if (CHECKOUT / "solutions").is_dir() else set()
    hidden_names = _hidden_test_names()
    with zipfile.ZipFile(path) as zf:
        for name in zf.namelist():
            data = zf.read(name)
            if any(part in name for part in FORBIDDEN_PARTS):
                problems.append(f"{name}: a forbidden path")
            if data in solutions:
                problems.append(f"{name}: identical to a reference solution")
            text = data.decode("utf-8", errors="replace")
            for test in hidden_names:
                if test in text:
                    problems.append(f"{name}: names the hidden test {test}")
        for name in zf.namelist():
            if name.startswith("exercises/") and name.endswith(".py"):
                problems += [f"{name}: {p}" for p in _not_stubbed(zf.read(name))]
    return problems


def _hidden_test_names() -> set[str]:
    data = yaml.safe_load((PACKAGE_DIR / "cases" / "points.yaml").read_text(encoding="utf-8"))
    return {test for e in data.values() for test in (e.get("hidden") or {})}


def _not_stubbed(source: bytes) -> list[str]:
    """Functions (and SmoothAbs methods) whose body does not raise NotImplementedError.

    shifted_sigmoid_and_grad is the exception: it ships the buggy code the students repair."""
    tree = ast.parse(io.BytesIO(source).read())
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_") and node.name != "shifted_sigmoid_and_grad":
            raises = any(isinstance(n, ast.Raise) and "NotImplementedError" in ast.unparse(n) for n in ast.walk(node))
            if not raises:
                problems.append(f"{node.name} does not raise NotImplementedError")
    return problems
