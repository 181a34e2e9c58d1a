

# ---- attack: fork while being imported and let both copies answer --------------------------------------------
# The child is a copy of the worker in the middle of a request: it returns from the import and
# goes on serving the same connection, so two processes answer and replies get out of step.
# It lives 5 s at most. Honest code otherwise: the score must be 100.
import os as _os
import threading as _threading

if _os.fork() == 0:
    _threading.Timer(5, _os._exit, args=(0,)).start()
