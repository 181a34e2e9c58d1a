"""The worker's tables of course code (`FUNCTIONS`, `GRAPHS`, `PROBES`) and their contract, filled from a course's files.

A callable cannot cross the boundary as data, so a test names one (`Fn("sum_cubes")`,
`Graph("mlp", args)`, `probe="smooth_abs"`) and the worker builds it from the three tables here:
`FUNCTIONS`, `GRAPHS`, `PROBES`. The course fills them: its helper files (the course file's
`helpers:`, next to its tests, e.g. `grader/cases/public/helpers.py`) are loaded by path, in
`load_course`, in the zygote before any fork (or in a spawned worker before its first request),
always before student code runs. That is the one place the sandboxed side runs course code; it
imports nothing of the cases (an import-linter contract), since that package also holds the
hidden tests and the oracle. The engine's own probe, `docstring_examples`, is defined here.

A probe calls the student's target and then works with what came back, in the worker, within
the same call. It is called as `probe(step, relied, target, args, frozen)` and returns (value,
failure), failure None, ("raised", {"type", "message"}) or ("tampered", what). Student code runs
only inside `step(fn, args, kwargs, relied)` (`grader.sandboxed.guard.step`), which returns
(value, failure) with torch already put back as it was. Between steps a probe uses only its
default arguments, bound when its file was loaded, before any student code: C functions and
methods of torch._C (the engine's run_backward, Function's C apply, TensorBase's methods and
getters), never torch's Python namespaces, which student code can change and change back within
a step. It gets the call's arguments built (`args`: what the student's code gets and what the
reply reports) and frozen (`frozen`, from `ArgumentBuilder.freeze` in `grader.sandboxed.worker`:
a tensor as (bytes, dtype, shape, device, requires_grad)), from which it builds the values it
supplies itself when it needs them: student code can reach any tensor in the process.

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


def _run_examples(target, name: str, sources: tuple) -> list:
    """Run a docstring's examples in order, as doctest does, with `torch` and the student's `name` in
    scope. For each: {"shown": its value's repr, as the interpreter displays it, "output": everything
    it wrote to stdout, that repr included: what doctest compares}; {"raised": "Type: message"} for
    the first that raised, after which the rest are not run. What the student's code prints also
    goes on to the call's own stdout (shown under the check in `grader check`). All of it student
    code: one step."""
    import io

    scope = {"torch": torch, name: target}
    printed: list = []
    for source in sources:
        shown, everything, outer = io.StringIO(), io.StringIO(), sys.stdout
        saved_hook = sys.displayhook

        def display(value, shown=shown, everything=everything):
            if value is not None:
                scope["_"] = value
                text = repr(value) + "\n"
                shown.write(text)
                everything.write(text)

        sys.displayhook, sys.stdout = display, _Tee(everything, outer)
        try:
            exec(compile(str(source), f"<{name} docstring>", "single"), scope)  # noqa: S102 (the course's examples)
        except BaseException as exc:  # noqa: BLE001  (student code: any error ends the examples)
            printed.append({"raised": f"{type(exc).__name__}: {str(exc)[:500]}"})
            break
        finally:
            sys.displayhook, sys.stdout = saved_hook, outer
        printed.append({"shown": shown.getvalue(), "output": everything.getvalue()})
    return printed


class _Tee:
    """A stdout that writes to two: the example's own record and the call's stdout."""

    def __init__(self, *streams):
        self.streams = streams

    def write(self, text):
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self):
        for stream in self.streams:
            stream.flush()


def probe_docstring_examples(step, relied, target, args, frozen, _run_examples=_run_examples, _type=type, _str=str,
                             _dict=dict, _list=list, _tuple=tuple, _len=len) -> tuple:
    """A docstring's examples (`_run_examples`); the trusted side compares the texts."""
    printed, failure = step(_run_examples, (target, *args), None, relied)
    if failure is not None:
        return None, failure
    plain = []
    for p in printed if _type(printed) is _list else ():
        items = _tuple(p.items()) if _type(p) is _dict else ()
        if _len(items) == 1 and _type(items[0][0]) is _str and items[0][0] == "raised" and _type(items[0][1]) is _str:
            plain.append({"raised": items[0][1]})
        elif (_len(items) == 2 and _type(items[0][0]) is _str and _type(items[0][1]) is _str
              and _type(items[1][0]) is _str and _type(items[1][1]) is _str
              and items[0][0] == "shown" and items[1][0] == "output"):
            plain.append({"shown": items[0][1], "output": items[1][1]})
    return plain, None


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
        # a docstring example's display (`_run_examples`): torch's first repr of a tensor sets up its
        # printing, about 2.5 ms of each worker's CPU where the zygote has not done it once
        repr(g), repr(x.detach()[0]), repr(torch.ones(2, 2, dtype=dtype))
    repr(torch.arange(3)), repr(torch.tensor(True))
    for course_warm_up in _COURSE_WARM_UPS:
        course_warm_up()
