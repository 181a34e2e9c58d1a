

# ---- attack: kill or stop every process in sight ---------------------------------------------------------------
# The parent, the process group, every pid in /proc, and kill(-1): the grading run must survive,
# grade the other modules and the next submission. (It may well kill its own worker.)
import os
import signal

for _target in (os.getppid(), 1):
    for _sig in (signal.SIGSTOP, signal.SIGKILL):
        try:
            os.kill(_target, _sig)
        except OSError:
            pass
for _pid in [int(p) for p in os.listdir("/proc") if p.isdigit()]:
    if _pid != os.getpid():
        try:
            os.kill(_pid, signal.SIGKILL)
        except OSError:
            pass
try:
    os.kill(-1, signal.SIGKILL)
except OSError:
    pass
