"""The boundary between student code and the worker's own code, in the one process they share.

The worker runs student code in *steps*: importing a module, finding a function, calling it, and,
inside a probe, each autograd pass that runs the student's `Function` (forward in `apply`, backward
in each derivative). Between steps, and after the last one, the worker's own code runs: a probe's
next step, the report about what came back, the reply. Student code must not be able to steer it.

- `step(fn, args)` runs one step and then `settle()`, before the worker does anything else. What
  the step raised is described (type and message, plain strings) while student code may still run.
- `settle()` puts back, and names, whatever the step left that would run student code inside the
  worker's own torch calls or change what they compute: torch function and dispatch modes,
  saved-tensor hooks, a compiled-autograd compiler, a frame-evaluation hook, Python signal
  handlers, interval timers, an alarm and the switch interval, and the torch objects the grader relies on (`RELIED_ON`: the autograd entry points,
  the execution engine, the methods of Function and Tensor), compared with those captured when
  this module was imported, before any student code. Anything it had to put back makes the
  call "tampered". It also pauses the garbage collector and keeps every object the steps saw
  alive until the next call's first step: no finalizer of the student's runs in between.
- `install_audit_hook()`, once per worker before any student code, refuses what no check
  afterwards could see: sys.settrace and sys.setprofile (a trace or profile function runs on
  every call and line of the worker's own code and can rewrite its variables), new audit hooks,
  rewriting a function's code or defaults (so that a function of the worker, once checked,
  stays what it was), and the routes to the worker's frames and objects: other threads' frames,
  generators' frames, sys._getframe returning a grader frame, gc's object views and ctypes. A
  refusal fails the step (`REFUSALS`), caught or not. `refuse_kernel_registration()` closes
  torch.library's way to the dispatcher's tables of aten operators.

The worker's own code after a step calls torch only through C functions and bound methods
captured at import (see `grader.sandboxed.helpers` and `grader.sandboxed.worker`), never through
torch's Python namespaces, which student code can change and change back within a step.

What this does not stop: threads the student started run whenever the worker releases the GIL
between two steps (the reply itself is built without them: `grader.sandboxed.worker.Worker._reply`).
The seal (`grader.sandboxed.seal`) guards the worker's own modules the same way.
"""

from __future__ import annotations

import _signal
import _thread
import gc
import signal
import sys
from itertools import repeat
from operator import is_
from types import FunctionType

import torch
import torch.autograd.function
import torch.autograd.graph
import torch.autograd.variable
import torch.utils._device

_C = torch._C
_MISSING = object()
KEEP: list = []  # what the current call's steps saw, kept alive until the next call's first step (`step`)
REFUSALS: list = []  # what the audit hook refused during the current step: the step fails with it (`step`)

# ----------------------------------------------------------------------------- what the grader relies on

# The Python objects of torch's autograd the grader relies on, by namespace or class: a step that
# changes one of them tampered with the grader, even if what it did no longer reaches the probes.
RELIED_ON = {
    "torch.autograd": ("grad", "backward", "_engine_run_backward", "Function", "Variable"),
    "torch.autograd.graph": ("_engine_run_backward", "Variable"),
    "torch.autograd.function": ("Function",),
    "torch.autograd.variable": ("Variable", "ImperativeEngine"),
    "torch.autograd.function.Function": ("apply", "__call__"),
    "torch.autograd.variable.Variable": ("_execution_engine",),
    "torch.Tensor": ("backward", "detach", "register_hook", "__torch_function__", "__torch_dispatch__"),
}


def _owner(name: str):
    """The module or class called `name` (a class by its module's attribute)."""
    if name in sys.modules:
        return sys.modules[name]
    module, _, attr = name.rpartition(".")
    return vars(sys.modules[module])[attr]


