"""Starting workers: a warm zygote that forks one fresh, sandboxed worker per submission.

`import torch` costs about a second; the zygote pays it once per grading process and then
forks workers that start with torch already loaded. It is started with a clean environment
(`python -I`, no secrets from the grader's environment), never imports test cases or
solutions, and never touches CUDA: a worker that grades on the GPU initialises CUDA itself,
after the fork.

Per worker the zygote forks twice: the first child enters new namespaces
(`sandbox.unshare_for_worker`) and forks the worker, which is then the first process of
its own PID namespace, builds its private root and drops its privileges
(`sandbox.enter`). The first child waits for it and writes how it ended to a status pipe.

Engine side: `Launcher.spawn()` returns a `WorkerProcess` whose connection speaks
`grader.wire`; where `fork` is not available (Windows, macOS), `SpawnLauncher` starts a
plain subprocess instead.
"""

from __future__ import annotations

import gc
import io
import json
import os
import select
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from multiprocessing.connection import Connection

from grader import sandbox
from grader.sandbox import Limits, SandboxPlan


# ============================================================================= engine side

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
        pids, seen, total = sandbox._children(self.parent) if self.parent else [self.pid], set(), 0
        while pids:
            pid = pids.pop()
            if pid in seen:
                continue
            seen.add(pid)
            used = _pss_kb(pid) if precise else _private_rss_kb(pid)
            if used is None:
                continue
            total += used
            pids += sandbox._children(pid)
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


