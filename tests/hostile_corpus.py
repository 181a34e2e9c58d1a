"""The hostile corpus: one submission per technique, how to build it, and what must happen.

Used by tests/test_hostile.py (which asserts each outcome, with more checks per technique)
and by bench/hostile_figures.py (which grades them all once and counts how many held).
The submissions' sources live in tests/submissions/hostile/<technique>/ (see its README).
"""

from __future__ import annotations

import os
import shutil
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from grader import catalog
from grader.protocol.limits import Limits

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
STUBS = ROOT / "exercises"
CORPUS = ROOT / "tests" / "submissions" / "hostile"
MODULES = tuple(catalog.load().modules)
# The exercises of the modules the techniques attack (a technique's sources name the module it lives in).
GRAD, GRAPH, BACKWARD, ACCUMULATION, INPLACE, EXTENSIONS = (
    catalog.load().exercises_in(m) for m in ("grad.py", "graph.py", "backward.py", "accumulation.py", "inplace.py",
                                             "extensions.py"))

# Engines, by the limits a technique is graded with. Small limits keep the slow ones fast.
LIMITS = {
    "default": Limits(),
    "slow": Limits(call_timeout_s=2, exercise_budget_s=4, submission_budget_s=30, memory_mb=512),
    "tight": Limits(call_timeout_s=1, exercise_budget_s=2, submission_budget_s=6),
}


@dataclass(frozen=True)
class Technique:
    name: str
    attacks: str  # what it goes after
    targets: tuple[str, ...]  # exercises that must score 0; () where it does not target scoring
    outcome: str  # what the test asserts, in words
    engine: str = "default"  # a key of LIMITS: the limits it is graded with
    substitutions: tuple[str, ...] = ()  # @@KEY@@ placeholders its sources need
    kind: str = "folder"  # "folder" or "zip"
    sandbox: str | None = None  # None: the strongest this machine allows; "process"
    extra: dict = field(default_factory=dict, hash=False, compare=False)
    # The targets in the process sandbox (no namespaces), from the score file's sandbox block,
    # where they differ: some attacks land on their own code there. None: `targets` everywhere.
    in_process: Callable[[dict], tuple[str, ...]] | None = field(default=None, hash=False, compare=False)