def take() -> tuple:
    """The relied-on objects as they are now. Taken when the worker starts, before any student code
    and after the worker's own call recorders are in place:

    - (label, module or class, its namespace, where each name stands in it, the names, the objects
      they hold) for `RELIED_ON`;
    - (label, function, what its closure's cells hold) for each relied-on Python function with a
      closure (the recorders around torch.autograd.grad and backward, the function each wraps,
      Function.apply's __class__ cell): their code and defaults cannot change (the audit hook),
      what their cells hold can."""
    names, functions = [], []
    for label, keys in RELIED_ON.items():
        owner = _owner(label)
        space = owner.__dict__
        order = list(space)
        values = tuple(space[key] for key in keys)
        names.append((label, owner, space, tuple(order.index(key) for key in keys), keys, values))
        for key, value in zip(keys, values):
            f = value.__func__ if type(value) in (classmethod, staticmethod) else value
            while type(f) is FunctionType:
                if f.__closure__:
                    functions.append((f"{label}.{key}", f, tuple(c.cell_contents for c in f.__closure__)))
                f = f.__dict__.get("__wrapped__")
    return tuple(names), tuple(functions)


# ----------------------------------------------------------------------------- settle
#
# Each function below is self-contained on purpose, like `grader.sandboxed.seal.check`: it looks up no
# global or builtin name at run time (everything it uses is a default argument), and the audit hook
# keeps its code and defaults as they are, so that what a step changed cannot change them.

_SIGNALS = tuple(s for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP))
_MAIN_THREAD = _thread.get_ident()  # the zygote's, and so its workers': Python runs signal handlers there


def _signal_handlers(_get_ident=_thread.get_ident, _main=_MAIN_THREAD, _signals=_SIGNALS,
                     _getsignal=_signal.getsignal, _signal=_signal.signal, _dfl=_signal.SIG_DFL,
                     _default_int=_signal.default_int_handler, _callable=callable) -> str | None:
    """Python signal handlers, reset: a handler runs between any two lines of the worker's code."""
    problem = None
    if _get_ident() == _main:  # (the in-process floor serves from another thread: no handlers there)
        for sig in _signals:
            handler = _getsignal(sig)
            if _callable(handler) and handler is not _default_int:
                _signal(sig, _dfl)
                problem = "a Python signal handler (signal.signal)"
    return problem


def _timers(_setitimer=_signal.setitimer, _getitimer=_signal.getitimer,
            _which=(_signal.ITIMER_REAL, _signal.ITIMER_VIRTUAL, _signal.ITIMER_PROF), _alarm=_signal.alarm,
            _getswitch=sys.getswitchinterval, _setswitch=sys.setswitchinterval,
            _switch=sys.getswitchinterval()) -> str | None:
    """Interval timers, an alarm and the thread switch interval, reset: a timer armed in a step would
    deliver its signal in a later one, or end the worker where no PID namespace ignores it (the
    process backend)."""
    problem = None
    for which in _which:
        if _getitimer(which) != (0.0, 0.0):
            _setitimer(which, 0.0, 0.0)
            problem = "an interval timer (signal.setitimer)"
    if _alarm(0):
        problem = problem or "an alarm (signal.alarm)"
    if _getswitch() != _switch:
        _setswitch(_switch)
        problem = problem or "the thread switch interval (sys.setswitchinterval)"
    return problem


