"""`grader submit`: the one file a student hands in, whichever way the course grades it.

The form is a zip made by this command: the six modules under `exercises/`, and one root file,
`autograd_lab.py`. `grader grade` reads only the six modules (see `grader.host.intake`), so the
root file never counts. It is there for otter-grader, which resolves a submission zip to exactly
one `.py` or `.ipynb` at its root and refuses several `.py` files there (hence the modules in a
folder). Gradescope takes the same zip. The zip is reproducible: the same modules give the same
bytes, so a resubmission that changes nothing is recognisably the same.

The root file also serves `otter check` on the student's machine: it names the folder that the
public tests check (see `grader.exports.otter`).
"""

from __future__ import annotations

import sys
from pathlib import Path

from grader.errors import UsageError
from grader.exports.bundle import write_zip
from grader.host import intake

ROOT_FILE = "autograd_lab.py"
ZIP_DATE = (2020, 1, 1, 0, 0, 0)

ROOT_FILE_SOURCE = '''\
"""autograd-lab submission / autograd-lab 提交文件

A submission zip made by `grader submit` holds the six modules in exercises/ and this file.
Otter-grader needs exactly one .py file at the root of a submission, and this is it: it is never
run when your work is graded, and editing it changes nothing. Only exercises/*.py are graded.
由 `grader submit` 生成的提交 zip 包含 exercises/ 中的六个模块和本文件。otter-grader 要求提交的
根目录中恰好有一个 .py 文件，就是本文件：评分时不会运行它，修改它也不会改变任何结果，只评 exercises/*.py。

With otter installed, `otter check autograd_lab.py -t otter-tests` runs the public tests on the
folder named below, exactly as `grader check` does.
安装 otter 后，`otter check autograd_lab.py -t otter-tests` 对下面指定的文件夹运行公开测试，与 `grader check` 相同。
"""

EXERCISES = "exercises"
'''


def register(commands, exports) -> None:
    p = commands.add_parser("submit", help="make the zip you hand in (students): exercises/ and a root file for otter")
    p.add_argument("path", nargs="?", default="exercises",
                   help="folder with your six modules, or a .zip of them (default: ./exercises)")
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
    out = write_submission(sub.files, args.out)
    for problem in sub.problems:
        print(f"warning / 警告: {problem}", file=sys.stderr)
    print(f"wrote {out}: {', '.join('exercises/' + m for m in sorted(sub.files))} and {ROOT_FILE}")
    print(f"Hand in this one file. / 请提交这一个文件：{out}")
    return 0


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
