"""A grading run's lifetime on the trusted side: what it holds, and how it ends.

* The score folder (`claim_out`): refused when it is a file or cannot be written, before
  anything is graded; locked for the run, so that a second `grader grade` on the same folder
  stops at once and is told who holds it (the run then clears what a killed run was writing:
  `results.remove_temporaries`). The lock is a `flock` on the folder itself: the kernel drops
  it when the run dies, however it dies, and it leaves no file behind.
* Signals in the grading process (`stop_on_signals`): SIGINT, SIGTERM and SIGHUP raise
  `Interrupted`, held back while a score file is being written (`writing`), so that a run stops
  between two files, never in the middle of one.
* Pool processes (`become_pool_process`): each runs in a session of its own, so the terminal's
  Ctrl-C reaches the grading process only (which stops the pool itself, and drops what was in
  flight); SIGTERM closes its engine and exits; and a thread waits on the pipe that
  multiprocessing keeps open from the parent, whose end closes when the parent dies, even by
  SIGKILL. Unlike PR_SET_PDEATHSIG, which fires when the *thread* that started the process
  exits, the pipe follows the parent process. `signals_held` keeps the stop signals blocked
  while the pool starts a process, so none arrives before it can handle them.

The pool process's engine owns its zygote through a socket; the zygote ends every worker and
removes its sandbox folder when that socket closes (`grader.sandboxed.zygote`), so closing or
losing an engine ends everything below it.
"""

from __future__ import annotations

import errno
import fcntl
import os
import signal
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from grader.errors import GraderError

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(KeyboardInterrupt):
    """SIGINT, SIGTERM or SIGHUP reached the grading process: the run stops, keeping what is written."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


# ----------------------------------------------------------------------------- the score folder

class OutLock:
    """The run's exclusive hold on its score folder, released by `release()` or by the process's end."""

    def __init__(self, fd: int | None, warning: str = ""):
        self.fd = fd
        self.warning = warning

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def claim_out(out_dir: Path) -> OutLock:
    """Make the score folder ready for this run, or raise GraderError saying why nothing was graded."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise GraderError(f"--out {out_dir} is a file, not a folder: nothing was graded or written. "
                          "Give a folder for the score files (it is made if it does not exist).")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _unwritable(out_dir, exc) from None
    lock = _lock(out_dir)
    try:
        _check_writable(out_dir)
    except BaseException:
        lock.release()
        raise
    return lock


def _lock(out_dir: Path) -> OutLock:
    fd = os.open(out_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        holder = lock_holder(out_dir)
        raise GraderError(f"--out {out_dir} is in use by another grader grade{holder}: two runs must not write "
                          "the same score files. Nothing was graded or written by this run. Wait for that run to "
                          "end (or stop it), then rerun with --resume to keep its score files; or choose another "
                          "--out.") from None
    except OSError as exc:  # a file system without flock: grade, but say that nothing guards the folder
        os.close(fd)
        return OutLock(None, f"warning: cannot lock --out {out_dir} ({exc.strerror}): do not start another "
                             "grader grade on it until this one ends")
    return OutLock(fd)


def lock_holder(folder: Path) -> str:
    """' (pid N: its command line)' for the process that holds the folder's lock, from /proc/locks; '' if unknown."""
    st = os.stat(folder)
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks") as f:
            lines = f.read().splitlines()
    except OSError:
        return ""
    for line in lines:
        fields = line.split()
        if "FLOCK" in fields and key in fields:
            pid = fields[fields.index(key) - 1]
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
            except OSError:
                return f" (pid {pid})"
            command = " ".join([os.path.basename(argv[0])] + argv[1:])[:200] if argv else ""
            return f" (pid {pid}: {command})" if command else f" (pid {pid})"
    return ""


def _check_writable(out_dir: Path) -> None:
    try:
        fd, probe = tempfile.mkstemp(prefix=".grader-probe.", suffix=".tmp", dir=out_dir)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise _unwritable(out_dir, exc) from None


def _unwritable(out_dir: Path, exc: OSError) -> GraderError:
    what, remedy = write_error(exc)
    return GraderError(f"cannot write in --out {out_dir} ({what}): nothing was graded or written. To go on: "
                       + (f"{remedy}, or choose another --out." if remedy else "choose another --out."))


WRITE_ERRORS = {  # errno -> (what happened, what to do), in the words of the person running the grader
    errno.ENOSPC: ("no space left on the device that holds it", "free some space on that device"),
    errno.EDQUOT: ("disk quota exceeded", "free some space within your quota"),
    errno.EROFS: ("the file system is read-only", "mount it writable"),
    errno.EACCES: ("permission denied", "make the folder writable for you"),
    errno.EPERM: ("operation not permitted", "make the folder writable for you"),
}


def write_error(exc: OSError) -> tuple[str, str]:
    """(what happened, what to do) for a file the run could not write."""
    return WRITE_ERRORS.get(exc.errno, (exc.strerror or str(exc), ""))


# ----------------------------------------------------------------------------- the grading process

_received: int | None = None  # the stop signal that arrived; later ones change nothing: the run is ending
_pending: int | None = None  # one that arrived while a score file was being written
_writing = 0  # > 0 while a score file is being written


def _on_stop_signal(signum, frame) -> None:
    global _received, _pending
    if _received is not None:
        return
    _received = signum
    if _writing:
        _pending = signum
    else:
        raise Interrupted(signum)


def received() -> int | None:
    return _received


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP raise `Interrupted` in this (main) thread while the block runs;
    a signal this process was started ignoring (`nohup`, a background job) stays ignored."""
    global _received, _pending
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _received = _pending = None
    previous = {s: signal.signal(s, _on_stop_signal) for s in STOP_SIGNALS if signal.getsignal(s) != signal.SIG_IGN}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


@contextmanager
def writing() -> Iterator[None]:
    """A stop signal that arrives inside the block takes effect at its end: a file is written whole."""
    global _writing, _pending
    _writing += 1
    try:
        yield
    finally:
        _writing -= 1
    if not _writing and _pending is not None:
        signum, _pending = _pending, None
        raise Interrupted(signum)


@contextmanager
def signals_held() -> Iterator[None]:
    """Block the stop signals in this thread while the block starts pool processes: a process starts
    with the mask it was forked with, and `become_pool_process` unblocks them once it handles them.
    A signal that arrives meanwhile is delivered here at the end of the block."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    from multiprocessing import resource_tracker

    resource_tracker.ensure_running()  # when it starts, it unblocks SIGINT and SIGTERM: start it first
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


# ----------------------------------------------------------------------------- pool processes

_ending = threading.Lock()


def become_pool_process(close: Callable[[], None]) -> None:
    """Run first in a pool process: a session of its own, SIGTERM and the parent's death end it
    after `close()` (which closes its engine, and so its zygote and workers)."""
    try:
        os.setsid()
    except OSError:
        pass  # already a session leader
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the grading process decides; a pending Ctrl-C is dropped
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda signum, frame: _end(close, 0))
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    import multiprocessing

    parent = multiprocessing.parent_process()
    if parent is not None and parent.sentinel is not None:
        threading.Thread(target=_end_with_parent, args=(parent.sentinel, close), name="end-with-parent",
                         daemon=True).start()


def _end_with_parent(sentinel: int, close: Callable[[], None]) -> None:
    from multiprocessing.connection import wait

    wait([sentinel])  # readable (end of file) once the grading process is gone
    _end(close, 1)


def _end(close: Callable[[], None], code: int) -> None:
    if not _ending.acquire(blocking=False):
        return  # already ending, in another thread
    try:
        close()
    finally:
        os._exit(code)
