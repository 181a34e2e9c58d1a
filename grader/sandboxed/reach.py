"""What a worker running as a user of its own must reach: the interpreter, the venv, the grader package.

As root without namespaces (the process sandbox), a worker runs as a user id of its own on the
machine's file system. A Python, a venv or a checkout inside a folder that user cannot enter (a 0700
home such as /root, a venv under ~/.cache, a clone under `mktemp -d`) would let the worker start
(the zygote imported torch before dropping privileges) and then fail on every module it imports
later: honest code would lose points. So before the first worker, the zygote checks, in a throwaway
child that runs as the worker's user, that every such path can be entered and read
(`unreachable`), and opens what blocks it to the workers' group alone (`open_to_workers`): a POSIX
ACL entry for that group, traverse-only (x) on a folder on the way, read on the path itself. When
that cannot be done (a file system without ACLs), the zygote stops with a message that says what
to change (`explain`); it never grades with imports that fail.

The secrets are not widened: a folder on the way gets traverse only (its listing stays closed), and
the hidden paths keep their other-permissions removed (`isolation.protect_from_other_users`); the
group's entry applies to the paths named here, never to the files beneath them.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import struct

WORKER_GROUP = 60999  # a group id of the workers alone, below their user ids (61000-64999)
ACL_XATTR = "system.posix_acl_access"
ACL_VERSION = 2
USER_OBJ, USER, GROUP_OBJ, GROUP, MASK, OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
UNDEFINED_ID = 0xFFFFFFFF
ENTER, READ = "enter", "read"


def needed_paths(readonly: list[str], executable: str) -> list[str]:
    """The paths the worker reads: its read-only folders and the interpreter (as named and as resolved)."""
    paths = list(readonly) + [executable, os.path.realpath(executable)]
    return list(dict.fromkeys(os.path.abspath(p) for p in paths if os.path.lexists(p)))


def blocks(path: str) -> list[tuple[str, str]]:
    """As the current user: (folder or path, ENTER or READ) that stops it reading `path`; [] if nothing."""
    real = os.path.realpath(path)
    parts = real.strip("/").split("/") if real != "/" else []
    here = "/"
    for part in parts[:-1]:
        here = os.path.join(here, part)
        if not os.access(here, os.X_OK):
            return [(here, ENTER)]
    wanted = os.R_OK | (os.X_OK if os.path.isdir(real) else 0)
    return [] if os.access(real, wanted) else [(real, READ)]


def unreachable(paths: list[str], uid: int, gid: int, groups: list[int]) -> list[tuple[str, str, str]]:
    """(path, what blocks it, ENTER or READ) for each path the user (uid, gid, groups) cannot read,
    found in a throwaway child that runs as that user."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read_fd)
            os.setgroups(groups)
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            found = [(p, *b) for p in paths for b in blocks(p)]
            os.write(write_fd, json.dumps(found).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise OSError(f"could not check what the worker's user (uid {uid}) can read")
    return [tuple(x) for x in json.loads(data)]


def open_to_workers(blocked: list[tuple[str, str, str]], group: int = WORKER_GROUP) -> list[str]:
    """Grant the group what each block needs (x on a folder on the way, r or r-x on the path); returns
    the notes saying what was granted. OSError when the file system refuses ACLs."""
    notes = []
    for where, kind in dict.fromkeys((w, k) for _, w, k in blocked):
        st = os.stat(where)
        perm = 1 if kind == ENTER else (5 if stat.S_ISDIR(st.st_mode) else 4)
        add_group_entry(where, group, perm)
        what = "traverse (x) only" if kind == ENTER else "read"
        notes.append(f"{where} (mode {stat.S_IMODE(st.st_mode):04o}) opened to the workers' group {group} for {what}, "
                     f"by an ACL entry (undo: setfacl -x g:{group} {where})")
    return notes


def read_acl(path: str) -> list[tuple[int, int, int]]:
    """(tag, perm, id) entries of a path's access ACL; the mode's three entries when it has none."""
    try:
        data = os.getxattr(path, ACL_XATTR, follow_symlinks=True)
    except OSError as exc:
        if exc.errno not in (errno.ENODATA, getattr(errno, "ENOATTR", errno.ENODATA)):
            raise
        mode = os.stat(path).st_mode
        return [(USER_OBJ, (mode >> 6) & 7, UNDEFINED_ID), (GROUP_OBJ, (mode >> 3) & 7, UNDEFINED_ID),
                (OTHER, mode & 7, UNDEFINED_ID)]
    (version,) = struct.unpack_from("<I", data)
    if version != ACL_VERSION:
        raise OSError(f"{path}: an ACL of version {version}")
    return [struct.unpack_from("<HHI", data, offset) for offset in range(4, len(data), 8)]


def add_group_entry(path: str, group: int, perm: int) -> None:
    """Add `perm` for `group` to the path's access ACL (the mask widened to let it through)."""
    entries = {(tag, ident): p for tag, p, ident in read_acl(path)}
    entries[(GROUP, group)] = entries.get((GROUP, group), 0) | perm
    group_class = entries.get((MASK, UNDEFINED_ID), entries[(GROUP_OBJ, UNDEFINED_ID)])
    entries[(MASK, UNDEFINED_ID)] = group_class | perm
    data = struct.pack("<I", ACL_VERSION) + b"".join(
        struct.pack("<HHI", tag, p, ident) for (tag, ident), p in sorted(entries.items()))
    os.setxattr(path, ACL_XATTR, data, follow_symlinks=True)


def explain(blocked: list[tuple[str, str, str]], uid: int, why: str) -> str:
    """What the instructor reads when the worker's user cannot be let through: what blocks it, what to do."""
    lines = [f"the sandbox's worker user (uid {uid}, the process sandbox as root) cannot read what it must import "
             f"({why}); grading would fail on imports, so nothing is graded:"]
    for path, where, kind in blocked:
        st = os.stat(where)
        lines.append(f"  {path}: {where} (mode {stat.S_IMODE(st.st_mode):04o}, owner uid {st.st_uid}) "
                     f"{'cannot be entered' if kind == ENTER else 'cannot be read'}")
    folders = " ".join(dict.fromkeys(w for _, w, k in blocked if k == ENTER))
    lines.append("  install Python, the venv and the grader where other users can read them (a venv under /opt or "
                 "/usr/local, a clone outside your home)" + (f", or let them through: chmod o+x {folders}" if folders else ""))
    return "\n".join(lines)
