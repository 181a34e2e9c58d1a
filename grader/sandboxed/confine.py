"""Confinement without namespaces or privileges: Landlock and a seccomp filter.

A worker in the process sandbox (no root and no user namespaces, or a container that denies
`unshare`) shares the machine's file system, network and process table with the grader, and,
for an instructor who is not root, the grader's user id. The zygote calls `confine` in such a
worker right after `isolation.enter` (no_new_privs is set by then), which asks the kernel for
what it gives to any user:

* Landlock file rules (Linux 5.13+): read only beneath the paths a namespaced worker would see
  (the system and Python directories, the grader's public modules, /proc, a few devices), with
  the secret paths carved out; read and write only in the worker's own folder. Landlock also
  keeps it from reading other processes' memory or environment (/proc/PID/environ, ptrace).
* Landlock scoping (Linux 6.12+): signals and abstract Unix sockets reach only processes in
  its own domain, that is itself and what it starts: not the grader, not its parent.
* Landlock TCP rules (Linux 6.7+) and a seccomp filter (any Linux): no socket but Unix ones
  (and no io_uring, which could make sockets without socket()): no network, TCP or UDP.

`available()` says which of these this kernel has (the zygote records it in the plan, the score
file says so); `confine()` applies what the plan names, or raises.
"""

from __future__ import annotations

import ctypes
import os
import platform

from grader.protocol.limits import SandboxPlan
from grader.sandboxed.isolation import _check, libc

# What `available()` and `SandboxPlan.confined` name.
FILES, SIGNALS, NETWORK = "files", "signals", "network"

# ----------------------------------------------------------------------------- Landlock (linux/landlock.h)

_LANDLOCK_SYSCALLS = (444, 445, 446)  # create_ruleset, add_rule, restrict_self: the same on every architecture
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}  # + REFER, TRUNCATE, IOCTL_DEV
TRUNCATE, IOCTL_DEV = 1 << 14, 1 << 15
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # the only ones a rule on a file may hold

DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _syscall(*args) -> int:
    return libc().syscall(*args)


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 where there is none (or it is disabled)."""
    if not os.uname().sysname == "Linux":
        return 0
    result = _syscall(ctypes.c_long(_LANDLOCK_SYSCALLS[0]), None, ctypes.c_size_t(0),
                      ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(result, 0)


# ----------------------------------------------------------------------------- seccomp (linux/seccomp.h, filter.h)

PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_EACCES, _EPERM, _ENOSYS = 13, 1, 38
# architecture: (AUDIT_ARCH_*, socket, io_uring_setup, first number of another ABI or None)
_SECCOMP_ARCH = {"x86_64": (0xC000003E, 41, 425, 0x40000000), "aarch64": (0xC00000B7, 198, 425, None)}
AF_UNIX = 1


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def _socket_filter(arch: str) -> list[tuple[int, int, int, int]]:
    """A BPF program: socket() of any family but AF_UNIX fails with EACCES, io_uring_setup with
    EPERM, system calls of another ABI (i386 through int 0x80, x32) with ENOSYS; all else runs."""
    audit_arch, socket_nr, io_uring_nr, other_abi = _SECCOMP_ARCH[arch]
    program = [
        (_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        (_JEQ_K, 1, 0, audit_arch),
        (_RET_K, 0, 0, _RET_ERRNO | _ENOSYS),
        (_LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
    ]
    if other_abi is not None:
        program += [(_JGE_K, 0, 1, other_abi), (_RET_K, 0, 0, _RET_ERRNO | _ENOSYS)]
    program += [
        (_JEQ_K, 0, 1, io_uring_nr),
        (_RET_K, 0, 0, _RET_ERRNO | _EPERM),
        (_JEQ_K, 1, 0, socket_nr),
        (_RET_K, 0, 0, _RET_ALLOW),
        (_LD_W_ABS, 0, 0, 16),  # the low half of seccomp_data.args[0]: the address family
        (_JEQ_K, 0, 1, AF_UNIX),
        (_RET_K, 0, 0, _RET_ALLOW),
        (_RET_K, 0, 0, _RET_ERRNO | _EACCES),
    ]
    return program


def _install_socket_filter() -> None:
    program = _socket_filter(platform.machine())
    filters = (_SockFilter * len(program))(*[_SockFilter(*ins) for ins in program])
    fprog = _SockFprog(len(program), filters)
    _check(libc().prctl(PR_SET_SECCOMP, ctypes.c_ulong(SECCOMP_MODE_FILTER), ctypes.byref(fprog), 0, 0),
           "seccomp filter")


# ----------------------------------------------------------------------------- what this kernel offers, and applying it

def available() -> list[str]:
    """What this kernel can confine a worker by without privileges: FILES, SIGNALS, NETWORK."""
    if not os.uname().sysname == "Linux" or platform.machine() not in _SECCOMP_ARCH:
        return []
    abi = landlock_abi()
    return [name for name, ok in ((FILES, abi >= 1), (SIGNALS, abi >= 6), (NETWORK, True)) if ok]


_readable: list[tuple[str, int]] | None = None  # prepare()'s rules, inherited by every forked worker


def prepare(plan: SandboxPlan) -> None:
    """In the zygote, as the grader's user: find what workers may read, once (a worker, under
    another user id, might not be allowed to list the folders around the secrets)."""
    global _readable
    _readable = readable(plan)


def confine(plan: SandboxPlan, workdir: str) -> None:
    """Confine the current process (the worker, no_new_privs already set) as `plan.confined` says."""
    if FILES in plan.confined or SIGNALS in plan.confined:
        _restrict_landlock(plan, workdir)
    if NETWORK in plan.confined:
        _install_socket_filter()


def _restrict_landlock(plan: SandboxPlan, workdir: str) -> None:
    abi = landlock_abi()
    handled_fs = _FS_BY_ABI[max(v for v in _FS_BY_ABI if v <= abi)] if FILES in plan.confined else 0
    attr = _RulesetAttr(handled_fs, (_NET_BIND_TCP | _NET_CONNECT_TCP) if abi >= 4 else 0,
                        (_SCOPE_SIGNAL | _SCOPE_ABSTRACT_UNIX_SOCKET) if SIGNALS in plan.confined else 0)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = _check(_syscall(ctypes.c_long(_LANDLOCK_SYSCALLS[0]), ctypes.byref(attr), ctypes.c_size_t(size),
                              ctypes.c_uint32(0)), "landlock_create_ruleset")
    try:
        if handled_fs:
            for path, rights in (_readable if _readable is not None else readable(plan)):
                _allow(ruleset, path, rights & handled_fs)
            _allow(ruleset, os.path.realpath(workdir), handled_fs)  # every right, in its own folder
        _check(_syscall(ctypes.c_long(_LANDLOCK_SYSCALLS[2]), ctypes.c_int(ruleset), ctypes.c_uint32(0)),
               "landlock_restrict_self")
    finally:
        os.close(ruleset)


def readable(plan: SandboxPlan) -> list[tuple[str, int]]:
    """(path, access) pairs: what the worker may read, and the devices it may write, with the
    secret paths left out."""
    read = READ_FILE | READ_DIR | EXECUTE
    hidden = [os.path.realpath(p) for p in plan.hidden_paths]
    granted = [(p, read) for path in plan.readonly_paths + ["/proc"] for p in _around(os.path.realpath(path), hidden)]
    devices = list(DEVICES)
    if plan.device.startswith("cuda"):
        devices += [f"/dev/{n}" for n in sorted(os.listdir("/dev")) if n.startswith("nvidia")]
    granted += [(d, READ_FILE | WRITE_FILE | TRUNCATE | IOCTL_DEV) for d in devices if os.path.exists(d)]
    return granted


def _around(path: str, hidden: list[str]) -> list[str]:
    """`path`, or, where a secret lies beneath it, the entries beside the secret, recursively
    (a link among them only if it leads to somewhere beneath `path`: Landlock follows links)."""
    inside = [h for h in hidden if _beneath(h, path)]
    if not inside:
        return [path] if os.path.exists(path) else []
    if path in inside or not os.path.isdir(path):
        return []
    found: list[str] = []
    for entry in sorted(os.listdir(path)):
        real = os.path.realpath(os.path.join(path, entry))
        if _beneath(real, path) and real != path:
            found += _around(real, inside)
    return found


def _beneath(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _allow(ruleset: int, path: str, rights: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        if not os.path.isdir(path):
            rights &= _FILE_RIGHTS
        beneath = _PathBeneathAttr(rights, fd)
        _check(_syscall(ctypes.c_long(_LANDLOCK_SYSCALLS[1]), ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                        ctypes.byref(beneath), ctypes.c_uint32(0)), f"landlock_add_rule {path}")
    finally:
        os.close(fd)