def _torch_state(_type=type, _tf_len=_C._len_torch_function_stack, _tf_top=_C._get_function_stack_at,
                 _tf_pop=_C._pop_torch_function_stack, _device_context=torch.utils._device.DeviceContext,
                 _td_len=_C._len_torch_dispatch_stack, _td_pop=_C._pop_torch_dispatch_stack,
                 _infra=tuple(_C._TorchDispatchModeKey.__members__.values()), _get_infra=_C._get_dispatch_mode,
                 _unset_infra=_C._unset_dispatch_mode, _saved_top=_C._autograd._top_saved_tensors_default_hooks,
                 _saved_pop=_C._autograd._pop_saved_tensors_default_hooks,
                 _set_compiler=_C._dynamo.compiled_autograd.set_autograd_compiler,
                 _get_frame_hook=_C._dynamo.eval_frame.get_eval_frame_callback,
                 _set_frame_hook=_C._dynamo.eval_frame.set_eval_frame,
                 _included=_C._dispatch_tls_local_include_set, _excluded=_C._dispatch_tls_local_exclude_set,
                 _tls=(_C._dispatch_tls_local_include_set(), _C._dispatch_tls_local_exclude_set()),
                 _keyset_eq=_C.DispatchKeySet.__eq__, _gettrace=sys.gettrace,
                 _getprofile=sys.getprofile) -> str | None:
    """torch and interpreter state that would run Python code inside the worker's own torch calls, or
    change what they compute, put back: modes, saved-tensor hooks, a compiled-autograd compiler, a
    frame evaluation hook (torch._dynamo), thread-local dispatch keys."""
    problem = None
    if _gettrace() is not None or _getprofile() is not None:  # (the audit hook refuses to set them)
        problem = "a trace or profile function"
    while _tf_len():
        if _type(_tf_top(_tf_len() - 1)) is not _device_context:  # torch.set_default_device is no tampering
            problem = problem or "a torch function mode"
        _tf_pop()
    while _td_len():
        _td_pop(None)
        problem = problem or "a torch dispatch mode"
    for key in _infra:
        if _get_infra(key) is not None:
            _unset_infra(key)
            problem = problem or "a torch dispatch mode"
    while _saved_top(False) is not None:
        _saved_pop()
        problem = problem or "saved-tensor hooks (torch.autograd.graph.saved_tensors_hooks)"
    if _set_compiler(None, False)[0] is not None:
        problem = problem or "a compiled-autograd compiler"
    if _get_frame_hook() is not None:
        _set_frame_hook(None)
        problem = problem or "a frame evaluation hook (torch._dynamo)"
    if not (_keyset_eq(_included(), _tls[0]) and _keyset_eq(_excluded(), _tls[1])):
        problem = problem or "torch's thread-local dispatch keys"
    return problem


def _relied(relied: tuple, _type=type, _str=str, _dict=dict, _tuple=tuple, _len=len, _zip=zip, _all=all,
            _map=map, _is=is_, _repeat=repeat, _missing=_MISSING, _set_class_attr=type.__setattr__,
            _del_class_attr=type.__delattr__) -> str | None:
    """The relied-on objects (`take()`), compared with what their names hold now, and put back.

    Compared by position in each namespace's order, without looking names up: a name is looked up
    only once something moved, and only in a namespace whose keys are all plain str (a key of
    another type could run the student's code when compared)."""
    problem = None
    names, functions = relied
    for label, owner, space, positions, keys, values in names:
        order, now = _tuple(space), _tuple(space.values())
        if _all(_map(_is, _map(order.__getitem__, positions), keys)) and \
                _all(_map(_is, _map(now.__getitem__, positions), values)):
            continue
        if not _all(_map(_is, _map(_type, order), _repeat(_str))):
            return label + ": a name that is not a str"  # not put back: the worker is not used again
        for key, value in _zip(keys, values):
            if space.get(key, _missing) is value:
                continue
            problem = problem or label + "." + key
            if _type(space) is _dict:  # a module's namespace
                space[key] = value
            else:
                _set_class_attr(owner, key, value)
    for label, f, contents in functions:
        for cell, value in _zip(f.__closure__, contents):
            if cell.cell_contents is not value:
                problem = problem or label + " (what its closure holds)"
                cell.cell_contents = value
    return problem


def torch_left(_torch_state=_torch_state) -> str | None:
    """`settle`'s torch part alone (modes, saved-tensor hooks, a compiler, a frame hook, dispatch keys):
    what a call puts back and names before it records anything about its arguments (4 us, against
    40 us for all of `settle`)."""
    return _torch_state()


def settle(relied: tuple, _signal_handlers=_signal_handlers, _timers=_timers, _torch_state=_torch_state,
           _relied=_relied, _gc_disable=gc.disable) -> str | None:
    """Put back what the last step of student code left behind, and name it (the first thing), or
    return None when it left nothing. See the module's docstring."""
    timers = _timers()  # first: a timer could fire in the middle of the rest
    handlers = _signal_handlers() or timers
    _gc_disable()  # until the next step: no collection, so no finalizer or gc callback of the student's
    torch_state = _torch_state()
    names = _relied(relied)
    return handlers or torch_state or names


# ----------------------------------------------------------------------------- steps

