"""Notebooks: the exported problem set, checks in a real kernel, and .ipynb hand-ins graded like .py ones."""

from __future__ import annotations

import ast
import copy
import json
import os
import shutil
import time
from pathlib import Path

import nbformat
import pytest

from grader import catalog, score_files
from grader.exports.notebook import build_notebook, notebook_text
from grader.host import cells, intake
from grader.host.runner import Options, grade_many
from tests.notebook_support import ROOT, code, colab_copy, exported, with_reference, write


def test_the_notebook_is_made_from_the_stubs_and_keeps_in_step():
    nb = exported()
    nbformat.validate(nbformat.from_dict(nb))
    course = catalog.load()
    assert nb["metadata"][cells.METADATA_KEY]["course"] == course.name
    assert nb["metadata"][cells.METADATA_KEY]["version"] == course.version != ""
    assert notebook_text(course) == notebook_text(course)  # the same course gives the same bytes
    by_id = {c["id"]: c for c in nb["cells"]}
    for e in course.exercises:
        stub = (ROOT / "exercises" / e.module).read_text(encoding="utf-8")
        node = next(n for n in ast.parse(stub).body if getattr(n, "name", None) == e.name)
        cell = by_id[f"exercise-{e.name}"]
        assert cell["source"].splitlines()[0] == f"# exercise: {e.name}"
        assert cell["metadata"]["tags"] == [f"exercise:{e.name}"]
        assert ast.dump(ast.parse(cell["source"]).body[0]) == ast.dump(node)  # the stub itself, as it is now
        assert by_id[f"check-{e.name}"]["source"] == f'check("{e.name}")'


def test_a_colab_copy_and_the_reference_notebook_give_the_reference_modules():
    reference = with_reference(exported())
    for nb, found_by in ((reference, "marker"), (colab_copy(reference), "order")):
        extracted = cells.extract(cells.read_notebook(json.dumps(nb).encode())[0], catalog.load())
        assert sorted(extracted.modules) == sorted(catalog.load().modules), extracted.problems
        assert {o["found_by"] for o in extracted.origins.values()} == {found_by}
        assert not any("os.system" in s.decode() or "pip" in s.decode() for s in extracted.modules.values())


def test_duplicated_and_redefined_exercises_take_the_last_definition_and_name_its_cell():
    nb = with_reference(exported())
    later = code("# exercise: hvp\ndef hvp(f, x, v):\n    return x * 0\n")
    nb["cells"].append(later)
    extracted = cells.extract(cells.read_notebook(json.dumps(nb).encode())[0], catalog.load())
    assert extracted.origins["hvp"]["cell"] == len(nb["cells"])
    assert extracted.modules["grad.py"].decode().rstrip().endswith("return x * 0")


def test_a_deleted_stub_cell_costs_its_exercise_only_with_a_message():
    nb = with_reference(exported())
    nb["cells"] = [c for c in nb["cells"] if c.get("id") != "exercise-hvp"]
    extracted = cells.extract(cells.read_notebook(json.dumps(nb).encode())[0], catalog.load())
    assert "hvp" not in extracted.origins and "partial_grads" in extracted.origins
    assert any("no cell defines hvp" in p for p in extracted.problems)


