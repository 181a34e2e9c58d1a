"""The zygote: a warm process that forks one fresh, sandboxed worker per submission.

`import torch` costs about a second; the zygote pays it once per grading process and then
forks workers that start with torch and the course's worker-side helpers already loaded
(`config["helpers"]`, files the engine names). The engine starts it
(`grader.host.launcher.Launcher`) with a clean environment (`python -I`, no secrets from the
grader's environment); it never imports test cases or solutions, and never touches CUDA: a
worker that grades on the GPU initialises CUDA itself, after the fork.

Per worker the zygote forks twice: the first child enters new namespaces
(`isolation.unshare_for_worker`) and forks the worker, which is then the first process of
its own PID namespace, builds its private root and drops its privileges
(`isolation.enter`). The first child waits for it and writes how it ended to a status pipe.

The control socket speaks JSON lines (`grader.protocol.messages`): a `ZygoteHello` first, then
a `SpawnReply` to each `SpawnRequest`, which carries the worker's socket, output pipe and status
pipe as file descriptors.

The control socket is also the zygote's lifeline: when it closes (the engine closed it, or the
process that held it died, by SIGKILL too) or SIGTERM arrives, the zygote kills every worker
still running, waits while each first child cleans up after its worker, removes its sandbox
folder and exits. The engine starts it in a session of its own, so that the terminal's Ctrl-C
goes to the grader, which decides. (No PR_SET_PDEATHSIG here: it fires when the *thread* that
started the zygote exits, and a Dask worker's engine lives in a thread of its pool.)
"""

from __future__ import annotations

import gc
import io
import json
import os
import shutil
import signal
import socket
import stat
import sys
import tempfile
import time
import traceback
from multiprocessing.connection import Connection

from grader.protocol.limits import Limits, SandboxPlan
from grader.protocol.messages import SpawnReply, ZygoteHello, ZygoteOp
from grader.sandboxed import confine, isolation, reach
from grader.sandboxed.isolation import clean_environment


def serve(config: dict, control_fd: int) -> None:
    """Main loop of the zygote process."""
    control = socket.socket(fileno=control_fd)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    # The empty mount point of the workers' roots, in the grader's temporary folder (its TMPDIR).
    root_dir = tempfile.mkdtemp(prefix="autograd-lab-root-", dir=config.get("tmpdir"))
    try:
        try:
            os.chmod(root_dir, 0o755)
            limits = Limits(**config["limits"])
            plan = choose_plan(config, root_dir)
            import torch  # noqa: F401  (the point of the zygote: loaded once, before any fork)
            from grader.sandboxed import worker as worker_module
            worker_module.prepare_process(config["helpers"])  # the course's helpers, before any fork
            gc.collect()
            gc.freeze()  # workers' garbage collections skip (and so do not copy) the zygote's objects
            hello: ZygoteHello = {"plan": plan.to_json()}
        except BaseException:
            _send(control, ZygoteHello(error=traceback.format_exc()))
            return
        _send(control, hello)
        _serve_spawns(control, plan, limits)
    except OSError:
        pass  # the engine went away while we answered
    finally:
        end_workers()
        try:
            os.rmdir(root_dir)
        except OSError:
            pass


def _exit_on_sigterm(signum, frame) -> None:
    raise SystemExit(0)  # through serve's clean-up


# first child's pid -> a pidfd (or the pid) of its worker, for each worker still running
_running: dict[int, int] = {}


def _serve_spawns(control: socket.socket, plan: SandboxPlan, limits: Limits) -> None:
    while True:
        _reap_first_children()
        try:
            message, fds, _, _ = socket.recv_fds(control, 4096, 3)
        except OSError:
            return
        if not message:
            return
        try:
            if json.loads(message).get("op") != ZygoteOp.SPAWN:
                raise ValueError(f"not a spawn request: {message[:100]!r}")
            pid, parent = _fork_worker(plan, limits, control, fds)
            _running[parent] = _worker_handle(pid)
            reply: SpawnReply = {"pid": pid, "parent": parent}
            _send(control, reply)
        except BaseException:
            _send(control, SpawnReply(error=traceback.format_exc()))
        finally:
            for fd in fds:
                try:
                    os.close(fd)
                except OSError:
                    pass


