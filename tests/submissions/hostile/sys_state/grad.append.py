

# ---- attack: change the interpreter's state for later calls ------------------------------------------------
# Every call re-imports this module; at import it leaves behind a planted grad.py on sys.path,
# a changed working directory, an import hook and a fake sys.modules entry that would all
# make the next import load wrong code. Honest functions otherwise: the score must be 100.
import importlib.abc
import importlib.util
import os
import sys
import types

_WRONG = "import torch\ndef hvp(f, x, v):\n    return torch.zeros_like(x)\n" \
         "def jacobian_rows(f, x):\n    return torch.zeros(1)\n"


class _Hijack(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name in ("grad", "graph", "inplace"):
            os.makedirs("/tmp/hijack", exist_ok=True)
            with open("/tmp/hijack/hijacked.py", "w") as f:
                f.write(_WRONG)
            return importlib.util.spec_from_file_location(name, "/tmp/hijack/hijacked.py")
        return None


os.makedirs("/tmp/planted", exist_ok=True)
with open("/tmp/planted/grad.py", "w") as _f:
    _f.write(_WRONG)
sys.path.insert(0, "/tmp/planted")
os.chdir("/tmp/planted")
sys.meta_path.insert(0, _Hijack())
sys.path_importer_cache.clear()
_fake = types.ModuleType("torch.autograd")
sys.modules["torch.autograd.functional"] = _fake