T = Technique
TECHNIQUES: list[Technique] = [
    T("always_equal", "in-process == comparisons (otter-grader: full marks)", ("hvp",),
      "hvp 0: the value is not a plain tensor; others full"),
    T("tensor_subclass", "torch comparisons through __torch_function__", ("hvp",),
      "hvp 0: a Tensor subclass is not a tensor; others full"),
    T("patch_torch_compare", "torch.allclose/isclose/equal/testing.assert_close/Tensor.__eq__ replaced at import",
      ("hvp",), "hvp 0 (wrong values); the other grad.py exercises full"),
    T("patch_pytest", "pytest/_pytest hooks and the grader plugin patched from the student module", ("hvp",),
      "hvp 0; others full"),
    T("patch_grader_encoder", "grader.sandboxed.worker.Encoder and grader.protocol.wire.pack replaced to report other values", GRAD,
      "grad.py 'tampered': its exercises 0 with that message; others full"),
    T("patch_grader_metadata", "the version counter reported for safe_add_ (w.data.add_) bumped by the encoder",
      INPLACE, "inplace.py 'tampered': safe_add_ (and its module) 0; others full"),
    T("fake_score_file", "fake score files in cwd, /autograder/results, /tmp, ~, the --out folder", ("hvp",),
      "the score file grade_many wrote is the trusted one (hvp 0); nothing else in --out",
      substitutions=("OUT_DIR", "NAME")),
    T("print_flood", "fake JSON and 4 MiB per call on stdout/stderr", (),
      "honest score (100); output capped at the limit, marked as cut"),
    T("read_secrets", "walks /, sys.path, the grader package, /proc, env; prints what looks secret", (),
      "nothing secret in the output (hidden test names, a --hide marker, solutions, a token); honest score",
      substitutions=("TARGETS", "WALK_ROOT")),
    T("env_secrets", "grader environment tokens via os.environ and /proc/*/environ", (),
      "the token planted in the grader's environment is not in the output; honest score"),
    T("network", "TCP/UDP to 127.0.0.1 and ::1, an abstract Unix socket, 1.1.1.1, DNS", (),
      "no connection reaches the test's listeners; honest score", substitutions=("PORT", "ABSTRACT")),
    T("infinite_loop_call", "a function that never returns", ("jacobian_rows",),
      "jacobian_rows 0 (timeout), bounded by the exercise budget; others full", engine="slow"),
    T("infinite_loop_import", "a module whose import never finishes", GRAPH,
      "graph.py 0 (import timeout, once); others full", engine="slow"),
    T("exit_at_import", "sys.exit(0) in backward.py, os._exit(0) in accumulation.py, at import",
      BACKWARD + ACCUMULATION, "those two modules 0 with a message; others full"),
    T("exit_in_call", "os._exit(0) in hvp, sys.exit(0) in jacobian_rows", ("hvp", "jacobian_rows"),
      "the two 0; others full"),
    T("segfault_at_import", "faulthandler._read_null() while importing extensions.py", EXTENSIONS,
      "extensions.py 0 (SIGSEGV named); others full"),
    T("segfault_in_call", "faulthandler._read_null() in hvp", ("hvp",), "hvp 0 (SIGSEGV named); others full"),
    T("memory_bomb", "raise RLIMIT_AS, ask for 20 GB, then use memory up to 1.5 GB", ("hvp",),
      "20 GB refused, hvp 0; limit and peak in the sandbox block; others full", engine="slow",
      substitutions=("TOUCH_MB",)),
    T("fork_memory_bomb", "six forked children with 384 MB each (RLIMIT_AS is per process)", ("hvp",),
      "killed for using too much memory together; hvp 0; others full", engine="slow"),
    T("fork_bomb", "200 sleeping children (bounded)", (),
      "refused at the process limit; no child left afterwards; honest score", substitutions=("COMM",)),
    T("detached_child", "setsid + double fork child that rewrites score files after the worker ends", (),
      "no child left; the score file grade_many wrote is unchanged seconds later; honest score",
      substitutions=("COMM", "OUT_DIR", "NAME")),
    T("threads_left_running", "threads that spin and change kept arguments after returning", (),
      "honest score"),
    T("huge_return", "a 1e8-element tensor, a list nested 1e5 deep, a list of 1e6 items",
      ("hvp", "jacobian_rows", "nth_derivative"), "the three 0; the grader's memory stays small; others full"),
    T("garbage_types", "generators, functions, modules, sets, bytes as results",
      ("hvp", "jacobian_rows", "nth_derivative", "partial_grads"), "the four 0; others full"),
    T("pickle_payload", "__reduce__ payloads as results, as pickled bytes and str",
      ("hvp", "jacobian_rows", "nth_derivative"), "the three 0; the payload's marker file never appears",
      substitutions=("MARKER_FILE",)),
    T("base_exceptions", "KeyboardInterrupt, SystemExit, GeneratorExit, an exception that cannot be printed",
      ("hvp", "jacobian_rows", "nth_derivative", "partial_grads"), "the four 0; the run goes on"),
    T("recursion_bomb", "RecursionError, and recursion past the C stack", ("hvp", "jacobian_rows"),
      "the two 0; others full"),
    T("signal_handlers", "SIGTERM/SIGINT/SIGALRM/... ignored, then an endless loop", ("hvp",),
      "hvp 0 (timeout: SIGKILL cannot be ignored); others full", engine="tight"),
    T("sys_state", "cwd, sys.path, sys.meta_path, sys.modules changed for later imports", (),
      "honest score (100); in the process sandbox with Landlock its writes to /tmp at import are refused: "
      "grad.py 0", in_process=lambda sandbox: GRAD if "Landlock" in sandbox["filesystem"] else ()),
    T("delete_own_files", "its module files deleted or rewritten at import", (), "honest score (100)"),
    T("budget_exhaustion", "many slow calls in four modules, each under the call limit", GRAD + GRAPH + BACKWARD
      + ACCUMULATION, "time charged stops at the submission budget; later exercises 'no time left'; the next "
      "submission graded in full", engine="tight", substitutions=("SLEEP",)),
    T("slowloris_reply", "half a reply frame on the worker's socket, then silence", ("hvp",),
      "hvp 0 (timeout), never a hung run; others full", engine="slow"),
    T("forked_worker_copy", "fork at import: a copy of the worker answering the same socket", (),
      "honest score (100)"),
    T("signal_the_grader", "SIGSTOP/SIGKILL to the parent, pid 1, every pid, kill(-1)", (),
      "the run survives; honest score"),
    T("kill_parent_in_call", "SIGKILL to its parent and its process group from intermediate_grads (issue 18)", (),
      "nothing but the worker can be hit: in a PID namespace it survives (honest score), in the process "
      "sandbox it kills itself (intermediate_grads 0); every other exercise full",
      in_process=lambda sandbox: ("intermediate_grads",)),
    T("zip_traversal", "archive members with '..'", GRAD, "rejected with a message; grad.py 0; nothing written",
      kind="zip"),
    T("zip_absolute_path", "archive members with absolute and drive paths", GRAD,
      "rejected with a message; grad.py 0; nothing written", kind="zip"),
    T("zip_symlink", "a grad.py member that is a symlink to the reference solution", GRAD,
      "rejected; grad.py 0", kind="zip"),
    T("zip_device", "members with character-device and FIFO modes", GRAD + EXTENSIONS, "rejected; those 0",
      kind="zip"),
    T("zip_bomb", "a member inflating to 256 MiB (sizes true and forged), 3000 members", GRAD,
      "stopped at the 1 MiB module limit, no inflation; grad.py 0; others full", kind="zip"),
    T("planted_conftest", "conftest.py and pytest.ini next to the modules (stub grad.py)", GRAD,
      "no effect: grad.py 0 like the stub; others full; never ran"),
    T("planted_startup_files", "sitecustomize.py, usercustomize.py, .pth files", (),
      "no effect, never ran: honest score"),
    T("shadow_modules", "torch.py, pytest.py, numpy.py, json.py, a grader/ package in the submission", (),
      "no effect, never imported: honest score"),
    T("invalid_utf8", "bytes that are not UTF-8 in grad.py", GRAD, "grad.py 0 with a clear message; others full"),
    T("syntax_error", "a syntax error at the end of graph.py", GRAPH,
      "graph.py 0 with the line; others full"),
    T("symlinked_paths", "a linked exercises/ folder and a linked grad.py pointing at the solutions",
      GRAD + GRAPH + BACKWARD + ACCUMULATION + INPLACE + EXTENSIONS, "rejected; nothing of the solutions graded"),
    # issue 17: what the worker's probes use after student code ran in the same call
    T("fake_grad_in_forward", "torch.autograd.grad replaced by SmoothAbs.forward (left in place) to answer the "
      "probe's derivatives", ("SmoothAbs",), "SmoothAbs 0 'tampered'; others full"),
    T("fake_grad_in_backward", "torch.autograd.grad replaced during the probe's first derivative, restored by the "
      "fake itself", ("SmoothAbs",), "SmoothAbs 0 'tampered'; others full"),
    T("fake_grad_at_import", "torch.autograd.grad and its recorder's closure cell replaced at import",
      EXTENSIONS, "extensions.py 'tampered' at import: its exercises 0; others full"),
    T("fake_engine_in_forward", "torch.autograd._engine_run_backward replaced by forward, restored after use",
      ("SmoothAbs",), "SmoothAbs 0 'tampered'; others full"),
    T("fake_execution_engine_at_import", "Variable._execution_engine replaced at import", EXTENSIONS,
      "extensions.py 'tampered' at import: its exercises 0; others full"),
    T("fake_execution_engine_in_backward", "Variable._execution_engine replaced during backward, left in place",
      ("SmoothAbs",), "SmoothAbs 0 'tampered'; others full"),
    T("fake_function_apply_at_import", "the code of torch.autograd.Function.apply rewritten at import", EXTENSIONS,
      "refused at import (__code__): extensions.py 0; others full"),
    T("fake_autograd_backward_in_call", "torch.autograd.backward and torch.is_grad_enabled replaced by "
      "frozen_predict, restored by the fake", ("frozen_predict",), "frozen_predict 0 'tampered'; others full"),
    T("fake_tensor_backward_in_call", "Tensor.backward and torch.is_grad_enabled replaced by frozen_predict, "
      "left in place", ("frozen_predict",), "frozen_predict 0 'tampered'; others full"),
    T("fake_tensor_backward_at_import", "Tensor.backward and torch.is_grad_enabled replaced at import", EXTENSIONS,
      "extensions.py 'tampered' at import: its exercises 0; others full"),
    T("fake_tensor_backward_make_leaf", "Tensor.backward replaced by a right make_leaf before the probe's backward",
      ("make_leaf",), "make_leaf 0 'tampered'; others full"),
    T("torch_function_mode", "a TorchFunctionMode left active by forward rewrites the probe's derivatives",
      ("SmoothAbs",), "SmoothAbs 0 'tampered'; others full"),
    T("profiler_in_forward", "sys.setprofile in forward, to rewrite what the probe returns", ("SmoothAbs",),
      "refused (the worker's audit hook): SmoothAbs 0; others full"),
    T("finalizer_after_call", "a finalizer on safe_add_'s argument edits the reply after it is encoded",
      ("safe_add_",), "safe_add_ 0 as its w.data mistake earns; others full"),
    # issue 29: the worker's own facts out of the step's reach
    T("frame_back_versions", "safe_add_ (w.data.add_) lowers the version the worker recorded, through f_back",
      ("safe_add_",), "safe_add_ 0 as its w.data mistake earns; others full"),
    T("forged_reply_frame", "safe_add_ (w.data.add_) writes a reply of its own, claiming the version rose, on the "
      "worker's socket, then returns, raises, exits or hangs (MODE)", ("safe_add_",),
      "safe_add_ 0 (a second reply to one request: tampered; or its w.data mistake); others full", engine="slow",
      substitutions=("MODE",)),
    T("ctypes_probe_defaults", "ctypes writes a forged run_backward into a probe's __defaults__ at import",
      EXTENSIONS, "extensions.py 0 (refused or tampered at import); others full"),
    T("subinterpreter_ctypes", "ctypes in a subinterpreter (which has no audit hook) writes a forged run_backward "
      "into a probe's __defaults__ at import", EXTENSIONS, "extensions.py 0 (the subinterpreter refused); others full"),
    T("counter_answer", "graph_node_counts returns a collections.Counter (a dict)", (),
      "honest score (100): judged as the plain dict of its items"),
    T("kernel_clone_override", "a CPU kernel for aten::clone registered with torch.library at import hands the "
      "probe right derivatives", EXTENSIONS, "refused at import (torch.library): extensions.py 0; others full"),
    T("tb_frame_probe_values", "SmoothAbs's double backward copies the right first derivative into the probe's "
      "saved tensor, found through a traceback's tb_frame", ("SmoothAbs",),
      "SmoothAbs 0 (the probe keeps bytes: its sign(x) backward is judged); others full"),
    T("gi_frame_probe_values", "the same, with frames found through a running generator's gi_frame", ("SmoothAbs",),
      "refused (gi_frame): SmoothAbs 0; others full"),
    T("current_frames_thread", "the same, with the main thread's frames read by a thread's sys._current_frames",
      ("SmoothAbs",), "refused (sys._current_frames): SmoothAbs 0; others full"),
    T("ctypes_argument_slot", "add_into(inplace=True) returns a new tensor and writes it into the worker's "
      "argument tuple with ctypes", ("add_into",), "refused (ctypes): add_into 0; others full"),
    T("itimer_virtual_at_import", "setitimer(ITIMER_VIRTUAL) armed at import and never cancelled", GRAD,
      "grad.py 'tampered' at import (the timer cancelled); others full, in every sandbox"),
    T("reply_thread_race", "a thread rewrites the reply (requires_grad, grad_fn, is_leaf) while it is encoded, "
      "through frames kept from a step", ("frozen_predict",),
      "frozen_predict 0 every run (the reply is built without the submission's threads); others full"),
    T("worker_method_via_frames", "safe_add_ (w.data.add_) shadows the worker's reply-building method on its "
      "instance, reached through f_back, to report a higher version", ("safe_add_",),
      "safe_add_ 0 as its w.data mistake earns; others full"),
    T("worker_counts_via_frames", "safe_add_ (w.data.add_) replaces the worker's thread count, reached through "
      "f_back, with an object whose comparison pushes a torch function mode after the step", ("safe_add_",),
      "safe_add_ 0 as its w.data mistake earns; others full"),
    T("finalizer_in_worker_time", "safe_add_ (w.data.add_) plants a finalizer in the serve loop's request, reached "
      "through f_back, that lowers the versions the next call records", ("safe_add_",),
      "safe_add_ 0 as its w.data mistake earns; others full"),
    T("logging_and_warnings", "honest code using logging, warnings.warn, traceback printing, namedtuple, enum, "
      "typing.NamedTuple", (), "honest score (100): nothing of it refused"),
]
BY_NAME = {t.name: t for t in TECHNIQUES}