def _worker_handle(pid: int) -> int:
    """A pidfd for the worker where the system has them: a signal through it cannot reach a
    process that reused the pid. Else the pid itself (negative, to tell them apart)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return -pid


def _reap_first_children() -> None:
    """Collect every child that has ended (so none stays a zombie) and forget its worker."""
    try:
        while (pid := os.waitpid(-1, os.WNOHANG)[0]) > 0:
            handle = _running.pop(pid, None)
            if handle is not None and handle >= 0:
                os.close(handle)
    except ChildProcessError:
        pass


def end_workers(grace_s: float = 5.0) -> None:
    """Kill every worker still running and wait while each first child cleans up after its own (kills
    what the worker left, removes its work folder); a first child still there after `grace_s` is killed."""
    for handle in _running.values():
        try:
            if handle >= 0:
                signal.pidfd_send_signal(handle, signal.SIGKILL)
            else:
                os.kill(-handle, signal.SIGKILL)
        except OSError:
            pass
    deadline = time.monotonic() + grace_s
    while _running and time.monotonic() < deadline:
        _reap_first_children()
        if _running:
            time.sleep(0.01)
    for first in list(_running):
        try:
            os.kill(first, signal.SIGKILL)
            os.waitpid(first, 0)
        except OSError:
            pass
        handle = _running.pop(first)
        if handle >= 0:
            os.close(handle)


def _send(control: socket.socket, reply: ZygoteHello | SpawnReply) -> None:
    control.sendall(json.dumps(reply).encode() + b"\n")


def choose_plan(config: dict, root_dir: str) -> SandboxPlan:
    """Pick the strongest isolation this machine allows, by trying it in a throwaway child."""
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
        problem = _try_plan(plan, Limits(**config["limits"])) if isolation.namespaces_supported() else "not Linux"
        if problem is None:
            return plan
        notes.append(f"{mode} unavailable: {problem}")
    plan = SandboxPlan(mode="process", **base, notes=notes)
    plan.worker_uid = plan.worker_gid = uid
    if uid is not None:  # before the first worker: its own user must reach the interpreter, the venv, the package
        plan.worker_groups = [reach.WORKER_GROUP]
        plan.notes += let_the_worker_read(plan, config)
    plan.confined = confine.available()
    if plan.confined:
        confine.prepare(plan)
        problem = _try_plan(plan, Limits(**config["limits"]))
        if problem is not None:
            notes.append(f"Landlock and seccomp unavailable: {problem}")
            plan.confined = []
    if uid is not None:
        # The worker sees the machine's file system as a user of its own: make the secrets
        # unreadable to it, as one would with chmod o= (Gradescope's advice).
        isolation.protect_from_other_users(config["hidden"])
    return plan


def let_the_worker_read(plan: SandboxPlan, config: dict) -> list[str]:
    """Open to the workers' group what stops the worker's user reading the interpreter, the venv or the
    package (notes saying what was opened); RuntimeError saying what to change when that cannot be done."""
    paths = reach.needed_paths(config["readonly"], sys.executable)
    who = (plan.worker_uid, plan.worker_gid, plan.worker_groups)
    blocked = reach.unreachable(paths, *who)
    if not blocked:
        return []
    try:
        notes = reach.open_to_workers(blocked)
    except OSError as exc:
        raise RuntimeError(reach.explain(blocked, plan.worker_uid, f"an ACL could not be set: {exc}")) from None
    still = reach.unreachable(paths, *who)
    if still:
        raise RuntimeError(reach.explain(still, plan.worker_uid, "still blocked after an ACL entry for its group"))
    return notes


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
    return isolation.tasks_of_user(uid) > 0


def _try_plan(plan: SandboxPlan, limits: Limits) -> str | None:
    read_fd, write_fd = os.pipe()
    workdir = isolation.make_workdir(plan) if plan.mode == "process" else None
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        try:
            isolation.unshare_for_worker(plan)
            inner = os.fork()
            if inner == 0:
                try:
                    confine.confine(plan, isolation.enter(plan, limits, workdir))
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
    if workdir is not None:
        shutil.rmtree(workdir, ignore_errors=True)
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
                isolation.prctl(isolation.PR_SET_PDEATHSIG, signal.SIGKILL)
                # Whatever the worker leaves behind is re-parented here, to be killed below.
                isolation.prctl(isolation.PR_SET_CHILD_SUBREAPER, 1)
            # Without namespaces the work directory is made here, as root, for the worker's user.
            workdir = isolation.make_workdir(plan) if plan.mode == "process" else None
            isolation.unshare_for_worker(plan)
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
            isolation.kill_descendants()
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
        workdir = isolation.enter(plan, limits, workdir)
        confine.confine(plan, workdir)
        os.closerange(3, conn_fd)
        os.closerange(conn_fd + 1, 65536)
        os.environ.clear()
        os.environ.update(clean_environment())
        os.environ["HOME"] = os.environ["TMPDIR"] = workdir if plan.mode == "process" else "/work"
        from grader.sandboxed import worker

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


def spawned_worker_main(conn, limits: Limits, course_helpers: list[str]) -> None:
    """The worker of `grader.host.launcher.SpawnLauncher` (no fork): a plain process, time limits only."""
    from grader.sandboxed import worker

    os.environ.clear()
    os.environ.update(clean_environment())
    workdir = tempfile.mkdtemp(prefix="autograd-lab-worker-")
    worker.run(conn, workdir, course_helpers)
