"""The worker: the only process that runs student code.

It is started inside the sandbox (see `grader.sandboxed.isolation`), receives the submission's module
files and then requests to call one student function each, and answers every request with
plain data in the `grader.protocol.wire` format: what the call returned, what it raised, and the
state of its arguments before and after. It judges nothing; the trusted side does.

Everything here is untrusted as soon as the first student module is imported, so the
trusted side treats every reply as data to check, never as a verdict.
"""

from __future__ import annotations

import _thread
import importlib
import io
import json.encoder
import os
import sys
import time
import traceback
import types
import warnings
from typing import Any, Callable, NamedTuple

import torch
import torch.autograd.functional
import torch.func
import torch.linalg
import torch.nn.functional
import torch.testing

from grader.protocol import grammar, wire
from grader.protocol.messages import (CallReply, CallRequest, ExceptionRecord, FailureReply, ImportedReply,
                                      ImportRequest, LoadReply, LoadRequest, Op, Outcome, PingReply, PingRequest,
                                      TamperKind)
from grader.sandboxed import guard, helpers, seal

# Captured before any student code runs, so that a submission that patches torch.Tensor's
# Python attributes cannot change what the worker reports about tensors.
_TensorBase = getattr(torch._C, "TensorBase", None) or getattr(torch._C, "_TensorBase")
_get = {
    name: _TensorBase.__dict__[name].__get__
    for name in ("_version", "requires_grad", "is_leaf", "grad_fn", "grad", "dtype", "shape", "device")
}
_is_inference = _TensorBase.is_inference
_untyped_storage = _TensorBase.untyped_storage
_storage_data_ptr = torch._C.StorageBase.data_ptr
_layout = _TensorBase.__dict__["layout"].__get__
_detach, _to, _contiguous = _TensorBase.detach, _TensorBase.to, _TensorBase.contiguous
_numel, _element_size, _data_ptr = _TensorBase.numel, _TensorBase.element_size, _TensorBase.data_ptr
_strided = torch.strided
_view, _reshape, _numpy, _uint8 = _TensorBase.view, _TensorBase.reshape, _TensorBase.numpy, torch.uint8
_resolve_conj, _resolve_neg = _TensorBase.resolve_conj, _TensorBase.resolve_neg
# A tensor's bytes without ctypes, which the audit hook refuses: through NumPy where it is installed,
# else through the storage's own writer into a BytesIO (students need not install NumPy).
try:
    import numpy
    _tobytes = numpy.ndarray.tobytes
except ImportError:
    _tobytes = None
_clone, _write_file, _BytesIO = _TensorBase.clone, torch._C.StorageBase._write_file, io.BytesIO
_Tensor, _dtype, _device = torch.Tensor, torch.dtype, torch.device
_qualname = type.__dict__["__qualname__"].__get__  # a class's own name, whatever its metaclass says
_is = lambda a, b: a is b  # noqa: E731
_write = os.write
_set_grad_enabled = torch._C._set_grad_enabled
_perf_counter = time.perf_counter
# A dict or tuple subclass (a Counter, a NamedTuple) is read through its base type's own C methods, which
# run none of the subclass's code, and judged as the plain dict or tuple of its items.
_is_subclass = lambda t, base, _check=type.__dict__["__subclasscheck__"]: _check(base, t)  # noqa: E731
_dict_copy = dict.copy
_tuple_items = tuple.__getitem__
_everything = slice(None)

# The tags of what a lookup inside a step found: (FOUND, the function or class), (MODULE, the module),
# or (NOT_FOUND, (outcome, type, message, traceback)).
FOUND, MODULE, NOT_FOUND = "target", "module", "failure"
# What a tamper changed, as plain strings bound before student code (`_tampered_reply` writes them).
BY_GRADER, BY_TORCH = TamperKind.GRADER.value, TamperKind.TORCH.value
MISSING, IMPORT_ERROR = Outcome.MISSING.value, Outcome.IMPORT_ERROR.value  # the outcome of a NOT_FOUND


class Guarded(NamedTuple):
    """What imports and calls check after their last step, taken before any student code
    (`Worker.guarded`), with the functions that check it, and the facts about this process that
    `Worker._reply` compares before the seal has looked: plain ints, copied out of the Worker, whose
    attributes a step can reach (through f_back, from any frame of its own) and rebind."""

    check: Callable  # seal.check
    snapshot: tuple  # the seal's snapshot of the reply path
    relied: tuple  # the torch objects the grader relies on (guard.take)
    restore_namespaces: Callable  # guard.restore_namespaces
    namespaces: tuple  # torch's public namespaces as they were (guard.take_namespaces)
    serving_pid: int  # the process that answers (a copy made by os.fork() in student code never does)
    threads_at_start: int  # Python threads alive before any student code
    fd: int  # where replies go


class TamperedBy(NamedTuple):
    """What a handler returns instead of (reply body, blobs) when the submission tampered: the worker
    then answers with `_tampered_reply`, built without any of the reply path's code."""

    kind: str  # BY_GRADER or BY_TORCH
    what: str  # the first change found


