

# ---- attack: ignore the signals a grader might use to stop the worker, then hang ------------------------
import signal

for _sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGALRM, signal.SIGUSR1, signal.SIGUSR2,
             signal.SIGXCPU, signal.SIGQUIT):
    signal.signal(_sig, signal.SIG_IGN)


def hvp(f, x, v):
    signal.alarm(1)
    while True:
        pass
