"""Submissions for the otter and Gradescope tests, built as `grader submit` builds them.

WRONG: the reference solutions with one function broken, the way students break them.
HOSTILE: submissions that fool plain otter (student code runs in the kernel that runs the tests),
each given as the modules and the extra files its zip carries. A `{marker}` in a file is
replaced by a path the test watches: the attack writes it when its code runs where it must not.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from grader.exports.submit import ROOT_FILE, ROOT_FILE_SOURCE, submission_files
from grader.host import intake

from conftest import SOLUTIONS, STUBS

WRONG = {
    # H @ v wanted; this is the gradient
    "wrong_hvp": {"grad.py": """
def hvp(f, x, v):
    x = x.detach().clone().requires_grad_(True)
    (g,) = torch.autograd.grad(f(x), x)
    return g.detach()
"""},
    # forgets w.grad.zero_(): running sums
    "wrong_grads_per_step": {"accumulation.py": """
def grads_per_step(w, xs):
    w = w.detach().clone().requires_grad_(True)
    out = []
    for x in xs:
        ((w + x) * (w + 1)).sum().backward()
        out.append(w.grad.clone())
    return torch.stack(out) if out else torch.zeros((0, *w.shape), dtype=w.dtype, device=w.device)
"""},
    # detach() shares storage with t, and .to() returns t itself when nothing changes
    "wrong_make_leaf": {"graph.py": """
def make_leaf(t, dtype=None, device=None):
    return t.detach().to(dtype=dtype or t.dtype, device=device or t.device).requires_grad_(True)
"""},
}

# Replaces torch's comparisons when the module is imported: a test that imports the module in its
# own process and compares with torch.allclose passes whatever the functions return.
PATCH_TORCH = """
import torch as _torch
_torch.allclose = lambda *args, **kwargs: True
_torch.equal = lambda *args, **kwargs: True
_torch.testing.assert_close = lambda *args, **kwargs: None
"""

# Runs in otter's kernel before otter's export cell: every case of every question passes.
PATCH_OTTER_RUNNER = ROOT_FILE_SOURCE + """
import otter.test_files.exception_test as _exception_test
from otter.test_files.abstract_test import TestCaseResult as _Result


def _run(self, env):
    self.test_case_results = [_Result(test_case=c, message="passed", passed=True) for c in self.test_cases]


_exception_test.ExceptionTestFile.run = _run
"""

# Code that runs in otter's grading process when it unpickles what the attack planted: it marks
# every case passed in what grade_notebook returns, switches plugins off, and leaves the marker.
GRADING_PROCESS_PAYLOAD = """
import otter.plugins
import otter.run.run_autograder.runners.python_runner as runner
otter.plugins.PluginCollection.run = lambda self, event, *args, **kwargs: []
def grade_notebook(*args, _grade=runner.grade_notebook, **kwargs):
    results = _grade(*args, **kwargs)
    for question in results.results.values():
        for case in question.test_case_results:
            case.passed = True
    return results
runner.grade_notebook = grade_notebook
open({marker!r}, "w").write("code ran in otter's grading process")
"""

# Runs in otter's kernel: the results pickle otter's export cell writes becomes a payload that the
# grading process runs on pickle.load, forging full marks and disabling after_grading plugins.
FORGE_RESULTS_PICKLE = ROOT_FILE_SOURCE + """
import pickle as _pickle

_dumps = _pickle.dumps
_PAYLOAD = {payload!r}


class _Forged:
    def __init__(self, data):
        self.data = data

    def __reduce__(self):
        return (eval, ("(exec(" + repr(_PAYLOAD) + "), __import__('pickle').loads(" + repr(self.data) + "))[1]",))


def _dump(results, file, *args, **kwargs):
    for question in results.results.values():
        for case in question.test_case_results:
            case.passed = True
    file.write(_dumps(_Forged(_dumps(results))))


_pickle.dump = _dump
"""


class _LogPayload:
    """Pickled into a planted .OTTER_LOG: otter dill-loads that file in its grading process."""

    def __init__(self, code: str):
        self.code = code

    def __reduce__(self):
        return (exec, (self.code,))


def otter_log(marker: str) -> bytes:
    import pickle

    return pickle.dumps(_LogPayload(GRADING_PROCESS_PAYLOAD.format(marker=marker)))


def hostile(marker: str) -> dict[str, dict]:
    """Name -> {"base": modules folder, "modules": source to append per module, "extra": zip path -> bytes or None}."""
    payload = GRADING_PROCESS_PAYLOAD.format(marker=marker)
    return {
        # wrong answers for partial_grads, hvp and gd_fit, and torch's comparisons patched on import
        "hostile_allclose": {"base": SOLUTIONS, "modules": {
            "grad.py": PATCH_TORCH + """
def partial_grads(f, x, y):
    return torch.zeros_like(x), torch.zeros_like(y)


def hvp(f, x, v):
    return torch.zeros_like(x)
""",
            "accumulation.py": PATCH_TORCH + """
def gd_fit(X, Y, w0, lr, steps):
    return w0.detach().clone()
"""}, "extra": {}},
        # the stubs, and the root file patches otter's test runner in the kernel
        "hostile_patch_runner": {"base": STUBS, "modules": {}, "extra": {ROOT_FILE: PATCH_OTTER_RUNNER.encode()}},
        # the stubs, and the root file turns otter's results pickle into code for the grading process
        "hostile_pickle": {"base": STUBS, "modules": {},
                           "extra": {ROOT_FILE: FORGE_RESULTS_PICKLE.format(payload=payload).encode()}},
        # the stubs, and a planted .OTTER_LOG that otter dill-loads before it starts the kernel
        "hostile_otter_log": {"base": STUBS, "modules": {}, "extra": {".OTTER_LOG": otter_log(marker)}},
        # the solutions, and a package that shadows `otter` in the kernel, whose working directory
        # is the unpacked submission
        "hostile_shadow_otter": {"base": SOLUTIONS, "modules": {}, "extra": {
            "otter/__init__.py": f"open({marker!r}, 'w').write('student code ran in the kernel')\n".encode()}},
        # the solutions, and the one root .py named so that the kernel, started in the unpacked
        # submission with `python -m ipykernel_launcher`, runs it instead of Jupyter's launcher
        "hostile_kernel_launcher": {"base": SOLUTIONS, "modules": {}, "extra": {
            ROOT_FILE: None,
            "ipykernel_launcher.py": f"open({marker!r}, 'w').write('student code ran as the kernel')\n".encode()}},
    }


def modules_of(base: Path, appended: dict[str, str]) -> dict[str, bytes]:
    """The modules of `base`, with source appended to some (a later def replaces an earlier one)."""
    modules = {m: (base / m).read_bytes() for m in intake.module_files()}
    for module, source in appended.items():
        modules[module] += source.encode()
    return modules


def write_zip(out: Path, modules: dict[str, bytes], extra: dict[str, bytes | None] | None = None) -> Path:
    """The zip `grader submit` makes for these modules, with extra files added, replaced or (None) left out."""
    files = {**submission_files(modules), **(extra or {})}
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            if data is not None:
                zf.writestr(name, data)
    return out


def wrong_zip(name: str, out: Path) -> Path:
    return write_zip(out, modules_of(SOLUTIONS, WRONG[name]))
