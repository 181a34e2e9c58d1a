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
missing module or a module that does not import (a syntax error found without running it, with its
line; the others imported in one separate Python process, as the student's own code on the student's
own machine), and warns about functions that still raise
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


def still_raises(names: list[str]) -> str:
    """"f still raises NotImplementedError: it scores 0", in the grammar of one name or several."""
    if len(names) == 1:
        return f"{names[0]} still raises NotImplementedError: it scores 0"
    return f"{', '.join(names)} still raise NotImplementedError: they score 0"


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
        print(f"warning / 警告: {module}: {still_raises(names)} / {'、'.join(names)} 仍抛出 NotImplementedError，得 0 分",
              file=sys.stderr)
    written = ", ".join("exercises/" + m for m in sorted(sub.files))
    print(f"wrote {out}: {written} and {ROOT_FILE} / 已写入 {out}：{written} 和 {ROOT_FILE}")
    print(f"Hand in this one file. / 请提交这一个文件：{out}")
    return 0


IMPORT_CHECK = """
import importlib.util, json, sys, traceback
folder = sys.argv[1]
sys.path.insert(0, folder)
for name in sys.argv[2:]:
    print(json.dumps({"start": name}), flush=True)
    try:
        spec = importlib.util.spec_from_file_location(name, f"{folder}/{name}.py")
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
        said = None
    except BaseException as exc:
        said = traceback.format_exception_only(type(exc), exc)[-1].strip()
    print(json.dumps({"done": name, "error": said}), flush=True)
"""


def import_failures(modules: dict[str, bytes], timeout_s: float = 60.0) -> dict[str, str]:
    """Module -> why it does not import. A syntax error is found here, without running anything
    (with its line); the others are imported from a copy in a temporary folder, all in one Python
    process of their own (torch imported once). A module that exits, hangs or crashes there harms
    nothing: it is charged with it, and the modules after it are imported in a fresh process."""
    import tempfile

    failures = {m: why for m, why in ((m, syntax_error(m, s)) for m, s in modules.items()) if why}
    todo = [m for m in modules if m not in failures]
    with tempfile.TemporaryDirectory(prefix="autograd-lab-submit-") as tmp:
        for module in todo:
            (Path(tmp) / module).write_bytes(modules[module])
        while todo:
            done, current, status = _import_in_process(tmp, todo, timeout_s)
            failures.update({m: why for m, why in done.items() if why})
            todo = [m for m in todo if m not in done]
            if current is not None:  # it ended or hung the process
                failures[current] = status
                todo.remove(current)
            elif todo:  # ended between two modules: go on with the rest
                failures[todo.pop(0)] = status
    return failures


def _import_in_process(folder: str, modules: list[str], timeout_s: float) -> tuple[dict, str | None, str]:
    """Import `modules` in turn in one process: ({module: error or None} of those it finished, the
    module it was importing when the process ended or ran out of time (None when none), why)."""
    names = [m.removesuffix(".py") for m in modules]
    try:
        done = subprocess.run([sys.executable, "-c", IMPORT_CHECK, folder, *names], capture_output=True,
                              text=True, timeout=timeout_s, cwd=folder)
        stdout, why = done.stdout, f"the import ended the process (exit status {done.returncode}) / 导入时进程退出"
    except subprocess.TimeoutExpired as exc:
        stdout = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        why = f"importing it did not finish within {timeout_s:g} s / 导入超时"
    finished, current = {}, None
    for line in stdout.splitlines():
        try:
            said = json.loads(line)
        except ValueError:
            continue  # the module's own prints
        if not isinstance(said, dict):
            continue
        if said.get("start") in names:
            current = f"{said['start']}.py"
        elif said.get("done") in names:
            finished[f"{said['done']}.py"] = said.get("error")
            current = None
    return finished, current, why


def syntax_error(module: str, source: bytes) -> str | None:
    """What a syntax error in the module says, with its line ("None" when it compiles)."""
    try:
        compile(source, module, "exec", dont_inherit=True)
    except SyntaxError as exc:
        line = (exc.text or "").strip()
        return f"SyntaxError: {exc.msg} (line {exc.lineno}{': ' + line if line else ''}) / 语法错误（第 {exc.lineno} 行）"
    except ValueError as exc:  # null bytes
        return f"{type(exc).__name__}: {exc}"
    return None


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
