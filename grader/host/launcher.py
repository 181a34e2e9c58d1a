"""Starting workers, seen from the engine: the zygote's launcher and the worker handles.

`Launcher` starts one zygote (`grader.sandboxed.zygote`) per grading process and asks it for a
fresh sandboxed worker per submission; `spawn()` returns a `WorkerProcess` (both have the shapes
of `grader.host.channel.WorkerLauncher` and `WorkerHandle`), whose connection
speaks `grader.protocol.wire`, with its output collected and its memory measurable from
outside. Where `fork` is not available (Windows, macOS), `SpawnLauncher` starts a plain
subprocess instead. This side decides what a worker must not see (`hidden_paths`) and what it
may read (`readonly_paths`), which course helpers the zygote loads, and says in the score file how it was isolated (`describe_sandbox`).
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from multiprocessing.connection import Connection

import grader
from grader import catalog
from grader.catalog import Catalog
from grader.host.channel import WorkerLauncher
from grader.protocol.limits import Limits, SandboxPlan
from grader.protocol.messages import SpawnReply, SpawnRequest, ZygoteHello, ZygoteOp
from grader.sandboxed import zygote
from grader.sandboxed.isolation import children, clean_environment


class WorkerProcess:
    """A running worker, seen from the trusted side: its connection, pid and output."""

    def __init__(self, conn: Connection, pid: int, output_fd: int, status_fd: int | None, output_cap: int,
                 parent: int | None = None):
        self.conn = conn
        os.set_blocking(conn.fileno(), False)  # the trusted side reads and writes with deadlines
        self.pid = pid
        self.parent = parent  # the first child: the worker's parent, and subreaper of what it leaves
        self.status_fd = status_fd
        self.output = OutputCollector(output_fd, output_cap)
        self._ended: str | None = None
        try:
            self.pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            self.pidfd = None

    def kill(self) -> None:
        """SIGKILL the worker; its PID namespace takes every process it started with it."""
        try:
            if self.pidfd is not None:
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            else:
                os.kill(self.pid, signal.SIGKILL)
        except (ProcessLookupError, OSError):
            pass

    def wait_gone(self, timeout: float = 5.0) -> bool:
        if self.pidfd is not None:
            ready, _, _ = select.select([self.pidfd], [], [], timeout)
            return bool(ready)
        return True

    def end_status(self, timeout: float = 1.0) -> str:
        """How the worker ended ('exit 0', 'signal 9'), from the first child's status pipe.

        The first child writes it after the worker and everything it started are gone, then
        exits; the pipe's end of file says that clean-up is over."""
        if self._ended is not None or self.status_fd is None:
            return self._ended or "unknown"
        data, deadline = b"", time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([self.status_fd], [], [], left)
            if not ready:
                break
            try:
                chunk = os.read(self.status_fd, 200)
            except OSError:
                break
            if not chunk:
                self._ended = data.decode(errors="replace").strip() or "unknown"
                return self._ended
            data += chunk
        return data.decode(errors="replace").strip() or "unknown"

    def peak_memory_mb(self) -> float | None:
        """The worker's peak resident memory: from wait4 once it has ended, else from /proc."""
        for token in (self._ended or "").split():
            if token.startswith("maxrss_kb="):
                return int(token.partition("=")[2]) / 1024
        try:
            with open(f"/proc/{self.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            return None
        return None

    def tree_memory_kb(self, precise: bool = False) -> int | None:
        """Memory of the worker and every process it started (found below the first child, which
        adopts orphans), in KiB; None if /proc cannot say. Cheap: resident pages less shared
        file pages, which counts pages a fork shares with its parent once per process (an upper
        bound). Precise: the proportional set size, which shares them out (about 1 ms a process)."""
        pids, seen, total = children(self.parent) if self.parent else [self.pid], set(), 0
        while pids:
            pid = pids.pop()
            if pid in seen:
                continue
            seen.add(pid)
            used = _pss_kb(pid) if precise else _private_rss_kb(pid)
            if used is None:
                continue
            total += used
            pids += children(pid)
        return total if seen else None

    def close(self, grace: float = 0.0) -> None:
        """Kill the worker (after `grace` seconds for it to exit by itself) and wait for its clean-up."""
        if not (grace and self.wait_gone(grace)):
            self.kill()
        self.wait_gone()
        self.end_status(timeout=5.0)  # the first child has killed whatever the worker left behind
        for closer in (self.conn.close, self.output.join):
            try:
                closer()
            except OSError:
                pass
        for fd in (self.pidfd, self.status_fd):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.pidfd = self.status_fd = None


PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024 if hasattr(os, "sysconf") else 4


def _private_rss_kb(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/statm") as f:
            fields = f.read().split()
        return (int(fields[1]) - int(fields[2])) * PAGE_KB
    except (OSError, ValueError, IndexError):
        return None


def _pss_kb(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return _private_rss_kb(pid)


class OutputCollector:
    """Drains a worker's stdout/stderr pipe so it never blocks; keeps the first `cap` bytes."""

    def __init__(self, fd: int, cap: int):
        self.fd, self.cap = fd, cap
        self.kept = bytearray()
        self.total = 0
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        try:
            while chunk := os.read(self.fd, 65536):
                self.total += len(chunk)
                room = self.cap - len(self.kept)
                if room > 0:
                    self.kept += chunk[:room]
        except OSError:
            pass
        finally:
            os.close(self.fd)

    def join(self) -> None:
        self.thread.join(timeout=2)

    def text(self) -> str:
        text = self.kept.decode("utf-8", errors="replace")
        if self.total > len(self.kept):
            text += f"\n[... {self.total - len(self.kept)} more bytes of output dropped]"
        return text


def package_dir() -> str:
    """The grader package's folder: workers see it read-only, without its secrets."""
    return os.path.dirname(os.path.abspath(grader.__file__))


def hidden_paths(course: Catalog, extra: list[str] | None = None) -> list[str]:
    """Secret paths: the course's hidden tests, its course file (it names them) and its solutions, the
    same of the package's own course, and, in a source checkout, solutions, tests and history."""
    package = package_dir()
    checkout = os.path.dirname(package)
    default = catalog.load(catalog.DEFAULT_COURSE) if course.path != catalog.DEFAULT_COURSE else course
    paths = []
    for c in ([course] if default is course else [course, default]):
        paths += [str(c.folder("hidden")), str(c.path.resolve())]
        if c.place("solutions") is not None:
            paths.append(str(c.place("solutions")))
    if os.path.exists(os.path.join(checkout, "pyproject.toml")):
        paths += [os.path.join(checkout, name) for name in ("solutions", "tests", ".git", "bench")]
    return list(dict.fromkeys(paths + [os.path.abspath(p) for p in (extra or [])]))


class Launcher:
    """Starts the zygote once and asks it for one worker per submission."""

    def __init__(self, limits: Limits, course: Catalog, device: str = "cpu", slot: int = 0,
                 extra_hidden: list[str] | None = None, force_mode: str | None = None, fork: bool = False):
        """`fork`: the zygote is forked from this process, which has torch imported already (one import
        instead of two: `grader check`, whose process holds public tests only); else it is started in a
        clean interpreter (grading, whose process holds hidden tests)."""
        self.limits = limits
        self.device = device
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        config = {
            "limits": limits.__dict__,
            "device": device,
            "slot": slot,
            "hidden": hidden_paths(course, extra_hidden),
            "readonly": readonly_paths(hidden_paths(course)),
            "helpers": [str(p) for p in course.helpers],
            "force_mode": force_mode,
            "sys_path": [os.path.dirname(package_dir())],
            "tmpdir": tempfile.gettempdir(),  # the zygote's own environment is clean: TMPDIR is passed here
        }
        # The configuration goes down the control socket, not the command line: the paths to hide
        # name every submission of the class, and the kernel limits one argument to 128 KiB. The
        # command line names the run's TMPDIR instead, so that `ps` tells whose zygote it is.
        code = "import sys, json, socket; s = socket.socket(fileno=int(sys.argv[1])); " \
               "c = json.loads(s.makefile('rb').readline()); sys.path.extend(c['sys_path']); " \
               "from grader.sandboxed.zygote import serve; serve(c, s.detach())"
        self.lock = threading.Lock()
        self._plan: SandboxPlan | None = None
        if fork and may_fork_zygote(course):
            self.process = ForkedZygote(config, theirs)
            return  # the zygote's hello is read when first needed: its start overlaps pytest's
        # A session of its own: a Ctrl-C in the terminal reaches the grader, which closes the zygote.
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-c", code, str(theirs.fileno()), config["tmpdir"]],
            pass_fds=[theirs.fileno()], env=clean_environment(), cwd="/", start_new_session=True,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        theirs.close()
        try:
            self.control.sendall(json.dumps(config).encode() + b"\n")
        except OSError:
            pass  # it exited at once: _read_reply says why
        self.plan  # noqa: B018  (read the hello now: a zygote that cannot start says so here)

    @property
    def plan(self) -> SandboxPlan:
        """How workers are isolated, from the zygote's hello (read once, at first need)."""
        if self._plan is None:
            hello: ZygoteHello = self._read_reply()
            if "error" in hello:
                raise RuntimeError(f"the worker zygote failed to start: {hello['error']}")
            self._plan = SandboxPlan(**hello["plan"])
        return self._plan

    def _read_reply(self) -> ZygoteHello | SpawnReply:
        data = b""
        while not data.endswith(b"\n"):
            chunk = self.control.recv(65536)
            if not chunk:
                err = self.process.stderr.read().decode(errors="replace") if self.process.stderr else ""
                raise RuntimeError(f"the worker zygote exited: {err[-2000:]}")
            data += chunk
        return json.loads(data)

    def spawn(self) -> WorkerProcess:
        self.plan  # noqa: B018  (the zygote's hello comes before any reply to a spawn)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        out_read, out_write = os.pipe()
        status_read, status_write = os.pipe()
        with self.lock:
            request: SpawnRequest = {"op": ZygoteOp.SPAWN}
            fds = [theirs.fileno(), out_write, status_write]
            socket.send_fds(self.control, [json.dumps(request).encode() + b"\n"], fds)
            for fd in (theirs.detach(), out_write, status_write):
                os.close(fd)
            reply: SpawnReply = self._read_reply()
        if "error" in reply:
            for fd in (out_read, status_read):
                os.close(fd)
            ours.close()
            raise RuntimeError(f"could not start a worker: {reply['error']}")
        conn = Connection(ours.detach())
        return WorkerProcess(conn, reply["pid"], out_read, status_read, self.limits.output_kb * 1024,
                             parent=reply.get("parent"))

    def close(self) -> None:
        """Close the control socket: the zygote kills its running workers, waits for their clean-up,
        removes its sandbox folder and exits. Safe from another thread or a signal handler: shutting
        the socket down also wakes a spawn() blocked on a reply."""
        try:
            self.control.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.control.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            plan = self._plan
            try:
                if plan is not None:
                    os.rmdir(plan.root_dir)  # what the zygote could not do
            except OSError:
                pass
        if self.process.stderr:
            self.process.stderr.close()


def may_fork_zygote(course: Catalog) -> bool:
    """Whether this process may fork the zygote from itself: it runs one thread (a fork copies one
    only) and has imported nothing of the course's hidden tests (the check's process collects public
    tests only, and after the fork)."""
    if threading.active_count() != 1:
        return False
    hidden = str(course.folder("hidden").resolve())
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None) or ""
        if path and (path == hidden or path.startswith(hidden + os.sep)):
            return False
    return True


class ForkedZygote:
    """The zygote as a child forked from this process (`Launcher(fork=True)`), with the few methods of
    subprocess.Popen the launcher uses. Before it serves, the child becomes what a started zygote is:
    a session of its own in "/", no terminal, a clean environment, no file of this process's open but
    its control socket, its signals at their defaults, and the course object dropped (the zygote, like
    a started one, never imports test cases; here they were never imported: a check holds public
    tests only, and collects them after the fork)."""

    def __init__(self, config: dict, control: socket.socket):
        err_read, err_write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(err_read)
            _become_zygote(config, control, err_write)
        os.close(err_write)
        control.close()
        self.pid = pid
        self.stderr = os.fdopen(err_read, "rb")
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                pid, status = self.pid, 0
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"zygote {self.pid}", timeout)
            time.sleep(0.01)
        return self.returncode

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _become_zygote(config: dict, control: socket.socket, err_fd: int) -> None:
    code = 0
    try:
        os.setsid()
        os.chdir("/")
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1):
            os.dup2(null, fd)
        os.dup2(err_fd, 2)
        keep = {0, 1, 2, control.fileno()}
        for fd in [int(name) for name in os.listdir("/proc/self/fd")]:
            if fd not in keep:
                try:
                    os.close(fd)
                except OSError:
                    pass
        os.environ.clear()
        os.environ.update(clean_environment())
        catalog.forget()
        import gc

        gc.collect()
        zygote.serve(config, control.detach())
    except BaseException:  # noqa: BLE001  (the child says why on its stderr, and ends)
        import traceback

        traceback.print_exc()
        code = 70
    finally:
        os._exit(code)


