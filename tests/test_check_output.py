"""What the student's code prints and warns, as `grader check` shows it: captured in the worker per call,
on public checks only, carried back as plain text under the test that produced it; never in what a
hidden test produces. And the docstring rows of real code found in the wild: a CS231n-style numerical
gradient that prints passes its row (its value is compared), a PyHessian-style `hvp` that raises on a
linear f is told about the linear case, not about create_graph=True, which it has.
"""

from __future__ import annotations

import pytest

from grader.display import check_table
from grader.host.runner import Engine, Options
from grader.host.student_code import Fn, StudentCode
from grader.protocol.limits import Limits

from conftest import SOLUTIONS, make_submission

pytestmark = pytest.mark.slow

# hvp as in the reference, with a debug print and a look at a non-leaf tensor's .grad (torch warns)
PRINTING_HVP = (SOLUTIONS / "grad.py").read_text().replace(
    "def hvp(f, x: Tensor, v: Tensor) -> Tensor:\n",
    "def hvp(f, x: Tensor, v: Tensor) -> Tensor:\n"
    "    print('debug: hvp at', x.tolist())\n"
    "    doubled = x.detach().requires_grad_() * 2\n"
    "    doubled.grad  # a non-leaf tensor's .grad: torch's UserWarning\n", 1)

# CS231n's eval_numerical_gradient, in torch: it prints every element's estimate as it goes
CS231N_NUMERICAL_GRADIENT = (SOLUTIONS / "extensions.py").read_text() + '''

def numerical_gradient(f, x_in, eps=1e-6):
    x = x_in.detach().to(torch.float64).clone()
    grad = torch.zeros_like(x)
    with torch.no_grad():
        for ix in range(x.numel()):
            old = x.view(-1)[ix].item()
            x.view(-1)[ix] = old + eps
            fxph = f(x).item()
            x.view(-1)[ix] = old - eps
            fxmh = f(x).item()
            x.view(-1)[ix] = old
            grad.view(-1)[ix] = (fxph - fxmh) / (2 * eps)
            print(ix, grad.view(-1)[ix].item())
    return grad.to(x_in.dtype)
'''

# PyHessian's hessian-vector product (hessian-eigenthings and BackPACK do the same): right for a
# curved f, an error where f is linear (the gradient has no graph to differentiate)
PYHESSIAN_HVP = (SOLUTIONS / "grad.py").read_text() + '''

def hvp(f, x, v):
    x = x.detach().requires_grad_(True)
    gradsH = torch.autograd.grad(f(x), x, create_graph=True)[0]
    hv = torch.autograd.grad(gradsH, x, grad_outputs=v, only_inputs=True, retain_graph=True)[0]
    return hv.detach()
'''

# The routes grading refuses, which the public checks refuse too: hvp through torch.func, and a batched
# jacobian_rows (every row from one call of torch.autograd.grad)
ROUTES = (SOLUTIONS / "grad.py").read_text() + '''

def hvp(f, x, v):
    return torch.func.jvp(torch.func.grad(f), (x.detach(),), (v,))[1].detach()


def jacobian_rows(f, x):
    x = x.detach().requires_grad_(True)
    y = f(x)
    if not y.requires_grad:
        return x.new_zeros((y.numel(), x.numel()))
    eye = torch.eye(y.numel(), dtype=y.dtype)
    return torch.autograd.grad(y, x, grad_outputs=eye, is_grads_batched=True)[0].detach()
'''


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    """The submissions graded with public and hidden tests, as `grader check` shows output (show_output)."""
    # generous limits: a first call into torch.func takes seconds on a loaded machine
    limits = Limits(call_timeout_s=60.0, exercise_budget_s=180.0)
    engine = Engine(Options(seed=0, show_output=True, exercises={"hvp", "jacobian_rows", "numerical_gradient"},
                            limits=limits))
    base = tmp_path_factory.mktemp("output")
    subs = {"printing": {"grad.py": PRINTING_HVP}, "cs231n": {"extensions.py": CS231N_NUMERICAL_GRADIENT},
            "pyhessian": {"grad.py": PYHESSIAN_HVP}, "routes": {"grad.py": ROUTES}}
    try:
        yield {name: engine.grade(make_submission(base / name, files)) for name, files in subs.items()}, engine
    finally:
        engine.close()