# ----------------------------------------------------------------------------- building

def build(technique: Technique | str, dest: Path, **subs) -> Path:
    """The submission of `technique` under `dest` (a folder, or a .zip for zip techniques)."""
    t = BY_NAME[technique] if isinstance(technique, str) else technique
    missing = set(t.substitutions) - set(subs)
    if missing:
        raise ValueError(f"{t.name} needs {sorted(missing)}")
    builder = SPECIAL.get(t.name)
    if builder is not None:
        return builder(dest, **subs)
    return build_folder(CORPUS / t.name, dest, subs)


def build_folder(source: Path, dest: Path, subs: dict, base: Path = SOLUTIONS) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for module in MODULES:
        shutil.copy(base / module, dest / module)
    for path in sorted(source.iterdir()):
        if path.name.endswith(".append.py"):
            module = path.name.replace(".append.py", ".py")
            text = (dest / module).read_text() + fill(path.read_text(), subs)
            (dest / module).write_text(text)
        elif path.name in MODULES:
            (dest / path.name).write_text(fill(path.read_text(), subs))
    files = source / "files"
    if files.is_dir():
        shutil.copytree(files, dest, dirs_exist_ok=True)
    return dest


def substitutions(t: Technique, work: Path, **given) -> dict:
    """A value for every placeholder `t` needs, for grading it outside its own test: output and
    marker paths under `work`, a fresh process name, a port nothing listens on. `given` wins."""
    import socket
    import uuid

    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    defaults = {
        "OUT_DIR": work / f"{t.name}-out", "NAME": t.name, "COMM": "agl" + uuid.uuid4().hex[:10], "PORT": port,
        "ABSTRACT": f"agl-{uuid.uuid4().hex}", "WALK_ROOT": "/",
        "TARGETS": repr([str(ROOT / "grader/cases/hidden"), str(ROOT / "grader/cases/course.yaml"), str(SOLUTIONS)]),
        "TOUCH_MB": 3 * LIMITS[t.engine].memory_mb, "MARKER_FILE": work / f"{t.name}-unpickled", "SLEEP": 0.3,
        "MODE": "continue",
    }
    return {key: given.get(key, defaults[key]) for key in t.substitutions}


