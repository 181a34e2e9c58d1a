"""`grader submit`: the one file a student hands in, whichever way the course grades it.

The form is a zip made by this command: the course's modules under `exercises/`, and one root file,
`autograd_lab.py`. `grader grade` reads only the course's modules (see `grader.host.intake`), so the
root file never counts. It is there for otter-grader, which resolves a submission zip to exactly
one `.py` or `.ipynb` at its root and refuses several `.py` files there (hence the modules in a
folder). Gradescope takes the same zip. The zip is reproducible: the same modules give the same
bytes, so a resubmission that changes nothing is recognisably the same.

The root file also serves `otter check` on the student's machine: it names the folder that the
public tests check (see `grader.exports.otter`).

Before writing, `grader submit` makes sure the hand-in can be graded: it refuses (exit 1) one with a
missing module or a module that does not import (each imported in a separate Python process, as the
student's own code on the student's own machine), and warns about functions that still raise
NotImplementedError.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from grader.errors import UsageError
from grader.exports.bundle import stub_functions, write_zip
from grader.host import intake

ROOT_FILE = "autograd_lab.py"
ZIP_DATE = (2020, 1, 1, 0, 0, 0)

ROOT_FILE_SOURCE = '''\
"""autograd-lab submission / autograd-lab 提交文件

A submission zip made by `grader submit` holds the exercise modules in exercises/ and this file.
Otter-grader needs exactly one .py file at the root of a submission, and this is it: it is never
run when your work is graded, and editing it changes nothing. Only exercises/*.py are graded.
由 `grader submit` 生成的提交 zip 包含 exercises/ 中的习题模块和本文件。otter-grader 要求提交的
根目录中恰好有一个 .py 文件，就是本文件：评分时不会运行它，修改它也不会改变任何结果，只评 exercises/*.py。

If your course checks with otter-grader, it gives you a folder of otter tests (`grader export
otter-check`); `otter check autograd_lab.py -t <that folder>` then runs the public tests on the folder
named below, exactly as `grader check` does.
如果课程使用 otter-grader，会另外提供 otter 测试文件夹（`grader export otter-check`）；
`otter check autograd_lab.py -t <该文件夹>` 对下面指定的文件夹运行公开测试，与 `grader check` 相同。
"""

EXERCISES = "exercises"
'''


def register(commands, exports) -> None:
    p = commands.add_parser("submit", help="make the zip you hand in (students): exercises/ and a root file for otter")
    p.add_argument("path", nargs="?", default="exercises",
                   help="folder with your exercise modules, or a .zip of them (default: ./exercises)")
    p.add_argument("--out", type=Path, default=Path("submission.zip"), help="the zip to write (default: submission.zip)")
    p.set_defaults(func=cmd_submit)


def cmd_submit(args) -> int:
    source = Path(args.path)
    if not source.exists():
        raise UsageError(f"{source} does not exist: run this where your exercises/ folder is, or give its path "
                         f"/ 找不到 {source}：请在 exercises/ 所在目录运行，或给出它的路径")
    sub = intake.load(source)
    if not sub.files:
        raise UsageError(f"no exercise module found in {source} (expected {', '.join(intake.module_files())}) "
                         f"/ 在 {source} 中没有找到习题模块")
    refusals = [f"{m} is missing / 缺少 {m}" for m in sub.missing_modules]
    refusals += [f"{m} does not import / 无法导入 {m}:\n    {why}" for m, why in import_failures(sub.files).items()]
    refusals += [p for p in sub.problems if "is missing" not in p]
    if refusals:
        print("grader submit: not written; fix these first / 未生成提交文件，请先修正：", file=sys.stderr)
        for problem in refusals:
            print(f"  ! {problem}", file=sys.stderr)
        return 1
    out = write_submission(sub.files, args.out)
    for module, names in unfinished(sub.files).items():
        print(f"warning / 警告: {module}: {', '.join(names)} still raise NotImplementedError: they score 0 "
              f"/ 仍抛出 NotImplementedError，得 0 分", file=sys.stderr)
    print(f"wrote {out}: {', '.join('exercises/' + m for m in sorted(sub.files))} and {ROOT_FILE}")
    print(f"Hand in this one file. / 请提交这一个文件：{out}")
    return 0


IMPORT_CHECK = """
import importlib.util, json, sys, traceback
path, name, verdict = sys.argv[1], sys.argv[2], sys.argv[4]
sys.path.insert(0, sys.argv[3])
try:
    spec = importlib.util.spec_from_file_location(name, path)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))
except BaseException as exc:
    with open(verdict, "w", encoding="utf-8") as out:
        json.dump(traceback.format_exception_only(type(exc), exc)[-1].strip(), out)
"""  # the verdict goes to a file of its own: the module may print anything on stdout


def import_failures(modules: dict[str, bytes], timeout_s: float = 60.0) -> dict[str, str]:
    """Module -> why it does not import. Each is imported from a copy in a temporary folder, in a
    Python process of its own (a module that exits, hangs or crashes there harms nothing)."""
    import tempfile

    failures = {}
    with tempfile.TemporaryDirectory(prefix="autograd-lab-submit-") as tmp, \
            tempfile.TemporaryDirectory(prefix="autograd-lab-verdict-") as verdicts:
        for module, source in modules.items():
            (Path(tmp) / module).write_bytes(source)
        for module in modules:
            verdict = Path(verdicts) / (module + ".json")
            try:
                done = subprocess.run([sys.executable, "-c", IMPORT_CHECK, str(Path(tmp) / module),
                                       module.removesuffix(".py"), tmp, str(verdict)],
                                      capture_output=True, text=True, timeout=timeout_s, cwd=tmp)
            except subprocess.TimeoutExpired:
                failures[module] = f"importing it did not finish within {timeout_s:g} s / 导入超时"
                continue
            said = read_verdict(verdict)
            if said is not None:
                failures[module] = said
            elif done.returncode != 0:
                failures[module] = f"the import ended the process (exit status {done.returncode}) / 导入时进程退出"
    return failures


def read_verdict(path: Path) -> str | None:
    """Why the import failed, as the check wrote it; None when it wrote nothing (the import worked)."""
    try:
        said = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return said if isinstance(said, str) else None


def unfinished(modules: dict[str, bytes]) -> dict[str, list[str]]:
    """Module -> its functions (and methods) that still raise NotImplementedError, read without running them."""
    found = {}
    for module in intake.module_files():
        if module in modules:
            try:
                stubs = stub_functions(modules[module])[0]
            except SyntaxError:
                continue
            if stubs:
                found[module] = stubs
    return found


def submission_files(modules: dict[str, bytes]) -> dict[str, bytes]:
    """Zip path -> content of a submission holding these modules (module file name -> source)."""
    unknown = set(modules) - set(intake.module_files())
    if unknown:
        raise ValueError(f"not exercise modules: {', '.join(sorted(unknown))}")
    files = {ROOT_FILE: ROOT_FILE_SOURCE.encode()}
    files.update({f"exercises/{m}": modules[m] for m in intake.module_files() if m in modules})
    return files


def write_submission(modules: dict[str, bytes], out: Path) -> Path:
    """Write the submission zip atomically and check that it reads back to the same modules."""
    out = Path(out)
    tmp = write_zip(out.with_name(f".{out.stem}.tmp.zip"), submission_files(modules), date_time=ZIP_DATE)
    back = intake.load(tmp)
    if back.files != modules:
        tmp.unlink()
        raise RuntimeError(f"the zip does not read back to the same modules: {back.problems}")
    tmp.replace(out)
    return out