def describe(exc: BaseException, _type=type, _str=str, _qualname=type.__dict__["__qualname__"].__get__) -> dict:
    """An exception as plain data: its type's name and its message (student code may run: `__str__`)."""
    try:
        message = _str(exc)
    except BaseException:  # noqa: BLE001  (the student's __str__ raised)
        message = "<the exception's message could not be read>"
    name = _qualname(_type(exc))
    return {"type": name[:100] if _type(name) is _str else "object",
            "message": message[:2000] if _type(message) is _str else "<not a str>"}


# The tags of a step's failure, (tag, payload). Plain strings, the probes' contract (the course's
# worker-side helpers compare them and import nothing of the grader); bound as `step`'s defaults.
RAISED = "raised"  # the student's code raised: payload {"type", "message"}
TAMPERED = "tampered"  # it changed what the worker relies on: payload, what changed


def step(fn, args: tuple = (), kwargs: dict | None = None, relied: tuple = (), first: bool = False,
         describe=describe, _settle=settle, _keep=KEEP, _refusals=REFUSALS, _gc_enable=gc.enable, _type=type,
         _dict=dict, _str=str, _tuple=tuple, _base=BaseException, _raised=RAISED, _tampered=TAMPERED) -> tuple:
    """Run `fn(*args, **kwargs)`, a step of student code, then `settle(relied)`. Returns (value,
    failure): failure is None, (RAISED, {"type", "message"}) or (TAMPERED, what).

    `first`: the call's first step, which lets go of what the previous call's steps kept (their
    finalizers run now, in student time)."""
    _gc_enable()
    if first:
        _keep.clear()
        _refusals.clear()  # (a thread of an earlier call refused after its last step: not this call's)
    value = failure = None
    try:
        value = fn(*args, **(kwargs or {}))
    except _base as exc:  # noqa: BLE001  (student code: SystemExit and KeyboardInterrupt included)
        _keep.append(exc)
        failure = (_raised, describe(exc))
    problem = _settle(relied)
    _keep.append((fn, args, kwargs, value))
    if problem is not None:
        return None, (_tampered, problem)
    if _refusals:  # refused, even where the student's code caught the refusal: the step fails with it
        message = _refusals[0] if _type(_refusals[0]) is _str else "refused"
        _keep.append(_tuple(_refusals))  # what the step put there goes in the next call's first step
        _refusals.clear()
        return None, (_raised, {"type": "RuntimeError", "message": message})
    if failure is not None:
        record = failure[1]
        if not (_type(record) is _dict and _type(record.get("type")) is _str and _type(record.get("message")) is _str):
            return None, (_tampered, "the description of an exception")
    return value, failure


# ----------------------------------------------------------------------------- torch's namespaces

# torch's public namespaces, put back after every import and call: the modules share one worker, and
# a module that replaces torch.Tensor.__eq__ or torch.allclose for itself must not change how the
# exercises graded after it behave. A change here is no tampering (the relied-on names aside).
NAMESPACES = ("torch", "torch.nn.functional", "torch.autograd", "torch.autograd.functional", "torch.testing",
              "torch.linalg", "torch.func", "torch.Tensor", "torch.autograd.function.Function")


def take_namespaces() -> tuple:
    """(label, module or class, its namespace, its names in order, the objects they hold) for each
    of `NAMESPACES`, as they are now (before any student code)."""
    return tuple((name, owner, owner.__dict__, tuple(owner.__dict__), tuple(owner.__dict__.values()))
                 for name, owner in ((name, _owner(name)) for name in NAMESPACES))


def restore_namespaces(saved: tuple, _type=type, _str=str, _dict=dict, _tuple=tuple, _len=len, _all=all, _map=map,
                       _is=is_, _repeat=repeat, _zip=zip, _frozenset=frozenset, _keep=KEEP,
                       _set_class_attr=type.__setattr__, _del_class_attr=type.__delattr__) -> str | None:
    """Put `take_namespaces()`'s namespaces back as they were. Compared by identity and position;
    a namespace that changed is put back only if all its keys are plain str (returns what is wrong
    otherwise: a key of another type runs code when compared). What is taken out stays alive until
    the next call's first step (`KEEP`): its finalizers run in student time."""
    for label, owner, space, keys, values in saved:
        # compared in place, allocating nothing (the namespaces are large: torch's holds 1,500 names);
        # no code of the student's runs here that could change a namespace while it is iterated
        if _len(space) == _len(keys) and _all(_map(_is, space, keys)) and _all(_map(_is, space.values(), values)):
            continue
        now_keys, now_values = _tuple(space), _tuple(space.values())
        if not _all(_map(_is, _map(_type, now_keys), _repeat(_str))):
            return label + ": a name that is not a str"
        _keep.append(now_values)
        if _type(space) is _dict:  # a module's namespace: as it was, in its order
            space.clear()
            space.update(_zip(keys, values))
            continue
        known = _frozenset(keys)
        for key in now_keys:
            if key not in known:
                _del_class_attr(owner, key)
        for key, value in _zip(keys, values):
            if space.get(key) is not value:
                _set_class_attr(owner, key, value)
    return None


