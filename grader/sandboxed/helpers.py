"""Worker-side helpers: the tables of functions, graphs and probes that tests hand to student code.

A callable cannot cross the boundary as data, so a test names one (`Fn("sum_cubes")`,
`Graph("mlp", args)`, `probe="smooth_abs"`) and the worker builds it from the three tables here:
`FUNCTIONS`, `GRAPHS`, `PROBES`. The course fills them: its helper files (the course file's
`helpers:`, next to its tests, e.g. `grader/cases/public/helpers.py`) are loaded by path, in
`load_course`, in the zygote before any fork (or in a spawned worker before its first request),
always before student code runs. That is the one place the sandboxed side runs course code; it
imports nothing of the cases (an import-linter contract), since that package also holds the
hidden tests and the oracle. The engine's own probe, `docstring_examples`, is defined here.

`warm_up()` runs the kinds of autograd work the tests ask for once, in the zygote, before any fork.
Everything here runs in the worker and imports nothing of the grader.
"""

from __future__ import annotations

import sys

import torch

FUNCTIONS: dict = {}  # name -> a callable f (Fn)
GRAPHS: dict = {}  # name -> a function that builds an autograd graph (Graph)
PROBES: dict = {}  # name -> a function that calls the student's target and returns what to judge
_COURSE_WARM_UPS: list = []


def load_course(paths: list[str]) -> None:
    """Load the course's helper files by path into the three tables (a name defined twice is an error).

    Each is registered as `grader.sandboxed.helpers_course_<n>`: a module of the sandboxed side, so
    the seal guards its functions and tables like the worker's own (a submission that rewrites a probe
    is caught)."""
    import importlib.util

    for index, path in enumerate(paths):
        name = f"{__name__}_course_{index}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        for table, name in ((FUNCTIONS, "FUNCTIONS"), (GRAPHS, "GRAPHS"), (PROBES, "PROBES")):
            entries = getattr(module, name, {})
            twice = sorted(set(entries) & set(table))
            if twice:
                raise ValueError(f"{path}: {name} defines {', '.join(twice)} again")
            table.update(entries)
        if callable(getattr(module, "warm_up", None)):
            _COURSE_WARM_UPS.append(module.warm_up)


def probe_docstring_examples(target, name: str, sources: list):
    """Run a docstring's examples in order, as doctest does, with `torch` and the student's `name` in
    scope; returns what each printed (its value's repr), or {"raised": "Type: message"} for the
    first that raised, after which the rest are not run. The trusted side compares the texts."""
    import contextlib
    import io

    scope = {"torch": torch, name: target}
    printed: list = []
    for source in sources:
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                exec(compile(str(source), f"<{name} docstring>", "single"), scope)  # noqa: S102 (the course's examples)
        except BaseException as exc:  # noqa: BLE001  (student code: any error ends the examples)
            printed.append({"raised": f"{type(exc).__name__}: {str(exc)[:500]}"})
            break
        printed.append(out.getvalue())
    return printed


PROBES["docstring_examples"] = probe_docstring_examples


def warm_up() -> None:
    """Run the kinds of autograd work the tests ask for once, in the zygote, before any fork.

    Some first calls load Python modules lazily (a first backward through torch.cat imports
    sympy, about 0.3 s) or fill caches; paying that once here keeps every worker fast. The
    course's helpers warm up their own functions and graphs.
    """
    for dtype in (torch.float32, torch.float64):
        x = torch.linspace(-1, 1, 6, dtype=dtype).requires_grad_(True)
        y = torch.cat([torch.sigmoid(x) * torch.exp(x), torch.relu(x) + torch.tanh(x).sin()])
        y = torch.stack([y, y.cumsum(0)]).reshape(-1, 2) @ torch.ones(2, dtype=dtype)
        (g,) = torch.autograd.grad(y, x, grad_outputs=torch.ones_like(y), create_graph=True)
        torch.autograd.grad(g.pow(2).sum(), x, retain_graph=True)
        torch.autograd.backward(y, grad_tensors=torch.ones_like(y))
        with torch.no_grad():
            x.add_(1)
        with torch.inference_mode():
            torch.logsumexp(x * 2, 0)
    for course_warm_up in _COURSE_WARM_UPS:
        course_warm_up()