def test_each_line_of_a_made_module_leads_back_to_its_cell_and_line():
    """A traceback's line in a module made from cells is the line of the cell that wrote it: in a
    function, in a docstring, in a guarded assignment; the header and the gathered imports have none."""
    from grader.notebook import in_cells

    sources = ["import torch\n",
               '# exercise: hvp\n\n\ndef hvp(f, x, v):\n    """Doc.\n\n    More.\n    """\n'
               "    x_ = x.detach()\n    # a comment the module loses\n    return (x_ *\n            v)\n",
               "# module: grad.py\nSCALE = 1 / 0\n\nLIMIT = 3\n"]
    extracted = cells.extract([cells.Cell(index=i, source=s) for i, s in enumerate(sources, start=4)], catalog.load())
    module = extracted.modules["grad.py"].decode().splitlines()
    line = {text.strip(): n for n, text in enumerate(module, start=1)}
    assert extracted.cell_line("grad.py", line["def hvp(f, x, v):"]) == (5, 4)
    assert extracted.cell_line("grad.py", line["x_ = x.detach()"]) == (5, 9)
    assert extracted.cell_line("grad.py", line["More."]) == (5, 7)  # inside the docstring: counted from its start
    assert extracted.cell_line("grad.py", line["return x_ * v"]) == (5, 11)
    assert extracted.cell_line("grad.py", line["SCALE = 1 / 0"]) == (6, 2)  # inside its try
    assert extracted.cell_line("grad.py", line["LIMIT = 3"]) == (6, 4)
    assert extracted.cell_line("grad.py", 1) is None and extracted.cell_line("grad.py", line["import torch"]) is None
    message = (f'Traceback:\n  File "exercises/grad.py", line {line["x_ = x.detach()"]}\n    x_ = x.detach()\n'
               f'  File "exercises/grad.py", line 1\n  File "exercises/nowhere.py", line 3')
    assert in_cells(message, extracted) == ('Traceback:\n  Cell In[5], line 9\n    x_ = x.detach()\n'
                                            '  File "exercises/grad.py", line 1\n  File "exercises/nowhere.py", line 3')
    example = "the docstring example (exercises/grad.py, line 119) raised / 文档字符串示例（exercises/grad.py, line 119）抛出了异常"
    assert in_cells(example, extracted, "hvp") == "the docstring example (Cell In[5]) raised / 文档字符串示例（Cell In[5]）抛出了异常"
    assert in_cells(example, extracted, "partial_grads") == example  # no cell of it: said as it was