MAX_MESSAGE_TEXT = 2000
MAX_PRINTED = 4000  # characters of a call's prints and warnings that a captured call's reply carries
SENT = ("sent",)  # what a handler returns when a copy of the worker sent the reply itself (`Worker._reply`)


# ----------------------------------------------------------------------------- encoding results

class Encoder:
    """Encodes a value tree produced by student code into wire JSON plus blobs."""

    def __init__(self, args: tuple):
        self.blobs: list[bytes] = []
        self.args = args  # a tuple, made before any student code ran: what "the argument itself" means
        self.nodes = 0
        self.nbytes = 0

    def value(self, v: Any, depth: int = 0) -> Any:
        self.nodes += 1
        if depth > wire.MAX_DEPTH - 2 or self.nodes > wire.MAX_NODES // 2:
            return {"$object": "too deeply nested"}
        t = type(v)
        if v is None or t is bool or t is str:
            return v
        if t is int:
            return v if abs(v) < 2**63 else {"$object": "int (out of range)"}
        if t is float:
            return v
        if t is _Tensor:
            return self.tensor(v, depth)
        if t in (list, tuple, dict) and self.nodes + len(v) > wire.MAX_NODES // 2:
            return {"$object": f"{t.__name__} of {len(v)} items (too large to send)"}
        if t is list:
            return [self.value(x, depth + 1) for x in v]
        if t is tuple:
            return {"$tuple": [self.value(x, depth + 1) for x in v]}
        if t is dict:
            if not all(type(k) is str for k in v):
                return {"$object": "dict with non-string keys"}
            return {"$dict": [[k, self.value(x, depth + 1)] for k, x in v.items()]}
        if t is not dict and t is not tuple and _is_subclass(t, dict):
            return self.value(_dict_copy(v), depth)  # a Counter, an OrderedDict: its items, read by dict's own C methods
        if t is not tuple and t is not dict and _is_subclass(t, tuple):
            return self.value(_tuple_items(v, _everything), depth)  # a NamedTuple: its items, by tuple's C slicing
        if t is _dtype and v in wire.DTYPE_NAMES:
            return {"$dtype": wire.DTYPE_NAMES[v]}
        if t is _device:
            return {"$device": str(v)}
        return {"$object": _type_name(v)}

    def tensor(self, v: torch.Tensor, depth: int = 0, with_grad: bool = True) -> Any:
        dtype = _get["dtype"](v)
        if dtype not in wire.DTYPE_NAMES or _layout(v) != _strided:
            return {"$object": f"Tensor({dtype}, {_layout(v)})"}
        nbytes = _numel(v) * _element_size(v)
        if nbytes + self.nbytes > wire.MAX_MESSAGE_BYTES:
            return {"$object": f"Tensor of {_numel(v)} elements (too large to send)"}
        self.nbytes += nbytes
        self.blobs.append(_tensor_bytes(v))
        grad_fn = _get["grad_fn"](v)
        grad = _get["grad"](v) if with_grad and _get["is_leaf"](v) else None
        inference = bool(_is_inference(v))  # inference tensors have no version counter: reading it raises
        return {"$tensor": {
            "blob": len(self.blobs) - 1,
            "dtype": wire.DTYPE_NAMES[dtype],
            "shape": list(_get["shape"](v)),
            "device": str(_get["device"](v)),
            "requires_grad": bool(_get["requires_grad"](v)),
            "is_leaf": bool(_get["is_leaf"](v)),
            "grad_fn": None if grad_fn is None else type(grad_fn).__name__,
            "version": 0 if inference else int(_get["_version"](v)),
            "is_inference": inference,
            "grad": self.tensor(grad, depth + 1, with_grad=False) if type(grad) is _Tensor else None,
            "same_as_arg": self._same_as_arg(v),
            "shares_storage_with_arg": self._storage_arg(v),
        }}

    def _same_as_arg(self, v: torch.Tensor) -> int | None:
        for i, a in enumerate(self.args):
            if _is(a, v):
                return i
        return None

    def _storage_arg(self, v: torch.Tensor) -> int | None:
        try:
            ptr = _storage_data_ptr(_untyped_storage(v))
        except Exception:
            return None
        for i, a in enumerate(self.args):
            if type(a) is _Tensor and ptr != 0 and _storage_data_ptr(_untyped_storage(a)) == ptr:
                return i
        return None


def _tensor_bytes(t: torch.Tensor) -> bytes:
    """wire.tensor_bytes with the C methods captured at import: torch.Tensor's Python attributes,
    which student code may replace, play no part."""
    flat = _contiguous(_resolve_neg(_resolve_conj(_to(_detach(t), "cpu"))))
    if not _numel(flat):
        return b""
    raw = _view(_reshape(flat, (-1,)), _uint8)
    if _tobytes is not None:
        return _tobytes(_numpy(raw))
    out = _BytesIO()
    _write_file(_untyped_storage(_clone(raw)), out, False, False, 1)  # a clone's storage holds just its bytes
    return out.getvalue()


_dumps = json.encoder.JSONEncoder(allow_nan=True).encode


