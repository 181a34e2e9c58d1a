"""Times of the in-notebook check in a real kernel (nbclient), beside T = `python -c "import torch"`
measured in the same run: the first check("hvp") (cold: starts the warm check's own process, its
pytest session and zygote) and the next ones (warm), each split into its parts: reading the
kernel's cells into modules (`kernel_modules`) and the warm checker's round trip (`checker().check`).

    python bench/notebook_check_times.py [--warm N]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.notebook_support import exported, with_reference  # noqa: E402

TIMED = """\
import time as _t
from grader import notebook as _nb
_s = _t.perf_counter(); _x = _nb.kernel_modules(); _e = _t.perf_counter() - _s
_s = _t.perf_counter(); _r = check('hvp'); _w = _t.perf_counter() - _s
print('CHECK', round(_w, 3), 'extract', round(_e, 3), _r.passed)"""


def import_torch_seconds() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import torch"], check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm", type=int, default=5, help="warm checks after the cold one")
    args = parser.parse_args()
    t_before = import_torch_seconds()
    nb = with_reference(exported())
    nb["cells"] = [c for c in nb["cells"] if "check" not in c["metadata"].get("tags", []) and "submit" not in c["metadata"].get("tags", [])]
    nb["cells"] += [{"cell_type": "code", "metadata": {}, "source": TIMED, "outputs": [], "execution_count": None,
                     "id": f"timed-{i}"} for i in range(1 + args.warm)]
    nb = nbformat.from_dict(nb)
    NotebookClient(nb, timeout=600, kernel_name="python3").execute()
    t_after = import_torch_seconds()
    T = (t_before + t_after) / 2
    print(f"T (python -c 'import torch'): {t_before:.2f} s before, {t_after:.2f} s after, mean {T:.2f} s")
    walls = []
    for i, cell in enumerate(nb.cells[-(1 + args.warm):]):
        line = "".join(o.get("text", "") for o in cell.outputs).strip()
        wall = float(line.split()[1])
        walls.append(wall)
        print(f"{'cold' if i == 0 else 'warm'}: {line}  ({wall / T:.2f} T)")
    warm = sorted(walls[1:])
    if warm:
        print(f"warm median {warm[len(warm) // 2]:.3f} s = {warm[len(warm) // 2] / T:.2f} T (target <= 0.5 T)")


if __name__ == "__main__":
    main()
