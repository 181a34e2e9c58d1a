"""In a notebook: `check("hvp")`, `check()` and `submit()`, on the code the kernel has run.

The code comes from the kernel's own record of the cells it ran (IPython's input history), never
from the notebook file, so it works where the notebook cannot read its own file (Colab, VS Code).
Those cells become the course's modules by the same parsing as a notebook hand-in
(`grader.host.cells`); the checks then run on them through the warm check (`grader.host.warm`) with
its trusted side in a process of its own: this kernel has run student code, so nothing in it decides
a verdict, and a hang or crash of the student's code costs a verdict, never the kernel. The result is
a table (HTML in Jupyter, text elsewhere), in English and 简体中文, that says which cell (`In [n]`)
each verdict used. `submit()` writes the hand-in zip of `grader submit` (a download in Colab).
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from grader import catalog
from grader.display import STATUS_WORD, check_table
from grader.host import cells as notebook_cells

KERNEL = "the cells this kernel ran"
_CHECKER: list = []  # the one warm checker of this kernel, started by the first check


def kernel_cells() -> list[notebook_cells.Cell]:
    """The cells the kernel has run, in order, each with its execution count."""
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        raise RuntimeError("check() runs in a Jupyter or IPython kernel / check() 需在 Jupyter 或 IPython 中运行")
    history = shell.history_manager.input_hist_raw
    return [notebook_cells.Cell(index=n, source=source) for n, source in enumerate(history) if n and source]


def kernel_modules() -> notebook_cells.Extracted:
    return notebook_cells.extract(kernel_cells(), catalog.load(), KERNEL)


def checker():
    from grader.host.warm import WarmChecker

    if not _CHECKER:
        _CHECKER.append(WarmChecker(course=None, device="cpu", separate_process=True))
    return _CHECKER[0]


def check(exercise: str | None = None) -> CheckResult:
    """The public checks of one exercise (or of every exercise the kernel has run) on the code of the
    cells the kernel has run."""
    course = catalog.load()
    extracted = kernel_modules()
    names = [exercise] if exercise else [e.name for e in course.exercises if e.module in extracted.modules]
    if exercise and exercise not in {e.name for e in course.exercises}:
        return CheckResult(None, {}, [f"unknown exercise {exercise!r}; the exercises are: "
                                      f"{', '.join(e.name for e in course.exercises)} / 没有这个习题"])
    missing = [n for n in names if n not in extracted.origins]
    if not names or missing:
        what = ", ".join(missing) or "any exercise"
        return CheckResult(None, {}, extracted.problems + [f"run the cell of {what} first: no cell this kernel ran "
                                                           f"defines it / 请先运行 {what} 的单元格"])
    sources = {m.removesuffix(".py"): s.decode() for m, s in extracted.modules.items()}
    report = checker().check(exercises=names, sources=sources)
    for e in report["exercises"]:
        for test in e["tests"]:
            if type(test.get("message")) is str:
                test["message"] = in_cells(test["message"], extracted, e["name"])
    others = {p for e, p in extracted.undefined.items() if e not in names}  # (an exercise not checked now: no news)
    return CheckResult(report, extracted.origins, [p for p in extracted.problems if p not in others])


_FRAME = re.compile(r'File "exercises/(\w+\.py)", line (\d+)')
_EXAMPLE = re.compile(r"exercises/\w+\.py, line \d+")  # where a docstring example is in the course's stub


def in_cells(message: str, extracted: notebook_cells.Extracted, exercise: str | None = None) -> str:
    """A message's places as the cells where they are: a traceback frame in the student's own code,
    `File "exercises/grad.py", line 17` of the modules made from the cells, as `Cell In[12], line 5` (as
    IPython writes its own tracebacks); a docstring example of `exercise`, `exercises/grad.py, line 45`
    of the stub, as the exercise's cell, `Cell In[12]` (its docstring is there)."""
    def frame(match: re.Match) -> str:
        found = extracted.cell_line(match.group(1), int(match.group(2)))
        return f"Cell In[{found[0]}], line {found[1]}" if found else match.group(0)

    message = _FRAME.sub(frame, message)
    origin = extracted.origins.get(exercise or "")
    return _EXAMPLE.sub(f"Cell In[{origin['cell']}]", message) if origin else message


def submit(out: str = "submission.zip") -> Path:
    """The hand-in zip (as `grader submit` writes it) of the code the kernel has run; in Colab, a download."""
    from grader.exports.submit import write_submission

    extracted = kernel_modules()
    path = write_submission(extracted.modules, Path(out))
    print(f"wrote {path} ({', '.join(sorted(extracted.modules))}): hand in this one file / 请提交这一个文件")
    try:
        from google.colab import files  # only in Colab
    except ImportError:
        return path
    files.download(str(path))
    return path


class CheckResult:
    """What a check cell shows: the table of `grader check`, with the cell each verdict used."""

    def __init__(self, report: dict | None, origins: dict[str, dict], notes: list[str]):
        self.report, self.origins, self.notes = report, origins, notes

    @property
    def passed(self) -> bool:
        return self.report is not None and all(t["status"] == "passed" for e in self.report["exercises"] for t in e["tests"])

    def _cell(self, name: str) -> str:
        where = self.origins.get(name)
        return f"In [{where['cell']}]" if where else ""

    def __repr__(self) -> str:
        lines = list(self.notes)
        if self.report is not None:
            lines.append(check_table(self.report, KERNEL))
            lines += [f"  {name}: code of cell {self._cell(name)} / 使用单元格 {self._cell(name)} 的代码"
                      for name in (e["name"] for e in self.report["exercises"]) if self._cell(name)]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        esc = html.escape
        parts = [f"<p style='color:#b00'>{esc(note)}</p>" for note in self.notes]
        if self.report is None:
            return "".join(parts)
        rows = []
        for e in self.report["exercises"]:
            passed = sum(1 for t in e["tests"] if t["status"] == "passed")
            worst = next((t["status"] for t in e["tests"] if t["status"] != "passed"), "passed")
            colour = "#070" if worst == "passed" else "#b00"
            rows.append(f"<tr><td>{esc(e['module'])}</td><td><code>{esc(e['name'])}</code></td>"
                        f"<td>{passed}/{len(e['tests'])}</td><td style='color:{colour}'><b>{esc(STATUS_WORD[worst])}</b></td>"
                        f"<td>{esc(self._cell(e['name']))}</td></tr>")
            for t in e["tests"]:
                if t["status"] != "passed":
                    hint = f"<br><i>checks / 检查: {esc(t['hint'])}</i>" if t.get("hint") else ""
                    rows.append(f"<tr><td></td><td colspan='4' style='text-align:left'>✗ <code>{esc(t['name'])}</code>: "
                                f"{esc(t['status'])}<br><pre style='white-space:pre-wrap;margin:0'>{esc(t['message'])}</pre>"
                                f"{hint}</td></tr>")
        parts.append("<div class='autograd-lab-check'><p>Public checks only; hidden tests with other inputs run when your "
                     "work is graded. / 只运行公开测试；评分时还会用其他输入运行隐藏测试。</p><table>"
                     "<tr><th>module / 模块</th><th>exercise / 习题</th><th>checks / 检查</th><th>result / 结果</th>"
                     "<th>cell / 单元格</th></tr>" + "".join(rows) + "</table></div>")
        parts += [f"<p style='color:#b00'>! {esc(p)}</p>" for p in self.report.get("submission_errors", [])]
        return "".join(parts)