def _pack(body: Any, blobs: list[bytes]) -> bytes:
    """wire.pack, in multiprocessing.Connection's framing, with a JSON encoder of the worker's own."""
    header = _dumps({"body": body, "blobs": [len(b) for b in blobs]}).encode()
    n = 4 + len(header) + sum(len(b) for b in blobs)
    frame = n.to_bytes(4, "big", signed=True) if n <= 0x7FFFFFFF else (-1).to_bytes(4, "big", signed=True) + \
        n.to_bytes(8, "big")
    return b"".join([frame, len(header).to_bytes(4, "big"), header, *blobs])


def _send(fd: int, data: bytes, write=_write) -> None:
    view = memoryview(data)
    while view:
        view = view[write(fd, view):]


def _tampered_reply(request_id: Any, what: str, kind: str, write=_write) -> bytes:
    """The reply that says the submission changed what the worker relies on (a `TamperedReply`): the
    grader's own code (`kind` "grader", found by the seal) or torch and the interpreter ("torch",
    found by `grader.sandboxed.guard`). Built from literals and methods of built-in types only:
    nothing the submission could have patched to turn it into a "returned". Outcome.TAMPERED is
    spelled out for that reason."""
    rid = request_id if request_id.__class__ is (0).__class__ else 0
    detail = "".join(c for c in what[:120] if c.isalnum() or c in "._: <>()")
    kind = BY_TORCH if kind == BY_TORCH else BY_GRADER
    header = ('{"body": {"outcome": "tampered", "id": %d, "detail": "%s", "kind": "%s"}, "blobs": []}'
              % (rid, detail, kind)).encode()
    message = len(header).to_bytes(4, "big") + header
    return len(message).to_bytes(4, "big", signed=True) + message


def _type_name(v: Any) -> str:
    """The name of v's class, read without running code of the student's (no metaclass property)."""
    name = _qualname(type(v))
    return name[:100] if type(name) is str else "object"


def _missing(kind: str, message: str) -> FailureReply:
    return {"outcome": Outcome.MISSING, "exception": {"type": kind, "message": message}}


def _import_error(exc: BaseException) -> tuple:
    """An import's exception as (type, message, traceback), plain strings. Runs in the import's
    step: the exception's __str__ may be the student's."""
    record = guard.describe(exc)
    try:
        trace = _short_traceback(exc)
    except BaseException:  # noqa: BLE001
        trace = ""
    return record["type"], record["message"], trace if type(trace) is str else ""


# ----------------------------------------------------------------------------- decoding arguments

# The worker's copies of the argument half of `grader.protocol.grammar` (literals, bound before any
# student code; `check_grammar` compares them with the grammar once, in the zygote).
_ARGUMENT_KINDS = ("$tuple", "$dict", "$dtype", "$device", "$tensor", "$fn", "$graph")
_ARGUMENT_TENSOR_FIELDS = ("blob", "dtype", "shape", "requires_grad", "grad")
_SESSION_DEVICE = "@session"


class ArgumentBuilder:
    """Builds the call's arguments from the trusted side's description, on the device."""

    KINDS = _ARGUMENT_KINDS

    def __init__(self, blobs: list[bytes], device: str):
        self.blobs = blobs
        self.device = device

    def build(self, node: Any) -> Any:
        if node is None or type(node) in (bool, int, float, str):
            return node
        if type(node) is list:
            return [self.build(x) for x in node]
        ((kind, p),) = node.items()
        if kind not in _ARGUMENT_KINDS:
            raise ValueError(f"unknown argument kind {kind}")
        if kind == "$tuple":
            return tuple(self.build(x) for x in p)
        if kind == "$dict":
            return {k: self.build(v) for k, v in p}
        if kind == "$dtype":
            return wire.DTYPES[p]
        if kind == "$device":
            return torch.device(self.device if p == _SESSION_DEVICE else p)
        if kind == "$tensor":
            return self.tensor(p)
        if kind == "$fn":
            return helpers.FUNCTIONS[p]
        if kind == "$graph":
            return helpers.GRAPHS[p["name"]](*self.build(p["args"]))
        raise ValueError(f"argument kind {kind} has no builder")

    def tensor(self, p: dict) -> torch.Tensor:
        t = wire.tensor_from_bytes(self.blobs[p["blob"]], p["dtype"], p["shape"]).to(self.device).clone()
        if p.get("requires_grad"):
            t.requires_grad_(True)
        if p.get("grad") is not None:
            t.grad = self.tensor(p["grad"]["$tensor"])
        return t

    def freeze(self, node: Any) -> Any:
        """The arguments as data nothing can change in place, for a probe to build the values it
        supplies itself from (see `grader.sandboxed.helpers`): a tensor as (bytes, dtype, shape,
        device, requires_grad), a list as a tuple, the rest as `build` makes it."""
        if type(node) is list:
            return tuple(self.freeze(x) for x in node)
        if type(node) is dict and len(node) == 1 and "$tensor" in node:
            p = node["$tensor"]
            wire.tensor_from_bytes(self.blobs[p["blob"]], p["dtype"], p["shape"])  # checks dtype and size
            return (bytes(self.blobs[p["blob"]]), wire.DTYPES[p["dtype"]], tuple(p["shape"]), self.device,
                    bool(p.get("requires_grad")))
        return self.build(node)


