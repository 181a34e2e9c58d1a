"""The sandbox a worker runs in: limits, a private file system, no network, no privileges.

The system calls and steps that isolate a worker, run on the sandboxed side only (the zygote's
children). `Limits` (what a worker may use) and `SandboxPlan` (how it is isolated on this
machine) are in `grader.protocol.limits`. `enter(plan, limits)` runs inside the freshly forked
worker, before any student code:

* Linux, as root or with unprivileged user namespaces: new mount, PID, network, IPC and UTS
  namespaces. The worker gets a fresh root file system that holds only the system and
  Python directories (read-only), the grader's non-secret modules, an empty /tmp and its own
  /work; the hidden tests are covered by an empty mount. `pivot_root` removes the old root,
  so other submissions, the solutions, the output folder and home directories do not exist
  for it. The network namespace has no interface but a down loopback. As root, the worker
  then drops to an unprivileged user id of its own; in a user namespace it drops every
  capability. When its PID namespace's first process dies, the kernel kills every process
  the submission started, detached or not.
* Anywhere else: a new session and the same resource limits, and the score file says that
  the file system and the network were not isolated.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
try:
    import resource
except ImportError:  # Windows: no rlimits; the spawned worker runs without them
    resource = None
import stat
import sys

from grader.protocol.limits import Limits, SandboxPlan

MiB = 1024 * 1024


# ----------------------------------------------------------------------------- Linux system calls

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 1, 4, 38, 36
_SYSCALLS = {"x86_64": {"pivot_root": 155, "capset": 126}, "aarch64": {"pivot_root": 41, "capset": 91}}

_libc = None


def libc():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return _libc


def _check(result: int, what: str) -> int:
    if result == -1:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")
    return result


def unshare(flags: int) -> None:
    _check(libc().unshare(flags), "unshare")


def mount(source: str | None, target: str, fstype: str | None, flags: int = 0, data: str | None = None) -> None:
    enc = lambda s: None if s is None else s.encode()  # noqa: E731
    _check(libc().mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)), f"mount {target}")


def umount(target: str, flags: int = 0) -> None:
    _check(libc().umount2(target.encode(), flags), f"umount {target}")


def pivot_root(new_root: str, put_old: str) -> None:
    number = _SYSCALLS[platform.machine()]["pivot_root"]
    _check(libc().syscall(number, new_root.encode(), put_old.encode()), "pivot_root")


def prctl(option: int, value: int) -> None:
    _check(libc().prctl(option, ctypes.c_ulong(value), 0, 0, 0), f"prctl {option}")


def drop_capabilities() -> None:
    """capset(2) with empty sets: no capability left, even inside a user namespace."""
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
    data = (ctypes.c_uint32 * 6)()  # two zeroed {effective, permitted, inheritable}
    number = _SYSCALLS[platform.machine()]["capset"]
    _check(libc().syscall(number, header, data), "capset")


def namespaces_supported() -> bool:
    return sys.platform.startswith("linux") and platform.machine() in _SYSCALLS


# ----------------------------------------------------------------------------- entering the sandbox

def unshare_for_worker(plan: SandboxPlan) -> None:
    """Run in the intermediate process: the next fork lands in the new namespaces."""
    if plan.mode == "process":
        return
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
    if plan.mode == "user-namespaces":
        uid, gid = os.getuid(), os.getgid()
        unshare(flags | CLONE_NEWUSER)
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"0 {uid} 1")
        _write("/proc/self/gid_map", f"0 {gid} 1")
    else:
        unshare(flags)


def enter(plan: SandboxPlan, limits: Limits, workdir: str | None = None) -> str:
    """Isolate the current process (the worker) and return its private work directory."""
    # A session and process group of its own, before anything else: the worker's parent (the
    # first child) must not be in the group a worker names with kill(0, ...) or killpg. In a
    # user namespace the parent has the worker's user id, so such a signal would reach it; and
    # in a new PID namespace getppid() is 0, so "kill my parent" is that same kill(0, ...).
    os.setsid()
    if plan.mode == "process":
        workdir = workdir or make_workdir(plan)
        os.chdir(workdir)
    else:
        workdir = "/work"
        _build_root(plan, limits)
    _set_limits(plan, limits)
    _drop_privileges(plan)
    prctl(PR_SET_PDEATHSIG, 9) if sys.platform.startswith("linux") else None
    return workdir


def make_workdir(plan: SandboxPlan) -> str:
    """A private work directory for a worker without namespaces, owned by the user it will run as."""
    import tempfile

    workdir = tempfile.mkdtemp(prefix="autograd-lab-worker-")
    if plan.worker_uid is not None and os.geteuid() == 0:
        os.chown(workdir, plan.worker_uid, plan.worker_gid)
    return workdir


def _build_root(plan: SandboxPlan, limits: Limits) -> None:
    root = plan.root_dir
    owner = _tmpfs_owner(plan)
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=755")
    # The scratch folders first: a Python that lives under /tmp (a CI checkout's venv) is bound
    # on top of the fresh /tmp below, instead of being covered by it.
    for name, mode in (("tmp", "1777"), ("work", "700")):
        _scratch(f"{root}/{name}", mode, owner, limits)
    for path in plan.readonly_paths:
        _bind_readonly(path, root + path)
    for path in plan.hidden_paths:
        if os.path.isdir(root + path):
            mount("tmpfs", root + path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k,mode=000")
        elif os.path.isfile(root + path):
            mount("/dev/null", root + path, None, MS_BIND)
    _make_dev(root, plan.device)
    _scratch(f"{root}/dev/shm", "1777", owner, limits)
    os.makedirs(f"{root}/proc", exist_ok=True)
    mount("proc", f"{root}/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    os.makedirs(f"{root}/.old_root", exist_ok=True)
    pivot_root(root, f"{root}/.old_root")
    os.chdir("/")
    umount("/.old_root", MNT_DETACH)
    os.rmdir("/.old_root")
    os.chdir("/work")


def _scratch(path: str, mode: str, owner: str, limits: Limits) -> None:
    os.makedirs(path, exist_ok=True)
    mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, f"size={limits.tmpfs_mb}m,mode={mode},{owner}")


def _bind_readonly(source: str, target: str) -> None:
    if os.path.islink(source):
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.lexists(target):
            os.symlink(os.readlink(source), target)
        return
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()
    mount(source, target, None, MS_BIND | MS_REC)
    # A read-only remount must keep the flags the kernel locked on the source mount.
    mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | _locked_flags(source))


def _locked_flags(path: str) -> int:
    st = os.statvfs(path).f_flag
    flags = MS_NOSUID
    for st_bit, ms_bit in ((4, MS_NODEV), (8, MS_NOEXEC), (1024, MS_NOATIME), (2048, MS_NODIRATIME), (4096, MS_RELATIME)):
        if st & st_bit:
            flags |= ms_bit
    return flags


def _make_dev(root: str, device: str) -> None:
    os.makedirs(f"{root}/dev", exist_ok=True)
    mount("tmpfs", f"{root}/dev", "tmpfs", MS_NOSUID, "size=64k,mode=755")
    names = ["null", "zero", "full", "random", "urandom"]
    if device.startswith("cuda"):
        names += [n for n in os.listdir("/dev") if n.startswith("nvidia")]
    for name in names:
        source = f"/dev/{name}"
        if os.path.exists(source) and not os.path.isdir(source):
            open(f"{root}/dev/{name}", "a").close()
            mount(source, f"{root}/dev/{name}", None, MS_BIND)
    os.symlink("/proc/self/fd", f"{root}/dev/fd")


def _tmpfs_owner(plan: SandboxPlan) -> str:
    if plan.worker_uid is not None:
        return f"uid={plan.worker_uid},gid={plan.worker_gid}"
    return "uid=0,gid=0"


def _set_limits(plan: SandboxPlan, limits: Limits) -> None:
    def cap(which: int, value: int) -> None:
        soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))

    cap(resource.RLIMIT_CORE, 0)
    cap(resource.RLIMIT_FSIZE, limits.file_size_mb * MiB)
    cap(resource.RLIMIT_NOFILE, limits.open_files)
    cap(resource.RLIMIT_CPU, limits.cpu_s)
    if plan.worker_uid is not None or plan.mode == "user-namespaces":
        # Counted per user id (and per user namespace): the worker's own.
        cap(resource.RLIMIT_NPROC, limits.processes)
    elif os.geteuid() != 0 and sys.platform.startswith("linux"):
        # The grader's user id, whose other processes (threads included) count too: the worker's
        # own tasks may number `processes`, as with a user id of its own, beyond what the user
        # runs besides. Never for root, whom the kernel does not limit.
        others = tasks_of_user(os.getuid()) - len(os.listdir("/proc/self/task"))
        cap(resource.RLIMIT_NPROC, others + limits.processes)
    if plan.device == "cpu" and hasattr(resource, "RLIMIT_AS"):
        # CUDA reserves huge address ranges, so the address-space cap is for CPU workers only.
        cap(resource.RLIMIT_AS, current_address_space() + limits.memory_mb * MiB)


def tasks_of_user(uid: int) -> int:
    """How many tasks (processes and their threads, as RLIMIT_NPROC counts) run under `uid`."""
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/status") as f:
                    fields = dict(line.split(":", 1) for line in f if line.startswith(("Uid:", "Threads:")))
                if int(fields["Uid"].split()[0]) == uid:
                    count += int(fields["Threads"])
            except (OSError, ValueError, KeyError):
                pass
    return count


def current_address_space() -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _drop_privileges(plan: SandboxPlan) -> None:
    if plan.worker_uid is not None and os.geteuid() == 0:
        os.setgroups(list(plan.worker_groups))
        os.setresgid(plan.worker_gid, plan.worker_gid, plan.worker_gid)
        os.setresuid(plan.worker_uid, plan.worker_uid, plan.worker_uid)
        if os.getresuid() != (plan.worker_uid,) * 3:
            raise OSError("could not drop privileges")
    elif plan.mode == "user-namespaces":
        drop_capabilities()
    if sys.platform.startswith("linux"):
        prctl(PR_SET_NO_NEW_PRIVS, 1)


def _write(path: str, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def kill_descendants(seconds: float = 4.0) -> int:
    """Kill every process below this one and reap it; returns how many were killed.

    Meant for a child subreaper (PR_SET_CHILD_SUBREAPER): whatever the worker started, detached
    with setsid and a double fork or not, is re-parented here when its parent dies. Each round
    kills the whole tree below, not only the children: a fork bomb's grandchildren would
    otherwise fork again into the slots their killed parents freed, round after round. It keeps
    on for `seconds` (the host waits 5 for its report): on a loaded machine 64 killed forks of a
    torch process take a second or more to exit."""
    import signal
    import time

    killed = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pids = descendants(os.getpid())
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except ProcessLookupError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            if not pids:
                return killed
        if not pids and not children(os.getpid()):
            return killed
        time.sleep(0.005)
    return killed


def descendants(pid: int) -> list[int]:
    """The pids of every process below `pid`, parents before their children."""
    found, frontier = [], [pid]
    while frontier:
        frontier = [child for parent in frontier for child in children(parent)]
        found += frontier
    return found


def children(pid: int) -> list[int]:
    """The pids of a process's children, from /proc (the engine reads them too, to add up memory)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    out: list[int] = []
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return out


def protect_from_other_users(paths: list[str]) -> list[str]:
    """Remove the other-permissions of each path (not followed if a link): for a worker that runs
    as a user of its own on the machine's file system (process sandbox as root). Returns the
    paths changed."""
    changed = []
    for path in paths:
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode) or not st.st_mode & 0o007:
            continue
        os.chmod(path, stat.S_IMODE(st.st_mode) & ~0o007)
        changed.append(path)
    return changed


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