def fill(text: str, subs: dict) -> str:
    for key, value in subs.items():
        text = text.replace(f"@@{key}@@", str(value))
    if "@@" in text:
        raise ValueError(f"unfilled placeholder in: {text[text.index('@@'):][:40]!r}")
    return text


def _planted_conftest(dest: Path, **subs) -> Path:
    folder = build_folder(CORPUS / "planted_conftest", dest, subs)
    shutil.copy(STUBS / "grad.py", folder / "grad.py")
    return folder


def _invalid_utf8(dest: Path, **subs) -> Path:
    folder = build_folder(CORPUS / "invalid_utf8", dest, subs)
    with open(folder / "grad.py", "ab") as f:
        f.write(b'\nGREETING = "caf\xe9 \xff\xfe"  # Latin-1 and stray bytes: not UTF-8\n')
    return folder


def _symlinked_paths(dest: Path, **subs) -> Path:
    """Two folders under dest: `linked_dir` (exercises -> solutions) and `linked_module`."""
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "linked_dir").mkdir()
    os.symlink(SOLUTIONS, dest / "linked_dir" / "exercises")
    build_folder(CORPUS / "symlinked_paths", dest / "linked_module", subs, base=STUBS)
    (dest / "linked_module" / "grad.py").unlink()
    os.symlink(SOLUTIONS / "grad.py", dest / "linked_module" / "grad.py")
    return dest


