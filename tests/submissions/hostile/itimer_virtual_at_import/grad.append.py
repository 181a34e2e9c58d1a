

# ---- attack: an interval timer armed at import and never cancelled (issue 29) ------------------------
# ITIMER_VIRTUAL delivers SIGVTALRM once the worker has used 50 ms of CPU, in a later call: its default
# action ends the process where no PID namespace ignores it (the process sandbox). The worker cancels
# every timer when the step that armed it ends, and the import is "tampered".
import signal

signal.setitimer(signal.ITIMER_VIRTUAL, 0.05, 0.05)
