"""Run a command as USER on what looks to it like a machine without unprivileged user namespaces.

    python3 .ci/without_user_namespaces.py USER COMMAND [ARG...]

Run as root. The command runs in a user namespace of its own that maps every user and group id
to itself (files, users and processes look as they are), whose user.max_user_namespaces is 0,
as USER with no capabilities. To the grader that is a kernel refusing user namespaces to
unprivileged users (what `sysctl user.max_user_namespaces=0` does for the whole machine, or a
container that denies unshare), so it falls back to the process sandbox; the machine's own
setting is left alone. Exits with the command's status.
"""

from __future__ import annotations

import ctypes
import os
import pwd
import sys

CLONE_NEWUSER = 0x10000000
EVERY_ID = "0 0 4294967295"


def main(user: str, command: list[str]) -> int:
    account = pwd.getpwnam(user)
    unshared_r, unshared_w = os.pipe()
    mapped_r, mapped_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            if ctypes.CDLL(None, use_errno=True).unshare(CLONE_NEWUSER) != 0:
                raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWUSER)")
            os.write(unshared_w, b"1")
            if os.read(mapped_r, 1) != b"1":
                raise RuntimeError("the id maps were not written")
            with open("/proc/sys/user/max_user_namespaces", "w") as f:  # this namespace's own limit
                f.write("0")
            os.setgroups([])
            os.setgid(account.pw_gid)
            os.setuid(account.pw_uid)  # leaving uid 0 clears every capability
            os.environ.update(HOME=account.pw_dir, USER=user, LOGNAME=user)
            os.execvp(command[0], command)
        except BaseException as exc:  # noqa: BLE001 (report, then end the child whatever happened)
            print(f"without_user_namespaces: {exc}", file=sys.stderr)
        os._exit(127)
    ok = os.read(unshared_r, 1) == b"1"
    if ok:
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{pid}/{name}", "w") as f:
                f.write(EVERY_ID)
    os.write(mapped_w, b"1" if ok else b"0")
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    if len(sys.argv) < 3 or os.geteuid() != 0:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2:]))