# ----------------------------------------------------------------------------- the audit hook

_VETOED = frozenset({"sys.settrace", "sys.setprofile", "sys.addaudithook"})
_FROZEN = frozenset({"__code__", "__defaults__", "__kwdefaults__"})
# Refused from the moment the hook is installed (the worker's own code uses none of them after that):
# another thread's frames, the garbage collector's view of every object, and ctypes (raw memory,
# foreign calls, loading libraries): each reaches the worker's objects by a route no check sees.
_REFUSED = frozenset({"sys._current_frames", "sys._current_exceptions", "gc.get_objects", "gc.get_referrers",
                      "gc.get_referents",
                      # a new interpreter in this process: an audit hook added from Python is its interpreter's
                      # only, so a subinterpreter has none (ctypes there writes into this one's memory)
                      "cpython.PyInterpreterState_New"})
# CPython's test and interpreter extension modules: raw memory and reference-count misuse on purpose
# (_testcapi and _testinternalcapi also start subinterpreters); no submission needs them.
_REFUSED_MODULES = frozenset({"_testcapi", "_testinternalcapi", "_testbuffer", "_testmultiphase", "_testsinglephase",
                              "_testimportmultiple", "_testclinic", "_xxtestfuzz", "_ctypes_test",
                              "_xxsubinterpreters", "_xxinterpchannels", "_xxinterpqueues", "_interpreters",
                              "_interpchannels", "_interpqueues"})
_GENERATOR_FRAMES = frozenset({"gi_frame", "cr_frame", "ag_frame"})  # a suspended generator's own frame
# Frequent events the hook lets through whatever their arguments (importing a submission compiles, execs
# and opens; id() and os.environ raise events too): looked up first, so that each costs one set look-up
# (about 0.2 us, where going through every branch took 0.5). No branch of `_audit` refuses one of them.
_UNCHECKED = frozenset({"builtins.id", "compile", "exec", "open", "os.putenv", "os.unsetenv",
                        "os.listdir", "os.chdir"})


def refusal(what: str) -> str:
    """The message of a refusal, in English and Chinese, naming what was refused."""
    return f"refused: the grader does not allow {what} in a submission / 已拒绝：评分程序不允许提交的代码使用 {what}"


def _worker_frame(frame, _get=dict.get, _type=type, _str=str) -> bool:
    """Whether a frame runs the grader's own code (its module is grader or grader.*; the course's
    probes are loaded as grader.sandboxed.helpers_course_<n>). Reads f_globals, which is not audited."""
    name = _get(frame.f_globals, "__name__")
    return _type(name) is _str and (name == "grader" or name.startswith("grader."))