class SpawnLauncher:
    """Fallback for systems without fork: a plain subprocess per worker, with the same protocol."""

    def __init__(self, limits: Limits, course: Catalog, device: str = "cpu", **_):
        self.limits = limits
        self.device = device
        self.helpers = [str(p) for p in course.helpers]
        self.plan = SandboxPlan(mode="spawn", device=device, notes=[
            "spawned worker: no fork and no namespaces on this system; a separate process with time limits"])

    def spawn(self) -> WorkerProcess:
        from multiprocessing import get_context

        ctx = get_context("spawn")
        ours, theirs = ctx.Pipe(duplex=True)
        process = ctx.Process(target=zygote.spawned_worker_main, args=(theirs, self.limits, self.helpers),
                              daemon=True)
        process.start()
        theirs.close()
        read_fd, write_fd = os.pipe()
        os.close(write_fd)  # the spawned worker's output goes to the grader's own stderr
        worker = WorkerProcess(ours, process.pid, read_fd, None, self.limits.output_kb * 1024)
        worker.process = process
        return worker

    def close(self) -> None:
        pass


def make_launcher(limits: Limits, course: Catalog, device: str = "cpu", slot: int = 0,
                  extra_hidden: list[str] | None = None, force_mode: str | None = None,
                  fork: bool = False) -> WorkerLauncher:
    """A launcher of workers for the course's submissions (its helpers loaded, its secrets hidden);
    `fork`: the zygote forked from this process (`Launcher`)."""
    if hasattr(os, "fork") and sys.platform.startswith("linux"):
        return Launcher(limits, course, device=device, slot=slot, extra_hidden=extra_hidden, force_mode=force_mode,
                        fork=fork)
    return SpawnLauncher(limits, course, device=device)