def _zip(dest: Path, members: list[tuple[zipfile.ZipInfo | str, bytes]], modules=MODULES) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf:
        for module in modules:
            zf.writestr(_regular(module), (SOLUTIONS / module).read_bytes())
        for info, data in members:
            zf.writestr(info, data)
    return dest


def _regular(name: str, mode: int = stat.S_IFREG | 0o644) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
    info.external_attr = mode << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def _payload(name: str) -> bytes:
    return (CORPUS / name / "payload.py").read_bytes()


def _zip_traversal(dest: Path, **subs) -> Path:
    payload = _payload("zip_traversal")
    names = ["../grad.py", "exercises/../../grad.py", "a/../../../x.py", "..\\grad.py", "./../grad.py"]
    return _zip(dest.with_suffix(".zip"), [(_regular(n), payload) for n in names],
                [m for m in MODULES if m != "grad.py"])


def _zip_absolute_path(dest: Path, absolute: str = "/tmp/autograd-lab-zip-absolute/grad.py", **subs) -> Path:
    payload = _payload("zip_absolute_path")
    names = [absolute, "/grad.py", "C:/grad.py"]
    return _zip(dest.with_suffix(".zip"), [(_regular(n), payload) for n in names],
                [m for m in MODULES if m != "grad.py"])


