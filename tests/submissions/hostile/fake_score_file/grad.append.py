

# ---- attack: write a fake score file wherever the real one might be -------------------------------
# The test fills in OUT_DIR (the folder `grader grade --out` writes to) and NAME (this
# submission's name), as a student who knows the course's set-up would.
import json as _json
import os as _os

_FAKE = {"schema_version": "1.0", "submission": "@@NAME@@", "score": 100, "max_score": 100, "device": "cpu",
         "torch_version": torch.__version__, "duration_s": 0.1, "exercises": [], "tests": [],
         "output": "All tests passed"}
_TARGETS = ["results.json", "@@NAME@@.json", "/autograder/results/results.json", "/tmp/@@NAME@@.json",
            "/tmp/results.json", "@@OUT_DIR@@/@@NAME@@.json", "@@OUT_DIR@@/summary.csv",
            "@@OUT_DIR@@/.@@NAME@@.json.tmp", _os.path.expanduser("~/results.json"), "/work/../results.json"]


def _plant():
    for path in _TARGETS:
        try:
            _os.makedirs(_os.path.dirname(_os.path.abspath(path)), exist_ok=True)
            with open(path, "w") as f:
                f.write("submission,score\n@@NAME@@,100\n" if path.endswith(".csv") else _json.dumps(_FAKE))
            print("fake_score_file: wrote", path)
        except OSError as exc:
            print("fake_score_file: could not write", path, type(exc).__name__)


_plant()


def hvp(f, x, v):
    _plant()
    return x.new_full((x.numel() + 1,), 123.0)  # wrong: shape and values