def clean_environment() -> dict[str, str]:
    """The only environment a worker sees: nothing from the grader's (no tokens, no keys)."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/work",
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "TMPDIR": "/tmp",
    }


def hidden_paths(extra: list[str] | None = None) -> list[str]:
    """Secret paths: the hidden tests, the points file (it names them) and, in a source checkout,
    solutions, tests and history."""
    import grader

    package = os.path.dirname(os.path.abspath(grader.__file__))
    checkout = os.path.dirname(package)
    paths = [os.path.join(package, "cases", "hidden"), os.path.join(package, "cases", "points.yaml")]
    if os.path.exists(os.path.join(checkout, "pyproject.toml")):
        paths += [os.path.join(checkout, name) for name in ("solutions", "tests", ".git", "bench")]
    return paths + [os.path.abspath(p) for p in (extra or [])]


class Launcher:
    """Starts the zygote once and asks it for one worker per submission."""

    def __init__(self, limits: Limits, device: str = "cpu", slot: int = 0, extra_hidden: list[str] | None = None,
                 force_mode: str | None = None):
        self.limits = limits
        self.device = device
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        config = {
            "limits": limits.__dict__,
            "device": device,
            "slot": slot,
            "hidden": hidden_paths(extra_hidden),
            "readonly": sandbox.readonly_paths(hidden_paths()),
            "force_mode": force_mode,
            "sys_path": [os.path.dirname(os.path.dirname(os.path.abspath(sandbox.__file__)))],
        }
        code = "import sys, json; c = json.loads(sys.argv[1]); sys.path.extend(c['sys_path']); " \
               "from grader.zygote import serve; serve(c, int(sys.argv[2]))"
        self.process = subprocess.Popen(
            [sys.executable, "-I", "-c", code, json.dumps(config), str(theirs.fileno())],
            pass_fds=[theirs.fileno()], env=clean_environment(), cwd="/",
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        theirs.close()
        hello = self._read_reply()
        if "error" in hello:
            raise RuntimeError(f"the worker zygote failed to start: {hello['error']}")
        self.plan = SandboxPlan(**hello["plan"])
        self.lock = threading.Lock()

    def _read_reply(self) -> dict:
        data = b""
        while not data.endswith(b"\n"):
            chunk = self.control.recv(65536)
            if not chunk:
                err = self.process.stderr.read().decode(errors="replace") if self.process.stderr else ""
                raise RuntimeError(f"the worker zygote exited: {err[-2000:]}")
            data += chunk
        return json.loads(data)

    def spawn(self) -> WorkerProcess:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        out_read, out_write = os.pipe()
        status_read, status_write = os.pipe()
        with self.lock:
            socket.send_fds(self.control, [b'{"op": "spawn"}\n'], [theirs.fileno(), out_write, status_write])
            for fd in (theirs.detach(), out_write, status_write):
                os.close(fd)
            reply = self._read_reply()
        if "error" in reply:
            for fd in (out_read, status_read):
                os.close(fd)
            ours.close()
            raise RuntimeError(f"could not start a worker: {reply['error']}")
        conn = Connection(ours.detach())
        return WorkerProcess(conn, reply["pid"], out_read, status_read, self.limits.output_kb * 1024,
                             parent=reply.get("parent"))

    def close(self) -> None:
        try:
            self.control.close()
            self.process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
        if self.process.stderr:
            self.process.stderr.close()


class SpawnLauncher:
    """Fallback for systems without fork: a plain subprocess per worker, with the same protocol."""

    def __init__(self, limits: Limits, device: str = "cpu", **_):
        self.limits = limits
        self.device = device
        self.plan = SandboxPlan(mode="spawn", device=device, notes=[
            "spawned worker: no fork and no namespaces on this system; a separate process with time limits"])

    def spawn(self) -> WorkerProcess:
        from multiprocessing import get_context

        ctx = get_context("spawn")
        ours, theirs = ctx.Pipe(duplex=True)
        process = ctx.Process(target=_spawned_worker_main, args=(theirs, self.limits), daemon=True)
        process.start()
        theirs.close()
        read_fd, write_fd = os.pipe()
        os.close(write_fd)  # the spawned worker's output goes to the grader's own stderr
        worker = WorkerProcess(ours, process.pid, read_fd, None, self.limits.output_kb * 1024)
        worker.process = process
        return worker

    def close(self) -> None:
        pass


def _spawned_worker_main(conn, limits: Limits) -> None:
    from grader import worker

    os.environ.clear()
    os.environ.update(clean_environment())
    workdir = tempfile.mkdtemp(prefix="autograd-lab-worker-")
    worker.run(conn, workdir)


def make_launcher(limits: Limits, device: str = "cpu", slot: int = 0, extra_hidden: list[str] | None = None,
                  force_mode: str | None = None):
    if hasattr(os, "fork") and sys.platform.startswith("linux"):
        return Launcher(limits, device=device, slot=slot, extra_hidden=extra_hidden, force_mode=force_mode)
    return SpawnLauncher(limits, device=device)


# ============================================================================= zygote side

def serve(config: dict, control_fd: int) -> None:
    """Main loop of the zygote process."""
    control = socket.socket(fileno=control_fd)
    try:
        if sys.platform.startswith("linux"):
            sandbox.prctl(sandbox.PR_SET_PDEATHSIG, signal.SIGKILL)
        limits = Limits(**config["limits"])
        plan = choose_plan(config)
        import torch  # noqa: F401  (the point of the zygote: loaded once, before any fork)
        from grader import worker as worker_module  # noqa: F401
        worker_module.prepare_process()
        gc.collect()
        gc.freeze()  # workers' garbage collections skip (and so do not copy) the zygote's objects
        _send(control, {"plan": plan.to_json()})
    except BaseException:
        _send(control, {"error": traceback.format_exc()})
        return
    try:
        _serve_spawns(control, plan, limits)
    finally:
        try:
            os.rmdir(plan.root_dir)  # the empty mount point of the workers' roots
        except OSError:
            pass


def _serve_spawns(control: socket.socket, plan: SandboxPlan, limits: Limits) -> None:
    from grader.worker import reap_children

    while True:
        reap_children()
        try:
            message, fds, _, _ = socket.recv_fds(control, 4096, 3)
        except OSError:
            return
        if not message:
            return
        try:
            pid, parent = _fork_worker(plan, limits, control, fds)
            _send(control, {"pid": pid, "parent": parent})
        except BaseException:
            _send(control, {"error": traceback.format_exc()})
        finally:
            for fd in fds:
                try:
                    os.close(fd)
                except OSError:
                    pass


def _send(control: socket.socket, reply: dict) -> None:
    control.sendall(json.dumps(reply).encode() + b"\n")


def choose_plan(config: dict) -> SandboxPlan:
    """Pick the strongest isolation this machine allows, by trying it in a throwaway child."""
    root_dir = tempfile.mkdtemp(prefix="autograd-lab-root-")
    os.chmod(root_dir, 0o755)
    base = dict(root_dir=root_dir, readonly_paths=config["readonly"], hidden_paths=config["hidden"],
                device=config["device"])
    modes = ["root-namespaces"] if os.geteuid() == 0 else []
    modes.append("user-namespaces")
    if config.get("force_mode"):
        modes = [config["force_mode"]]
    uid = allocate_worker_uid(int(config.get("slot", 0))) if os.geteuid() == 0 else None
    notes = []
    for mode in modes:
        if mode == "process":
            break
        plan = SandboxPlan(mode=mode, **base)
        if mode == "root-namespaces":
            plan.worker_uid = plan.worker_gid = uid
        problem = _try_plan(plan, Limits(**config["limits"])) if sandbox.namespaces_supported() else "not Linux"
        if problem is None:
            return plan
        notes.append(f"{mode} unavailable: {problem}")
    plan = SandboxPlan(mode="process", **base, notes=notes)
    plan.worker_uid = plan.worker_gid = uid
    if uid is not None:
        # The worker sees the machine's file system as a user of its own: make the secrets
        # unreadable to it, as one would with chmod o= (Gradescope's advice).
        sandbox.protect_from_other_users(config["hidden"])
    return plan


WORKER_UIDS = range(61000, 65000)
_uid_lock: int | None = None  # held open for the zygote's life


def allocate_worker_uid(slot: int) -> int:
    """A user id for this zygote's workers that no other grader and no running process uses.

    RLIMIT_NPROC counts processes per user id, and processes of one user id may signal each
    other: two graders on one machine (two runs, or two pool processes) must never share one.
    A uid is taken with an exclusive lock on a file in a root-only folder, and skipped while
    any process still runs under it."""
    global _uid_lock
    import fcntl

    folder = _lock_folder()
    count = len(WORKER_UIDS)
    for i in range(count):
        uid = WORKER_UIDS[(slot + i) % count]
        if folder is not None:
            fd = os.open(os.path.join(folder, f"{uid}.lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
        if _uid_has_processes(uid):
            if folder is not None:
                os.close(fd)
            continue
        if folder is not None:
            if _uid_lock is not None:
                os.close(_uid_lock)
            _uid_lock = fd
        return uid
    raise RuntimeError("no free worker user id (every uid in 61000-64999 is in use)")


def _lock_folder() -> str | None:
    for parent in ("/run", tempfile.gettempdir()):
        folder = os.path.join(parent, "autograd-lab-uids")
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        except OSError:
            continue
        st = os.lstat(folder)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o077:
            return folder
    return None


def _uid_has_processes(uid: int) -> bool:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/status") as f:
                    for line in f:
                        if line.startswith("Uid:"):
                            if int(line.split()[1]) == uid:
                                return True
                            break
            except (OSError, ValueError):
                pass
    return False


def _try_plan(plan: SandboxPlan, limits: Limits) -> str | None:
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        try:
            sandbox.unshare_for_worker(plan)
            inner = os.fork()
            if inner == 0:
                try:
                    sandbox.enter(plan, limits)
                    os._exit(0)
                except BaseException as exc:
                    os.write(write_fd, str(exc).encode()[:500])
                    os._exit(1)
            _, status = os.waitpid(inner, 0)
            os._exit(0 if status == 0 else 1)
        except BaseException as exc:
            os.write(write_fd, str(exc).encode()[:500])
            os._exit(1)
    os.close(write_fd)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(read_fd, "rb") as f:
        problem = f.read().decode(errors="replace")
    return None if status == 0 else (problem or f"status {status}")


def _fork_worker(plan: SandboxPlan, limits: Limits, control: socket.socket, fds: list[int]) -> tuple[int, int]:
    conn_fd, out_fd, status_fd = fds
    pid_read, pid_write = os.pipe()
    first = os.fork()
    if first == 0:  # -------- first child: namespaces, then the worker, then report its end
        try:
            control.close()
            os.close(pid_read)
            os.setsid()
            if sys.platform.startswith("linux"):
                sandbox.prctl(sandbox.PR_SET_PDEATHSIG, signal.SIGKILL)
                # Whatever the worker leaves behind is re-parented here, to be killed below.
                sandbox.prctl(sandbox.PR_SET_CHILD_SUBREAPER, 1)
            # Without namespaces the work directory is made here, as root, for the worker's user.
            workdir = sandbox.make_workdir(plan) if plan.mode == "process" else None
            sandbox.unshare_for_worker(plan)
            worker_pid = os.fork()
            if worker_pid == 0:
                os.close(pid_write)
                os.close(status_fd)
                _worker_main(plan, limits, conn_fd, out_fd, workdir)
            os.write(pid_write, f"{worker_pid}\n".encode())
            os.close(pid_write)
            os.close(conn_fd)
            os.close(out_fd)
            _, status, usage = os.wait4(worker_pid, 0)
            ended = f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exit {os.WEXITSTATUS(status)}"
            ended += f" maxrss_kb={usage.ru_maxrss}"
            # A PID namespace takes the worker's processes with it; without one, kill them here.
            sandbox.kill_descendants()
            if workdir is not None:
                shutil.rmtree(workdir, ignore_errors=True)
            os.write(status_fd, ended.encode())
        except BaseException:
            try:
                os.write(pid_write, f"error {traceback.format_exc()[-1000:]}\n".encode())
            except OSError:
                pass
        os._exit(0)
    os.close(pid_write)
    with os.fdopen(pid_read, "rb") as f:
        line = f.readline().decode().strip()
    if not line.isdigit():
        raise RuntimeError(line or "the worker did not start")
    return int(line), first


def _worker_main(plan: SandboxPlan, limits: Limits, conn_fd: int, out_fd: int, workdir: str | None) -> None:
    """The worker process: never returns."""
    code = 0
    try:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        devnull = os.open("/dev/null", os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out_fd, 1)
        os.dup2(out_fd, 2)
        for fd in (devnull, out_fd):
            os.close(fd)
        # Unbuffered: what the student's code prints reaches the grader even if the worker is killed.
        sys.stdout, sys.stderr = (io.TextIOWrapper(io.FileIO(fd, "w", closefd=False), encoding="utf-8",
                                                   errors="backslashreplace", write_through=True)
                                  for fd in (1, 2))
        workdir = sandbox.enter(plan, limits, workdir)
        os.closerange(3, conn_fd)
        os.closerange(conn_fd + 1, 65536)
        os.environ.clear()
        os.environ.update(clean_environment())
        os.environ["HOME"] = os.environ["TMPDIR"] = workdir if plan.mode == "process" else "/work"
        from grader import worker

        worker.Worker(Connection(conn_fd), workdir).serve()
    except BaseException:
        traceback.print_exc()
        code = 70
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            pass
        os._exit(code)