def _zip_symlink(dest: Path, **subs) -> Path:
    link = _regular("grad.py", stat.S_IFLNK | 0o777)
    return _zip(dest.with_suffix(".zip"), [(link, str(SOLUTIONS / "grad.py").encode())],
                [m for m in MODULES if m != "grad.py"])


def _zip_device(dest: Path, **subs) -> Path:
    members = [(_regular("grad.py", stat.S_IFCHR | 0o666), b""), (_regular("extensions.py", stat.S_IFIFO | 0o644), b"")]
    return _zip(dest.with_suffix(".zip"), members, [m for m in MODULES if m not in ("grad.py", "extensions.py")])


BOMB_BYTES = 256 * 2**20


def zip_bomb(dest: Path, forge_sizes: bool = False) -> Path:
    """grad.py inflating to 256 MiB, streamed into the archive (never held in memory)."""
    dest = dest.with_suffix(".zip")
    dest.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as zf:
        for module in MODULES:
            if module != "grad.py":
                zf.writestr(_regular(module), (SOLUTIONS / module).read_bytes())
        with zf.open(_regular("grad.py"), "w") as f:
            f.write(b"# ")
            block = b" " * 2**20
            for _ in range(BOMB_BYTES // len(block)):
                f.write(block)
    if forge_sizes:
        _forge_sizes(dest, "grad.py", 2048)
    return dest


def _forge_sizes(path: Path, member: str, size: int) -> None:
    """Rewrite the uncompressed size of `member` in its local header and its central directory
    entry: the archive then claims a small file that inflates to 256 MiB."""
    data = bytearray(path.read_bytes())
    name = member.encode()
    for signature, name_at, size_at in ((b"PK\x03\x04", 30, 22), (b"PK\x01\x02", 46, 24)):
        start = 0
        while (i := data.find(signature, start)) >= 0:
            if data[i + name_at:i + name_at + len(name)] == name:
                data[i + size_at:i + size_at + 4] = size.to_bytes(4, "little")
            start = i + 4
    path.write_bytes(bytes(data))


def zip_many_members(dest: Path, count: int = 3000) -> Path:
    dest = dest.with_suffix(".zip")
    return _zip(dest, [(_regular(f"junk/{i}.txt"), b"") for i in range(count)])


SPECIAL = {
    "planted_conftest": _planted_conftest,
    "invalid_utf8": _invalid_utf8,
    "symlinked_paths": _symlinked_paths,
    "zip_traversal": _zip_traversal,
    "zip_absolute_path": _zip_absolute_path,
    "zip_symlink": _zip_symlink,
    "zip_device": _zip_device,
    "zip_bomb": lambda dest, **subs: zip_bomb(dest),
}


# ----------------------------------------------------------------------------- judging

def processes_named(comm: str) -> list[int]:
    """Pids of the running processes whose command name is `comm` (what a fork bomb's children
    or a detached child are renamed to, so that the tests can find any that survived)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == comm:
                found.append(int(pid))
        except OSError:
            pass
    return found


def scores(report: dict) -> dict[str, float]:
    return {e["name"]: e["score"] for e in report["exercises"]}


def targets(technique: Technique | str, sandbox: dict) -> tuple[str, ...]:
    """The exercises `technique` must cost, graded in the sandbox a score file's block describes."""
    t = BY_NAME[technique] if isinstance(technique, str) else technique
    if sandbox.get("backend") == "process" and t.in_process is not None:
        return t.in_process(sandbox)
    return t.targets


def held(report: dict, targets: tuple[str, ...], all_exercises: list[str], schema: bool = True) -> list[str]:
    """Why `report` does not show the attack held ([] when it did): every exercise listed, the
    targets at 0, every other exercise at full marks, the file schema-valid (unless `schema` is False:
    where jsonschema is not installed)."""
    from grader.host import results

    problems = [f"schema: {p}" for p in results.validate(report)] if schema else []
    listed = [e["name"] for e in report["exercises"]]
    if listed != all_exercises:
        problems.append(f"exercises listed: {listed}")
    for e in report["exercises"]:
        if e["name"] in targets and e["score"] != 0:
            problems.append(f"{e['name']} (a target) scored {e['score']}")
        if e["name"] not in targets and e["score"] != e["max_score"]:
            bad = [(t["name"], t["status"], t["message"][:160]) for t in e["tests"] if t["status"] != "passed"]
            problems.append(f"{e['name']} (not a target) scored {e['score']}/{e['max_score']}: {bad[:2]}")
    return problems