def readonly_paths(hidden: list[str]) -> list[str]:
    """System and Python directories the worker needs, minus any that would expose a secret."""
    candidates = ["/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/sys", "/opt"]
    candidates += [sys.prefix, sys.base_prefix, sys.exec_prefix]
    candidates += [p for p in sys.path if p and os.path.isdir(p)]
    candidates.append(package_dir())
    chosen: list[str] = []
    for path in sorted({os.path.abspath(p) for p in candidates if os.path.lexists(p)}, key=len):
        if any(_inside(path, c) for c in chosen if not os.path.islink(c)):
            continue  # already visible through a parent
        if any(_inside(h, path) for h in hidden) and path != package_dir():
            continue  # binding it would show a secret: the grader package is bound by itself instead
        chosen.append(path)
    return chosen


def _inside(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def describe_sandbox(plan: SandboxPlan, limits: Limits) -> dict:
    """How a worker was isolated and limited, for the score file's `sandbox` block."""
    if plan.mode == "spawn":
        return _describe_spawned(plan, limits)
    isolated = plan.mode != "process"
    own_uid = plan.worker_uid is not None
    if own_uid:
        user = f"uid {plan.worker_uid}, dropped from root, no capabilities, no_new_privs"
    elif plan.mode == "user-namespaces":
        user = "root of a new user namespace (the grader's user outside), no capabilities, no_new_privs"
    else:
        user = "the grader's own user (no root to drop from)"
    confined = set(plan.confined)
    if isolated:
        filesystem = ("private root: system and Python directories and the grader's public modules, "
                      "read-only; hidden tests and points covered; its own empty /tmp and /work")
    elif "files" in confined:
        filesystem = ("the machine's own, confined by Landlock: read-only beneath the system and Python "
                      "directories and the grader's public modules, the secret paths (hidden tests, points, "
                      "solutions, what --hide names) left out; read-write only in its own folder; no access "
                      "to other processes' memory or environment")
    elif own_uid:
        filesystem = (f"the machine's own, seen as uid {plan.worker_uid}; the secret paths (hidden tests, points, "
                      "solutions, and what --hide names: `grader grade` adds the submissions and the output "
                      "folder) are made unreadable to it by removing their other-permissions")
    else:
        filesystem = "not isolated: the worker can read what the grader's user can"
    # RLIMIT_NPROC counts per user id, and never for root: a user namespace made by root maps the
    # worker to root outside, so only a worker with a user id of its own (or a user's) is limited.
    nproc = own_uid or os.geteuid() != 0
    shared_nproc = not own_uid and plan.mode == "process" and os.geteuid() != 0
    cpu = plan.device == "cpu"
    if isolated:
        processes = "a PID namespace of its own: whatever it starts dies with it; it can signal nothing outside it"
    else:
        processes = "its parent is a child subreaper that kills whatever it leaves behind; " + (
            "Landlock lets it signal only itself and what it starts" if "signals" in confined else
            "as a user of its own it cannot signal the grader" if own_uid else
            "it can signal the grader's processes (same user, and no Landlock scoping on this kernel)")
    return {
        "backend": plan.mode,
        "network": ("none: an empty network namespace" if isolated else
                    "none: a seccomp filter refuses every socket but Unix ones" if "network" in confined else
                    "not isolated: no network namespace on this machine"),
        "user": user,
        "filesystem": filesystem,
        "processes": processes,
        "processes_limit": limits.processes if nproc else None,
        "memory_limit_mb": limits.memory_mb if cpu else None,
        "memory": (f"{limits.memory_mb} MB above its start: per process by RLIMIT_AS, for all its processes "
                   "together by the grader (resident memory, checked every 50 ms)" if cpu else
                   f"GPU: {limits.gpu_memory_fraction:.0%} of the device's memory; no address-space limit"),
        "time_limits_s": {"call": limits.call_timeout_s, "exercise": limits.exercise_budget_s,
                          "submission": limits.submission_budget_s, "cpu": limits.cpu_s},
        "output_limit_kb": limits.output_kb,
        "environment": "cleared: only PATH, HOME, LANG, TMPDIR and thread settings",
        "notes": list(plan.notes) + ([] if nproc else [
            "no process-count limit: RLIMIT_NPROC counts per user id (never for root), and the worker "
            "shares the grader's"]) + ([
            f"the process-count limit is shared: the worker has the grader's user id, so its {limits.processes} "
            f"processes are counted beyond what that user ran besides when it started, and a process the "
            f"user ends or starts meanwhile moves its limit"] if shared_nproc else []),
    }


def _describe_spawned(plan: SandboxPlan, limits: Limits) -> dict:
    return {
        "backend": "spawn",
        "network": "not isolated: no namespaces on this system",
        "user": "the grader's own user",
        "filesystem": "not isolated: the worker can read what the grader's user can",
        "processes": "a separate process started for the submission; what it starts is not tracked",
        "processes_limit": None,
        "memory_limit_mb": None,
        "memory": "not limited: resource limits are set only where the system allows them",
        "time_limits_s": {"call": limits.call_timeout_s, "exercise": limits.exercise_budget_s,
                          "submission": limits.submission_budget_s, "cpu": limits.cpu_s},
        "output_limit_kb": limits.output_kb,
        "environment": "cleared: only PATH, HOME, LANG, TMPDIR and thread settings",
        "notes": list(plan.notes),
    }


def launcher_for(options, course: Catalog, slot: int = 0) -> WorkerLauncher:
    """The launcher an engine with these `Options` (`grader.host.options`) grades through; its zygote is
    forked from this process only for a run of public tests (`grader check`)."""
    return make_launcher(options.limits, course, device=options.device, slot=slot, extra_hidden=options.extra_hidden,
                         force_mode=options.sandbox, fork=options.fork_zygote and options.folders == ("public",))