def _audit(event: str, args: tuple, _vetoed=_VETOED, _frozen=_FROZEN, _refused=_REFUSED, _refused_modules=_REFUSED_MODULES,
           _generator_frames=_GENERATOR_FRAMES, _unchecked=_UNCHECKED, _refusals=REFUSALS, _refusal=refusal,
           _worker_frame=_worker_frame, _function=FunctionType, _type=type, _str=str, _getattr=getattr,
           _error=RuntimeError) -> None:
    """Refuse what would let student code rewrite the worker's own code while it runs, or reach the
    worker's frames and objects by a route no check afterwards could see. A function's defaults may
    be set once, where it has none (collections.namedtuple does so as it builds a class).

    `sys._getframe` stays allowed where it returns a frame of code other than the grader's:
    logging, collections.namedtuple and typing call it for their caller's frame. What the frames
    above it hold is made harmless instead (see `grader.sandboxed.worker.Worker.call`)."""
    if event in _unchecked:  # (the frequent events no branch below refuses: nothing to do)
        return
    what = None
    if event == "object.__getattr__":  # the most frequent event: a traceback's frames, ...
        if args[1] in _generator_frames:
            what = "a generator's or coroutine's frame (" + _str(args[1]) + ")"
    elif event in _vetoed or event.startswith("sys.monitoring"):
        what = event
    elif event in _refused or event.startswith("ctypes."):
        what = event
    elif event == "import":
        if _type(args[0]) is _str and args[0].partition(".")[0] in _refused_modules:
            what = args[0]
    elif event == "sys._getframe":
        if _worker_frame(args[0]):
            what = "sys._getframe reaching the grader's own frames"
    elif event == "object.__setattr__" and _type(args[0]) is _function and args[1] in _frozen \
            and (args[1] == "__code__" or _getattr(args[0], args[1]) is not None):
        what = "rewriting a function's " + args[1]
    if what is not None:
        message = _refusal(what)
        _refusals.append(message)
        raise _error(message)


def install_audit_hook() -> None:
    """Once per worker, before any student code. Audit hooks cannot be removed."""
    sys.addaudithook(_audit)


# Dispatch keys a kernel of an aten operator may still be registered for in a worker: none of them is
# on the way of the worker's own tensors (dense, CPU or CUDA); torch registers some lazily (torch.func's
# batching rules) when a step first uses what needs them.
_HARMLESS_KEYS = frozenset({"Meta", "FuncTorchBatched", "FuncTorchVmapMode", "FuncTorchGradWrapper",
                            "FuncTorchDynamicLayerFrontMode", "FuncTorchDynamicLayerBackMode", "Functionalize",
                            "BatchedNestedTensor", "SparseCPU", "SparseCUDA", "SparseCsrCPU", "SparseCsrCUDA",
                            "QuantizedCPU", "QuantizedCUDA", "NestedTensorCPU", "NestedTensorCUDA"})
_GUARDED_NAMESPACES = frozenset({"aten", "_"})  # the worker's own operators; "_": fallbacks for every operator


def _registration_gate(original, _refusals=REFUSALS, _message=refusal("registering kernels for aten operators "
                                                                      "(torch.library)"),
                       _namespaces=_GUARDED_NAMESPACES, _keys=_HARMLESS_KEYS, _type=type, _str=str, _len=len,
                       _error=RuntimeError, _base=BaseException):
    """A generator that holds torch._C._dispatch_library in its own frame, where only `gi_frame` (refused
    by the audit hook) or gc (refused) could reach it, and calls it for what may be registered: a
    library of another namespace, or of aten for a dispatch key the worker's tensors never reach (C++
    keeps a library's kernels to its own namespace and key)."""
    answer = None
    while True:
        args, kwargs = yield answer
        ns = args[1] if _len(args) > 1 else kwargs.get("ns")
        key = args[2] if _len(args) > 2 else kwargs.get("dispatch_key", "")
        if not (_type(ns) is _str and _type(key) is _str) or (ns in _namespaces and key not in _keys):
            _refusals.append(_message)
            answer = (False, _error(_message))
            continue
        try:
            answer = (True, original(*args, **kwargs))
        except _base as exc:  # noqa: BLE001  (handed to the caller, the gate stays open)
            answer = (False, exc)


def refuse_kernel_registration(_C=_C) -> None:
    """Once per worker, before any student code: torch.library (Library, impl, fallback, custom_op)
    registers kernels through torch._C._dispatch_library, the one way from Python to the dispatcher's
    tables. It is replaced by a function that asks `_registration_gate`, which alone holds the original:
    a kernel registered for an aten operator would run the student's code inside the probes' and the
    encoder's own torch calls, so that is refused; other namespaces, which torch itself fills lazily as
    a step first imports torch._dynamo or torch.func, are not."""
    gate = _registration_gate(_C._dispatch_library)
    next(gate)

    def _dispatch_library(*args, _send=gate.send, **kwargs):
        ok, value = _send((args, kwargs))
        if ok:
            return value
        raise value

    _C._dispatch_library = _dispatch_library
