"""Times of the in-notebook check in a real kernel (nbclient): the first check("hvp") (cold: starts
the warm check's own process, its pytest session and zygote) and the next ones (warm)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.notebook_support import exported, with_reference  # noqa: E402

TIMED = ("import time as _t\n_s = _t.perf_counter(); _r = check('hvp'); "
         "print('CHECK', round(_t.perf_counter() - _s, 3), _r.passed)")


def main() -> None:
    nb = with_reference(exported())
    nb["cells"] = [c for c in nb["cells"] if "check" not in c["metadata"].get("tags", []) and "submit" not in c["metadata"].get("tags", [])]
    nb["cells"] += [{"cell_type": "code", "metadata": {}, "source": TIMED, "outputs": [], "execution_count": None,
                     "id": f"timed-{i}"} for i in range(4)]
    nb = nbformat.from_dict(nb)
    NotebookClient(nb, timeout=600, kernel_name="python3").execute()
    for cell in nb.cells[-4:]:
        print("".join(o.get("text", "") for o in cell.outputs).strip())


if __name__ == "__main__":
    main()