def _tests(report: dict, exercise: str) -> dict[str, dict]:
    entry = next(e for e in report["exercises"] if e["name"] == exercise)
    return {t["name"]: t for t in entry["tests"]}


def test_prints_and_warnings_show_under_the_public_test_that_made_them(checked):
    reports, _ = checked
    tests = _tests(reports["printing"], "hvp")
    small = tests["test_hvp_small"]
    assert small["status"] == "passed"
    assert "debug: hvp at [1.0, 2.0]" in small["output"]
    assert "UserWarning" in small["output"] and "not a leaf Tensor" in small["output"]
    assert "grad.py:" in small["output"] and "/work" not in small["output"]  # the student's file, by its name
    assert tests["test_hvp_docstring"]["status"] == "passed"  # the prints do not fail the docstring row
    shown = check_table(reports["printing"], "exercises", width=80, verbose=True)
    assert "your code printed / 你的代码输出了:" in shown and "| debug: hvp at [1.0, 2.0]" in shown
    quiet = check_table(reports["printing"], "exercises", width=80)
    assert "| debug" not in quiet and "grader check -v" in quiet  # passing tests' prints: -v shows them


def test_a_hidden_test_carries_no_output(checked):
    reports, _ = checked
    hidden = [t for t in _tests(reports["printing"], "hvp").values() if t["visibility"] == "hidden"]
    assert hidden and all("output" not in t for t in hidden)


def test_a_call_that_does_not_capture_gets_no_printed_text_back(checked, tmp_path):
    """Grading (no capture): the reply has no `printed`; the print goes to the worker's own stdout."""
    _, engine = checked
    folder = make_submission(tmp_path / "sub", {"grad.py": PRINTING_HVP})
    files = {p.name: p.read_bytes() for p in folder.glob("*.py")}
    student = StudentCode(files, engine.launcher, {"hvp": "grad"}, engine.options.limits)
    import torch

    try:
        call = student.call("hvp", Fn("sum_cubes"), torch.tensor([1.0, 2.0]), torch.tensor([1.0, 0.0]))
        assert call.printed == "" and student.printed == []
        student.capture = True
        call = student.call("hvp", Fn("sum_cubes"), torch.tensor([1.0, 2.0]), torch.tensor([1.0, 0.0]))
        assert call.printed.startswith("debug: hvp at [1.0, 2.0]")
    finally:
        student.close()
    assert "debug: hvp at [1.0, 2.0]" in student.captured_output()  # the uncaptured call's print


def test_a_numerical_gradient_that_prints_passes_its_docstring_row(checked):
    reports, _ = checked
    tests = _tests(reports["cs231n"], "numerical_gradient")
    row = tests["test_numerical_gradient_docstring"]
    assert row["status"] == "passed", row["message"]
    assert row["output"].splitlines()[0].startswith("0 5.0")


def test_a_pyhessian_hvp_is_told_about_the_linear_case(checked):
    reports, _ = checked
    row = _tests(reports["pyhessian"], "hvp")["test_hvp_docstring"]
    assert row["status"] == "failed"
    assert row["mistake"]["id"] == "hvp.linear_f", row
    assert "create_graph=True" not in row["mistake"]["en"]


def test_the_routes_grading_refuses_are_refused_by_the_public_checks(checked):
    reports, _ = checked
    small = _tests(reports["routes"], "hvp")["test_hvp_small"]
    assert small["status"] == "failed" and small["mistake"]["id"] == "hvp.shortcut", small
    rows = _tests(reports["routes"], "jacobian_rows")["test_jacobian_rows_small"]
    assert rows["status"] == "failed" and rows["mistake"]["id"] == "jacobian_rows.one_pass", rows