# ----------------------------------------------------------------------------- the worker

def checked_reply(guarded: Guarded, failure, found, reply, _tampered=guard.TAMPERED, _not_found=NOT_FOUND,
                  _by_torch=BY_TORCH, _by_grader=BY_GRADER, _tampered_by=TamperedBy, _item=tuple.__getitem__,
                  _first=slice(0, 5)) -> tuple | TamperedBy:
    """After an import's or a call's last step: tampering the steps found, then what the seal
    finds; torch's namespaces put back; then the reply (`found`: what the step that looked for
    the code found). Uses only `guarded` and its defaults (bound when this module was
    imported) until the seal has found everything as it was; reads `guarded` with tuple's own C
    method (a step could give Guarded an __iter__ or a property of its own, which the seal finds
    only once it has run)."""
    check, snapshot, _, restore_namespaces, namespaces = _item(guarded, _first)
    if failure is not None and failure[0] == _tampered:
        return _tampered_by(_by_torch, failure[1])
    problem = check(snapshot)
    if problem is not None:
        return _tampered_by(_by_grader, problem)
    problem = restore_namespaces(namespaces)
    if problem is not None:
        return _tampered_by(_by_torch, problem)
    if found is not None and found[0] == _not_found:
        return _failure_reply(found[1]), []
    return reply()


