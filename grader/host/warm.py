"""The warm check: the public checks, again and again, with the trusted side kept warm.

    from grader.host.warm import WarmChecker

    checker = WarmChecker(course=None, device="cpu")          # starts lazily (or checker.start())
    report = checker.check(exercises=["hvp"], folder=Path("exercises"))
    report = checker.check(exercises=None, sources={"grad": "<module source text>"})  # no files
    checker.close()                                            # also done at interpreter exit

`check` returns the report dict that `grader check` renders (`grader.display.check_table`): the
public tests of the exercises asked for (None: every exercise of the folder, or of the modules
in `sources`). It may be called any number of times: the pytest session (its cases collected
once) and the zygote stay alive, and each call grades in a fresh sandboxed worker forked from
the zygote, so a hang or a crash of the student's code costs that verdict only. Hidden tests are
never collected. An unknown exercise or module raises `grader.errors.UsageError`, in English and
Chinese, with the name meant ("did you mean").

`separate_process=True` keeps the trusted side (the engine: pytest, the test cases, the zygote)
in a process of its own, started with a clean environment, and talks to it in JSON lines over a
pipe: for a caller that has run student code itself (a notebook kernel), whose torch and
interpreter cannot be trusted to decide anything. Only JSON crosses the pipe, both ways; nothing
is unpickled. `serve()` is that process's loop (`python -m grader.host.warm`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import weakref
from pathlib import Path

from grader import catalog as catalog_module
from grader.errors import GraderError, UsageError
from grader.protocol.limits import Limits


class WarmChecker:
    """The warm trusted side of `grader check`: see the module's docstring."""

    def __init__(self, course: str | os.PathLike | None = None, device: str = "cpu",
                 separate_process: bool = False, limits: Limits | None = None):
        self.course = str(Path(course).resolve()) if course else None
        self.device = device
        self.limits = limits or Limits()
        self.separate_process = separate_process
        self._side: _LocalSide | _RemoteSide | None = None
        self._lock = threading.Lock()
        self._finalizer = weakref.finalize(self, _close_side, self.__dict__)

    def start(self) -> None:
        """Start the trusted side and the zygote now rather than at the first check."""
        with self._lock:
            self._started()

    def check(self, exercises: list[str] | None = None, folder: str | os.PathLike | None = None,
              sources: dict[str, str] | None = None) -> dict:
        """The public checks of `exercises` on the modules of `folder`, or on `sources` (module name
        or file name -> source text); a report dict as `grader check` renders it."""
        if (folder is None) == (sources is None):
            raise UsageError("give a folder or sources, not both / 请给出文件夹或源代码（二选一）")
        request = {"exercises": list(exercises) if exercises is not None else None,
                   "folder": str(Path(folder).resolve()) if folder is not None else None,
                   "sources": dict(sources) if sources is not None else None}
        with self._lock:
            return self._started().check(request)

    def close(self) -> None:
        """End everything it started: the trusted side's process, the zygote and its workers."""
        with self._lock:
            _close_side(self.__dict__)

    def __enter__(self) -> WarmChecker:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _started(self):
        if self._side is None:
            side = _RemoteSide if self.separate_process else _LocalSide
            self._side = side(self.course, self.device, self.limits)
        return self._side


def _close_side(state: dict) -> None:
    side, state["_side"] = state.get("_side"), None
    if side is not None:
        side.close()


# ----------------------------------------------------------------------------- in this process