def test_broken_files_get_a_clear_message(tmp_path):
    text = json.dumps(with_reference(exported()))
    truncated = intake.load(write_text(tmp_path / "truncated.ipynb", text[: len(text) // 2]))
    assert not truncated.files and any("malformed or truncated" in p for p in truncated.problems)
    other = json.loads(text)
    other["metadata"][cells.METADATA_KEY]["course"] = "another-course"
    wrong = intake.load(write(other, tmp_path / "wrong.ipynb"))
    assert not wrong.files and wrong.wrong_assignment and "another assignment" in wrong.wrong_assignment
    assert "另一份作业" in wrong.wrong_assignment and not any("is missing" in p for p in wrong.problems)
    old_version = json.loads(text)
    old_version["metadata"][cells.METADATA_KEY]["version"] = "2019.2"
    wrong = intake.load(write(old_version, tmp_path / "old_version.ipynb"))
    assert not wrong.files and "version '2019.2'" in wrong.wrong_assignment and "第 '2019.2' 版" in wrong.wrong_assignment
    unversioned = json.loads(text)
    del unversioned["metadata"][cells.METADATA_KEY]["version"]  # written before versions were recorded
    assert sorted(intake.load(write(unversioned, tmp_path / "unversioned.ipynb")).files) == sorted(catalog.load().modules)
    broken_cell = json.loads(text)
    broken_cell["cells"].append(code("def hvp(:\n"))
    sub = intake.load(write(broken_cell, tmp_path / "syntax.ipynb"))
    assert "grad.py" in sub.files and any("does not parse" in p for p in sub.problems)


def test_old_formats_huge_outputs_and_ten_thousand_cells_are_read_within_bounds(tmp_path):
    nb = with_reference(exported())
    v40 = copy.deepcopy(nb)
    v40["nbformat_minor"] = 0
    for c in v40["cells"]:
        c.pop("id")
    assert sorted(intake.load(write(v40, tmp_path / "v40.ipynb")).files) == sorted(catalog.load().modules)
    huge = copy.deepcopy(nb)
    huge["cells"][1]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "x" * (20 * 2**20)}]
    assert len(intake.load(write(huge, tmp_path / "huge.ipynb")).files) == len(catalog.load().modules)
    many = copy.deepcopy(nb)
    many["cells"] += [code(f"y{i} = {i}\nprint(y{i})") for i in range(10_000)]
    start = time.perf_counter()
    sub = intake.load(write(many, tmp_path / "many.ipynb"))
    took = time.perf_counter() - start
    assert len(sub.files) == len(catalog.load().modules) and took < 60, took


def write_text(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_every_nbformat_4_minor_is_read_alike():
    nb = with_reference(exported())
    read = {}
    for minor in range(6):
        old = copy.deepcopy(nb)
        old["nbformat_minor"] = minor
        for c in old["cells"] if minor < 5 else ():
            c.pop("id")  # cell ids came with 4.5
        nbformat.validate(nbformat.from_dict(old))
        cells_read, _, problems = cells.read_notebook(json.dumps(old).encode())
        assert not problems, (minor, problems)
        read[minor] = cells.extract(cells_read, catalog.load()).modules
    assert sorted(read[0]) == sorted(catalog.load().modules)
    assert all(modules == read[5] for modules in read.values())


def reordered(nb: dict) -> dict:
    """Every code cell in the reverse order (helpers after their callers, imports last)."""
    nb = copy.deepcopy(nb)
    nb["cells"] = [c for c in nb["cells"] if c["cell_type"] != "code"] + [c for c in reversed(nb["cells"]) if c["cell_type"] == "code"]
    return nb


def without_cell(nb: dict, cell_id: str) -> dict:
    nb = copy.deepcopy(nb)
    nb["cells"] = [c for c in nb["cells"] if c.get("id") != cell_id]
    return nb


def test_notebook_hand_ins_score_exactly_like_the_reference_modules(tmp_path):
    """The reference as a notebook, as a Colab copy, reordered, with a stub cell deleted, and a
    truncated file, graded in one class with the .py reference: each gets its right score or, for the
    truncated one, a message, and nothing of the others is lost."""
    reference = with_reference(exported())
    truncated = json.dumps(reference)
    (tmp_path / "truncated.ipynb").write_text(truncated[: len(truncated) // 3], encoding="utf-8")
    other_term = copy.deepcopy(reference)
    other_term["metadata"][cells.METADATA_KEY]["version"] = "2019.2"
    paths = [str(write(reference, tmp_path / "reference.ipynb")), str(write(colab_copy(reference), tmp_path / "colab.ipynb")),
             str(write(reordered(reference), tmp_path / "reordered.ipynb")),
             str(write(without_cell(reference, "exercise-hvp"), tmp_path / "no_hvp.ipynb")), str(tmp_path / "truncated.ipynb"),
             str(write(other_term, tmp_path / "other_term.ipynb")),
             str(write(exported(), tmp_path / "stubs.ipynb")), str(ROOT / "solutions")]
    grade_many(paths, tmp_path / "out", Options(device="cpu", folders=("public", "hidden")), workers=1)
    names = ("reference", "colab", "reordered", "no_hvp", "truncated", "other_term", "stubs", "solutions")
    scores = {p: json.loads((tmp_path / "out" / f"{p}.json").read_text()) for p in names}
    per_exercise = {p: {e["name"]: e["score"] for e in r["exercises"]} for p, r in scores.items()}
    assert per_exercise["reference"] == per_exercise["colab"] == per_exercise["reordered"] == per_exercise["solutions"]
    assert per_exercise["no_hvp"] == {**per_exercise["solutions"], "hvp": 0}
    assert any("no cell defines hvp" in p for p in scores["no_hvp"]["submission_errors"])
    assert scores["truncated"]["score"] == 0
    assert any("malformed or truncated" in p for p in scores["truncated"]["submission_errors"])
    # The notebook of another term: its own message first, nothing of it run, and ungradable: its 0 is
    # no grade (exports skip it, the submission limit does not count it)
    assert "not graded" in scores["other_term"]["submission_errors"][0] and scores["other_term"]["score"] == 0
    assert score_files.is_ungradable(scores["other_term"]) and "version '2019.2'" in score_files.ungradable_reason(scores["other_term"])
    assert not any(score_files.is_ungradable(scores[n]) for n in names if n != "other_term")
    assert scores["reference"]["score"] == scores["reference"]["max_score"]
    assert scores["stubs"]["score"] == 0
    hvp = next(e for e in scores["reference"]["exercises"] if e["name"] == "hvp")
    assert hvp["cell"] == {"cell": next(i for i, c in enumerate(reference["cells"], 1) if c.get("id") == "exercise-hvp"),
                           "id": "exercise-hvp", "found_by": "marker"}
    assert not Path("/tmp/notebook-pwned").exists()  # the os.system cell ran nowhere


@pytest.mark.slow
def test_the_checks_run_in_a_real_kernel(tmp_path):
    """The exported notebook with the reference pasted in: every check cell passes, but hvp's, whose
    cell raises and whose check names that cell and line; as shipped: fails."""
    from nbclient import NotebookClient

    stubs = exported()
    stubs["cells"] = [c for c in stubs["cells"] if not c["id"].startswith("check-") or c["id"] == "check-all"]
    reference = with_reference(exported())
    hvp_cell = next(c for c in reference["cells"] if c["id"] == "exercise-hvp")
    hvp_cell["source"] = "# exercise: hvp\ndef hvp(f, x, v):\n    x_ = _unit(x)  # a helper never defined\n"
    for nb, expect in ((reference, "PASS 通过"), (stubs, "FAIL 未通过")):
        nb = nbformat.from_dict(nb)
        NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
        checked = [c for c in nb.cells if c.cell_type == "code" and "check" in c.metadata.get("tags", [])]
        if expect == "PASS 通过":
            ran = next(c for c in nb.cells if c.get("id") == "exercise-hvp").execution_count
            hvp_check = next(c for c in checked if c.get("id") == "check-hvp")
            checked.remove(hvp_check)
            text = "".join(o.get("data", {}).get("text/plain", "") for o in hvp_check.outputs)
            assert "FAIL 未通过" in text and f"Cell In[{ran}], line 3\n" in text and "x_ = _unit(x)" in text, text
            assert f"the docstring example (Cell In[{ran}]) raised" in text and "exercises/" not in text, text
            # checked before the cells of grad.py's later exercises ran: no word about those
            first = next(c for c in checked if c.get("id") == "check-partial_grads")
            assert "no cell defines" not in "".join(o.get("data", {}).get("text/plain", "") for o in first.outputs)
        for cell in checked:
            text = "".join(o.get("data", {}).get("text/plain", "") for o in cell.outputs)
            html = "".join(o.get("data", {}).get("text/html", "") for o in cell.outputs)
            assert expect in text and expect in html, (cell.source, text[:2000])
            if expect == "FAIL 未通过":
                assert "PASS 通过" not in text.split("exercise")[1] and "not started yet" in text, text
    screenshot_the_check_output(nb, tmp_path)


def screenshot_the_check_output(executed, tmp_path: Path) -> None:
    """The stubs' `check()` output as nbconvert renders it, in Chromium. The screenshot is written under
    tmp_path; with AUTOGRAD_LAB_UPDATE_DOCS=1 it also replaces docs/notebook-check.png (a test run leaves
    tracked files alone otherwise)."""
    from nbconvert import HTMLExporter
    from test_report_browser import require_browser

    from browser import chromium

    require_browser()
    shown = copy.deepcopy(executed)
    shown.cells = [c for c in shown.cells if c.get("id") == "check-all"]
    page_file = tmp_path / "check.html"
    page_file.write_text(HTMLExporter().from_notebook_node(shown)[0], encoding="utf-8")
    with chromium(width=1100, height=900) as page:
        page.goto(page_file.as_uri())
        table = page.locator(".autograd-lab-check table")
        assert table.count() == 1 and "FAIL 未通过" in table.inner_text() and "In [" in table.inner_text()
        shot = tmp_path / "notebook-check.png"
        page.screenshot(path=str(shot), clip={"x": 0, "y": 0, "width": 1100, "height": 900})
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    if os.environ.get("AUTOGRAD_LAB_UPDATE_DOCS") == "1":
        shutil.copyfile(shot, ROOT / "docs" / "notebook-check.png")