class Worker:
    def __init__(self, conn, workdir: str):
        self.conn = conn
        self.workdir = workdir
        self.device = "cpu"
        self.module_names: tuple[str, ...] = ()  # the exercise modules, from the load request (the course's)
        self.import_failures: dict[str, tuple] = {}  # module -> (type, message, traceback) of its import
        self.modules: dict[str, Any] = {}
        self.sources: dict[str, bytes] = {}
        self.import_state: tuple = ([], [], [], {})
        # What student code must leave as it was, taken before any student module is imported:
        # torch's autograd objects the grader relies on and torch's public namespaces (see guard).
        self.fd = conn.fileno() if conn is not None else -1  # where replies go (a copy of the worker writes there too)
        self.serving_pid = os.getpid()  # set again by serve(), in the process that serves
        self.threads_at_start = _thread._count()  # Python threads alive before any student code (the zygote's)
        self.relied = guard.take()
        self.namespaces = guard.take_namespaces()

    def serve(self) -> None:
        # Everything the loop relies on is bound to a local before the first student module is
        # imported: replacing Worker.call, grader.sandboxed.worker.Encoder or the connection later has no
        # effect on it, and changing what they use is caught by the seal before each reply is encoded.
        guard.install_audit_hook()  # from now on no function's code or defaults change
        guard.refuse_kernel_registration()
        pid, fd, getpid, write, exit_ = os.getpid(), self.conn.fileno(), os.getpid, _write, os._exit
        self.serving_pid = pid  # only this process answers (_reply checks it before it sends anything)
        recv = self.conn.recv_bytes
        handlers = types.MappingProxyType(self.handlers())  # read-only: a step that reaches this frame cannot swap one
        pack, send, tampered, guarded, tampered_by = _pack, _send, _tampered_reply, self.guarded(), TamperedBy
        item = tuple.__getitem__  # never a method of TamperedBy's, which a step could give it
        keep, body, blobs = guard.KEEP.append, None, None
        while True:
            try:
                message = recv()
            except (EOFError, OSError):
                return
            # The last request, which a step reached through f_back and may have put its objects into, is
            # let go of in the next call's first step (guard.KEEP): none of their finalizers runs here.
            keep((body, blobs))
            body, blobs = wire.unpack(message)
            op = body.get("op")
            if op == Op.EXIT:
                return
            reap_children()  # processes the student's code started and that have ended: no zombies pile up
            request_id = body.get("id")  # read before any step: a step reaches `body` through f_back
            answer = handlers[op](body, blobs, guarded)
            if getpid() != pid:
                # A copy of the worker made by os.fork() in student code: only the worker answers.
                exit_(0)
            if answer is SENT:  # answered by a copy of the worker without the submission's threads
                continue
            if type(answer) is tampered_by:
                kind, what = item(answer, 0), item(answer, 1)
                send(fd, tampered(request_id, what, kind), write)
                continue
            reply_body, reply_blobs = answer
            if op == Op.LOAD:
                guarded = self.guarded()  # the worker's own state is set now, before any student code
            reply_body["id"] = request_id
            send(fd, pack(reply_body, reply_blobs), write)

    def guarded(self) -> Guarded:
        """What imports and calls check after their last step, taken before any student code, with
        the functions that check it. Between a step and these checks the worker uses nothing it did
        not bind before the step."""
        tables = _tables()
        tables[f"{__name__}.Worker (this worker's state)"] = vars(self)
        snapshot = seal.take(seal.reply_path_modules(), tables, _attributes())
        return Guarded(seal.check, snapshot, self.relied, guard.restore_namespaces, self.namespaces,
                       *self.facts())

    def facts(self) -> tuple[int, int, int]:
        """(serving pid, threads at start, reply fd) as plain ints, for `Guarded`."""
        return int(self.serving_pid), int(self.threads_at_start), int(self.fd)

    def handle(self, message: bytes) -> bytes | None:
        """One request in, one framed reply out, in this very process (None: the trusted side said
        goodbye). Only for measuring the in-process floor (bench/inprocess.py): no seal, no fork check."""
        body, blobs = wire.unpack(message)
        if body.get("op") == Op.EXIT:
            return None
        unsealed = Guarded(lambda snapshot: None, (), self.relied, guard.restore_namespaces, self.namespaces,
                           *self.facts())
        answer = self.handlers()[body["op"]](body, blobs, unsealed)
        if type(answer) is TamperedBy:
            reply_body, reply_blobs = {"outcome": Outcome.TAMPERED, "kind": answer.kind, "detail": answer.what}, []
        else:
            reply_body, reply_blobs = answer
        reply_body["id"] = body.get("id")
        return _pack(reply_body, reply_blobs)

    def handlers(self) -> dict[Op, Any]:
        """The method that answers each operation (`exit` has none: the worker ends). Each takes the
        request's body and blobs and `guarded()`, and returns (reply body, blobs), or a `TamperedBy`
        when the submission tampered with what the worker relies on."""
        return {Op.LOAD: self.load, Op.IMPORT: self.import_op, Op.CALL: self.call, Op.PING: self.ping}

    def ping(self, body: PingRequest, blobs: list[bytes], guarded: Guarded) -> tuple[PingReply, list[bytes]]:
        return {"ok": True, "pid": os.getpid()}, []

    def load(self, body: LoadRequest, blobs: list[bytes], guarded: Guarded) -> tuple[LoadReply, list[bytes]]:
        """Write the submission's module files into the private work directory."""
        self.module_names = tuple(m for m in body["modules"] if type(m) is str and m.isidentifier())
        for filename, index in body["files"].items():
            if os.path.basename(filename) != filename or not filename.endswith(".py"):
                continue
            self.sources[filename] = blobs[index]
            with open(os.path.join(self.workdir, filename), "wb") as f:
                f.write(blobs[index])
        sys.path.insert(0, self.workdir)
        importlib.invalidate_caches()
        # The import state every module is imported in, whatever an earlier module changed.
        self.import_state = (list(sys.path), list(sys.meta_path), list(sys.path_hooks), dict(sys.modules))
        self.device = body.get("device", "cpu")
        torch.manual_seed(int(body.get("seed", 0)))
        if self.device.startswith("cuda"):
            _init_cuda(body.get("gpu_memory_fraction"))
        return {"ok": True, "device": self.device}, []

    def import_op(self, body: ImportRequest, blobs: list[bytes], guarded: Guarded) -> tuple | TamperedBy:
        reply, request_id = self._reply, body.get("id")  # (bound before the step, like everything used after it)
        found, failure = guard.step(self._import_student_module, (body["module"],), None, guarded.relied, True)
        return reply(guarded, failure, found, lambda: ({"outcome": Outcome.IMPORTED}, []), request_id)

    def call(self, body: CallRequest, blobs: list[bytes], guarded: Guarded) -> tuple | TamperedBy:
        """Call one student function (through a probe of `grader.sandboxed.helpers.PROBES`, when the
        request names one), in steps (`grader.sandboxed.guard.step`); after the last, check what
        the worker relies on before anything is encoded.

        What the worker records before the first step (versions_before) is recorded only after
        torch's modes and hooks are put back (`guard.torch_left`): a finalizer of the student's that
        ran since the last step (the worker let go of an object the step had reached) may have left
        a torch mode behind. And
        whatever a step may have reached and filled is kept alive until the next call's first step
        (`guard.KEEP`), so that no such finalizer runs while the reply is built."""
        relied, step, reply, perf_counter, calls = guarded.relied, guard.step, self._reply, _perf_counter, api_calls
        keep = guard.KEEP.append
        keep(list(calls.items()))  # (what the last call's steps put there goes in this call's first step)
        calls.clear()
        problem = guard.torch_left()
        if problem is not None:
            return TamperedBy(BY_TORCH, problem + " (left between two calls)")
        target = FOUND
        request_id = body.get("id")
        module_name, _, attr = body["target"].partition(".")
        probe = helpers.PROBES[body["probe"]] if body.get("probe") else None
        builder = ArgumentBuilder(blobs, self.device)
        args = tuple(builder.build(body.get("args", [])))
        kwargs = builder.build(body.get("kwargs", {"$dict": []}))
        frozen = builder.freeze(body.get("args", [])) if probe else None
        # a tuple of ints: nothing a step that reaches this frame could change in place
        versions_before = tuple(int(_get["_version"](a)) if type(a) is _Tensor else None for a in args)
        synchronize = torch.cuda.synchronize if self.device.startswith("cuda") else None
        # every call starts with gradients recorded: a torch.set_grad_enabled(False) left behind by an
        # earlier call or import must not break the exercises graded after it
        _set_grad_enabled(True)
        printed: list = []  # what each step printed and warned, when the request asks to capture it
        run = _capturing(step, printed, self.workdir) if body.get("capture") is True else step
        start = perf_counter()
        value = None
        found, failure = step(self._find, (module_name, attr), None, relied, True)
        if failure is None and found[0] == target:
            if probe is not None:
                value, failure = probe(run, relied, found[1], args, frozen)
            else:
                value, failure = run(found[1], args, kwargs, relied, describe=self.describe_with_frames)
            if failure is None and synchronize is not None:
                _, failure = step(synchronize, (), None, relied)
        elapsed = perf_counter() - start
        keep((body, blobs, builder, args, kwargs, frozen, printed, run, found, value, failure))
        return reply(guarded, failure, found, lambda: self._returned(
            value if failure is None else None, failure, args, elapsed, versions_before, calls,
            _printed_text(printed) if run is not step else None), request_id)

    def describe_with_frames(self, exc: BaseException, _describe=guard.describe) -> dict:
        """An exception of a call as plain data, with the frames of the submission's own modules."""
        record = _describe(exc)
        record["frames"] = student_frames(exc, self.workdir, self.sources)
        return record

    def _reply(self, guarded: Guarded, failure, found, reply, request_id, _count=_thread._count, _fork=os.fork,
               _waitpid=os.waitpid, _exit=os._exit, _pack=_pack, _send=_send, _tampered=_tampered_reply,
               _tampered_by=TamperedBy, _by_torch=BY_TORCH, _OSError=OSError, _getpid=os.getpid,
               _checked=checked_reply, _item=tuple.__getitem__) -> tuple | TamperedBy:
        """After an import's or a call's last step, the reply, built where no thread of the
        submission runs: in this process when none is alive, else in a copy of it made by
        os.fork(), which has only the thread that forked; the copy sends the reply itself and ends,
        and this process answers SENT (the worker sends nothing more). A thread cannot then change
        what is checked or encoded while it is (a tensor's requires_grad, grad_fn, the values).

        Reads nothing of `self` before the seal has looked (`checked_reply`): a step reaches the
        Worker through f_back and could shadow a method on the instance or rebind a fact to an object
        whose comparison runs its code here, after the step was settled. The facts come from
        `guarded`, plain ints taken before any student code, read with tuple's own C method; the
        method is bound as a default."""
        serving_pid, threads_at_start, fd = _item(guarded, 5), _item(guarded, 6), _item(guarded, 7)
        if _getpid() != serving_pid:  # a copy made by os.fork() in student code: it never answers
            _exit(0)
        if _count() <= threads_at_start:
            return _checked(guarded, failure, found, reply)
        try:
            child = _fork()
        except _OSError:  # (no process left under the limit)
            return _tampered_by(_by_torch, "a thread of the submission running while the reply is built")
        if child == 0:
            status = 1
            try:
                answer = _checked(guarded, failure, found, reply)
                if type(answer) is _tampered_by:
                    data = _tampered(request_id, answer.what, answer.kind)
                else:
                    body, blobs = answer
                    body["id"] = request_id
                    data = _pack(body, blobs)
                _send(fd, data)
                status = 0
            finally:
                _exit(status)
        _, status = _waitpid(child, 0)
        _item(guarded, 3)(_item(guarded, 4))  # torch's namespaces put back, this process's own, for the next call
        if status != 0:
            return _tampered_by(_by_torch, "the reply (built without the submission's threads) failed")
        return SENT

    def _returned(self, value, failure, args: tuple, elapsed: float, versions_before: tuple, calls: dict,
                  printed: str | None = None) -> tuple:
        encoder = Encoder(args)
        if failure is None:
            reply: CallReply = {"outcome": Outcome.RETURNED, "value": encoder.value(value)}
        else:
            reply = {"outcome": Outcome.RAISED, "exception": failure[1]}
        if printed is not None:
            reply["printed"] = printed
        reply["elapsed"] = elapsed
        reply["api_calls"] = {k: v for k, v in calls.items() if type(k) is str and type(v) is int}
        reply["versions_before"] = list(versions_before)
        reply["args_after"] = [encoder.value(a) for a in args]
        return reply, encoder.blobs

    def _find(self, module_name: str, attr: str) -> tuple:
        """(FOUND, the student's function or class), or (NOT_FOUND, why it cannot be had): one
        step, since importing and even looking a name up in a student's module runs its code."""
        module = self._import_student_module(module_name)
        if module[0] == NOT_FOUND:
            return module
        try:
            return FOUND, getattr(module[1], attr)
        except AttributeError:
            return NOT_FOUND, (MISSING, "AttributeError", f"{module_name}.py defines no {attr}", "")

    def _import_student_module(self, module_name: str) -> tuple:
        """(MODULE, the student's module, imported once) or (NOT_FOUND, (outcome, type, message,
        traceback)). The one place in the sandboxed side that imports a student's code
        (tests/test_layout.py checks it); it runs inside a step."""
        if module_name not in self.module_names:
            return NOT_FOUND, (MISSING, "LookupError", f"no module {module_name}", "")
        if module_name in self.modules:
            return MODULE, self.modules[module_name]
        if module_name in self.import_failures:
            return NOT_FOUND, self.import_failures[module_name]
        if module_name + ".py" not in self.sources:
            return NOT_FOUND, (MISSING, "ModuleNotFoundError", f"the submission has no {module_name}.py", "")
        try:
            self._restore_import_state(module_name + ".py")
            module = importlib.import_module(module_name)
        except BaseException as exc:
            self.import_failures[module_name] = (IMPORT_ERROR, *_import_error(exc))
            return NOT_FOUND, self.import_failures[module_name]
        self.modules[module_name] = module
        return MODULE, module

    def _restore_import_state(self, filename: str) -> None:
        """Undo what an earlier module did to the next import: its file deleted or rewritten, the
        working directory, sys.path, import hooks and sys.modules changed."""
        path = os.path.join(self.workdir, filename)
        try:
            with open(path, "rb") as f:
                intact = f.read() == self.sources[filename]
        except OSError:
            intact = False
        if not intact:
            try:
                os.unlink(path)
            except OSError:
                pass
            with open(path, "wb") as f:
                f.write(self.sources[filename])
        os.chdir(self.workdir)
        paths, meta_path, path_hooks, modules = self.import_state
        sys.path = list(paths)
        sys.meta_path[:] = meta_path
        sys.path_hooks[:] = path_hooks
        sys.path_importer_cache.clear()
        for name, module in modules.items():
            if sys.modules.get(name) is not module:
                sys.modules[name] = module
        for name in self.module_names:
            sys.modules.pop(name, None)  # a same-named module from elsewhere must not stand in
        importlib.invalidate_caches()