class _LocalSide:
    """The engine in this process: a pytest session of the public cases, and a zygote."""

    def __init__(self, course: str | None, device: str, limits: Limits):
        from grader.host.runner import Options, resolve_device

        self.catalog = catalog_module.use(course)
        self.options = Options(device=resolve_device(device), folders=("public",), course=course, limits=limits,
                               show_output=True, fork_zygote=True)
        self.engine = None

    def check(self, request: dict) -> dict:
        sub = self._submission(request)
        exercises = self._exercises(request, sub)
        engine = self._engine()
        try:
            return engine.grade_loaded(sub, exercises)
        finally:
            if not _zygote_alive(engine):  # a fault of the machine: the next check starts another
                self.engine = None
                engine.close()

    def _engine(self):
        from grader.host.runner import start_engine

        if self.engine is None:
            self.engine = start_engine(self.options)
        return self.engine

    def _submission(self, request: dict):
        from grader.host import intake

        if request["folder"] is not None:
            if not os.path.isdir(request["folder"]):
                raise UsageError(f"{request['folder']} is not a folder / {request['folder']} 不是文件夹")
            return intake.load(request["folder"], self.catalog)
        files, modules = {}, self.catalog.modules
        for name, text in request["sources"].items():
            module = name if name.endswith(".py") else f"{name}.py"
            if module not in modules:
                raise UsageError(f"unknown module {name}; the modules are: {', '.join(modules)} "
                                 f"/ 没有模块 {name}；所有模块：{', '.join(modules)}")
            files[module] = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        return intake.Submission(name="sources", path="<sources>", files=files, modules=tuple(modules))

    def _exercises(self, request: dict, sub) -> set[str]:
        asked = request["exercises"]
        if asked is not None:
            problem = self.catalog.unknown_exercises(asked)
            if problem:
                raise UsageError(problem)
            return set(asked)
        if request["sources"] is not None:
            return {n for m in sub.files for n in self.catalog.exercises_in(m)}
        return {e.name for e in self.catalog.exercises}

    def close(self) -> None:
        engine, self.engine = self.engine, None
        if engine is not None:
            engine.close()


def _zygote_alive(engine) -> bool:
    process = getattr(engine.launcher, "process", None)
    return process is None or process.poll() is None


# ----------------------------------------------------------------------------- in a process of its own

SERVE_CODE = ("import sys; sys.path[:0] = [sys.argv[1]]; "
              "from grader.host.warm import serve; serve(sys.argv[2])")


class _RemoteSide:
    """The engine in a process of its own, spoken to in JSON lines (`serve`)."""

    def __init__(self, course: str | None, device: str, limits: Limits):
        from grader.sandboxed.isolation import clean_environment

        package_parent = str(Path(__file__).resolve().parents[2])
        config = json.dumps({"course": course, "device": device, "limits": limits.__dict__})
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-c", SERVE_CODE, package_parent, config],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=clean_environment(), cwd="/", start_new_session=True)
        self.stderr: list[bytes] = []
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def _drain_stderr(self) -> None:
        for line in self.process.stderr:
            self.stderr = (self.stderr + [line])[-50:]

    def check(self, request: dict) -> dict:
        try:
            self.process.stdin.write(json.dumps(request).encode() + b"\n")
            self.process.stdin.flush()
            line = self.process.stdout.readline()
        except OSError:
            line = b""
        if not line:
            said = b"".join(self.stderr).decode(errors="replace")[-2000:]
            raise GraderError(f"the warm checker's process ended: {said or self.process.poll()}")
        reply = json.loads(line)
        if "report" in reply:
            return reply["report"]
        raise (UsageError if reply.get("usage") else GraderError)(str(reply.get("error")))

    def close(self) -> None:
        try:
            self.process.stdin.close()  # its end of file: it closes its engine and exits
        except OSError:
            pass
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()


def serve(config_json: str) -> None:
    """The trusted side's process: one JSON request a line on stdin, one JSON reply a line on stdout
    ({"report": ...} or {"error": ..., "usage": bool}), until stdin ends."""
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # whatever else would print goes to stderr, never into the replies
    config = json.loads(config_json)
    side = _LocalSide(config["course"], config["device"], Limits(**config["limits"]))
    try:
        for line in sys.stdin:
            try:
                reply = {"report": side.check(json.loads(line))}
            except (UsageError, catalog_module.CatalogError) as exc:
                reply = {"error": str(exc), "usage": True}
            except Exception as exc:  # noqa: BLE001  (the caller hears why; the server goes on)
                reply = {"error": f"{type(exc).__name__}: {exc}", "usage": False}
            replies.write(json.dumps(reply) + "\n")
            replies.flush()
    finally:
        side.close()


if __name__ == "__main__":
    serve(sys.argv[1])