# ----------------------------------------------------------------------------- a public check's prints

def _capturing(step, printed: list, workdir: str):
    """`step`, with what the step's code prints (stdout and stderr) and warns going into `printed`,
    one string per step. The capture is made and undone inside the step itself, in student time:
    after the step the worker reads only the strings in `printed` (`_printed_text`)."""
    def capturing_step(fn, args=(), kwargs=None, relied=(), first=False, describe=guard.describe):
        return step(_captured, (fn, args, kwargs, printed, workdir), None, relied, first, describe)

    return capturing_step


def _captured(fn, args, kwargs, printed: list, workdir: str):
    """Call fn with sys.stdout and sys.stderr going to a buffer and every warning shown there (each
    time, not once per place: the course wants torch's warnings seen), a submission's file by its own
    name; put back afterwards."""
    import io

    buffer = io.StringIO()
    saved = sys.stdout, sys.stderr

    def show(message, category, filename, lineno, file=None, line=None):
        if os.path.dirname(str(filename)) == workdir:
            filename = os.path.basename(filename)
        buffer.write(warnings.formatwarning(message, category, filename, lineno, line))

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = show
        sys.stdout = sys.stderr = buffer
        try:
            return fn(*args, **(kwargs or {}))
        finally:
            sys.stdout, sys.stderr = saved
            printed.append(buffer.getvalue())


def _printed_text(printed: list, _type=type, _str=str) -> str:
    """The strings the capturing steps left, joined, at most MAX_PRINTED characters (whatever else the
    student's code put in the list is left out)."""
    text, size = [], 0
    for piece in printed[:64]:
        if _type(piece) is _str:
            text.append(piece[:MAX_PRINTED - size])
            size += len(text[-1])
    joined = "".join(text)
    return joined + ("\n[... more output dropped]\n" if size >= MAX_PRINTED else "")


def _failure_reply(failure: tuple) -> FailureReply:
    """A missing module or name, or an import that failed, from (outcome, type, message, traceback):
    plain strings only, whatever the student's code put in the worker's tables."""
    outcome, kind, message, trace = (x if type(x) is str else "?" for x in (tuple(failure) + ("?",) * 4)[:4])
    reply: FailureReply = {"outcome": Outcome.IMPORT_ERROR if outcome == IMPORT_ERROR else Outcome.MISSING,
                           "exception": {"type": kind[:100], "message": message[:MAX_MESSAGE_TEXT]}}
    if outcome == IMPORT_ERROR:
        reply["exception"]["traceback"] = trace[-MAX_MESSAGE_TEXT:]
    return reply


def _tables() -> dict[str, dict]:
    """Module-level tables the reply path reads (the accessors, the dtypes, the test functions)."""
    tables = {}
    for module in seal.reply_path_modules():
        for name, obj in vars(module).items():
            if type(obj) is dict and not name.startswith("__") and obj is not api_calls:
                tables[f"{module.__name__}.{name}"] = obj
    tables[f"{__name__}._dumps.__self__"] = vars(_dumps.__self__)  # the JSON encoder's settings
    return tables


def _attributes() -> list[tuple[str, object, str]]:
    return []


def reap_children() -> None:
    """Collect every child that has ended, so that none stays a zombie."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


MAX_FRAMES = 8


def student_frames(exc: BaseException, workdir: str, sources: dict[str, bytes]) -> list[list]:
    """[file name, line, source line] for each frame of the traceback in one of the submission's own
    files, innermost last, at most MAX_FRAMES; the source line is read from the worker's copy of the
    file (never from linecache, which the student's code can fill). Reads traceback objects only: no
    student code runs."""
    try:
        return _frames(_TRACEBACK_OF(exc), workdir, sources)[-MAX_FRAMES:]
    except BaseException:  # noqa: BLE001  (whatever the exception is made of, the call's record stands)
        return []


_TRACEBACK_OF = BaseException.__dict__["__traceback__"].__get__  # never the exception's own __getattribute__
_TRACEBACK_TYPE = types.TracebackType


def _frames(tb, workdir: str, sources: dict[str, bytes], _type=type, _str=str, _int=int) -> list[list]:
    frames = []
    while _type(tb) is _TRACEBACK_TYPE:
        code = tb.tb_frame.f_code
        filename, line = code.co_filename, tb.tb_lineno
        if _type(filename) is _str and _type(line) is _int and os.path.dirname(filename) == workdir:
            name = os.path.basename(filename)
            if name in sources:
                lines = sources[name].decode("utf-8", "replace").splitlines()
                text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
                frames.append([name, line, text[:200]])
        tb = tb.tb_next
    return frames


def _short_traceback(exc: BaseException) -> str:
    lines = traceback.format_exception_only(type(exc), exc)
    return "".join(lines)[-MAX_MESSAGE_TEXT:]


def _init_cuda(memory_fraction: float | None) -> None:
    torch.cuda.init()
    try:
        torch.backends.cuda.matmul.fp32_precision = "ieee"
        torch.backends.cudnn.conv.fp32_precision = "ieee"
    except AttributeError:  # torch < 2.9
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    if memory_fraction:
        torch.cuda.set_per_process_memory_fraction(float(memory_fraction))


# Autograd entry points whose use a call reports: some exercises must be done with
# torch.autograd.grad and not with a ready-made Jacobian or Hessian. This is a report on honest
# code, not a security boundary: a submission could undo the wrappers.
RECORDED_APIS = {
    "torch.autograd": ("grad", "backward"),
    "torch.autograd.functional": ("jacobian", "hessian", "hvp", "vhp", "vjp", "jvp"),
    "torch.func": ("jacrev", "jacfwd", "hessian", "vjp", "jvp", "grad", "vmap"),
}
# Counted during a call, cleared before the next: the one table of this module the seal leaves out.
api_calls: dict[str, int] = {}


def _recording(name: str, function):
    def wrapper(*args, **kwargs):
        api_calls[name] = api_calls.get(name, 0) + 1
        return function(*args, **kwargs)

    wrapper.__wrapped__ = function
    wrapper.__name__ = getattr(function, "__name__", name)
    wrapper.__doc__ = getattr(function, "__doc__", None)
    return wrapper


def install_recorders() -> None:
    for module_name, names in RECORDED_APIS.items():
        module = sys.modules[module_name]  # imported with this module
        for name in names:
            original = getattr(module, name)
            if not hasattr(original, "__wrapped__"):
                setattr(module, name, _recording(f"{module_name}.{name}", original))


def check_grammar() -> None:
    """The worker's copies of the wire grammar are `grader.protocol.grammar`'s: the kinds and tensor
    fields `ArgumentBuilder` reads, and what `Encoder` writes for a value of every reply kind. Run
    once per process before any student code (`prepare_process`); RuntimeError names a drift."""
    problems = []
    if set(_ARGUMENT_KINDS) != grammar.ARGUMENT_KINDS:
        problems.append(f"argument kinds {sorted(_ARGUMENT_KINDS)} are not {sorted(grammar.ARGUMENT_KINDS)}")
    if _SESSION_DEVICE != grammar.SESSION_DEVICE_NAME:
        problems.append(f"the session device is {_SESSION_DEVICE!r}, not {grammar.SESSION_DEVICE_NAME!r}")
    if _ARGUMENT_TENSOR_FIELDS != grammar.ARGUMENT_TENSOR_FIELDS:
        problems.append(f"argument tensor fields {_ARGUMENT_TENSOR_FIELDS} are not {grammar.ARGUMENT_TENSOR_FIELDS}")
    leaf = torch.zeros(1, requires_grad=True)
    leaf.grad = torch.ones(1)
    kinds, fields = grammar.shape_of(Encoder((leaf,)).value((leaf, {"d": torch.float32}, torch.device("cpu"), object)))
    if kinds != grammar.REPLY_KINDS:
        problems.append(f"the encoder writes the kinds {sorted(kinds)}, not {sorted(grammar.REPLY_KINDS)}")
    if fields != set(grammar.REPLY_TENSOR_FIELDS):
        problems.append(f"the encoder writes the tensor fields {sorted(fields)}, not {sorted(grammar.REPLY_TENSOR_FIELDS)}")
    if problems:
        raise RuntimeError("the worker's wire grammar drifted from grader.protocol.grammar: " + "; ".join(problems))


def prepare_process(course_helpers: list[str]) -> None:
    """Settings every worker takes before the first request, whatever launched it, and the course's
    worker-side helpers (files, by path), loaded before any student code. Its copies of the wire
    grammar are checked first (`check_grammar`)."""
    check_grammar()
    torch.set_num_threads(1)
    helpers.load_course(course_helpers)
    helpers.warm_up()
    install_recorders()


def run(conn, workdir: str, course_helpers: list[str]) -> None:
    prepare_process(course_helpers)
    Worker(conn, workdir).serve()
