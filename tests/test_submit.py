"""The submission form: `grader submit` makes one zip that otter, Gradescope and `grader grade` all take,
and a zip grades exactly like the folder it unpacks to (otter and Gradescope grade the unpacked folder)."""

import os
import zipfile

import pytest

from grader.cli import main
from grader.exports.submit import ROOT_FILE, write_submission
from grader.host import intake

from conftest import SOLUTIONS, STUBS, scores


def zip_folder(folder, out):
    with zipfile.ZipFile(out, "w") as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(folder).as_posix())
    return out


def write_modules(folder, where):
    """The course's modules, each at the place `where(module)` names inside `folder`."""
    for module in intake.module_files():
        path = folder / where(module) / module
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {module}\n")
    return folder


@pytest.mark.parametrize("layout", {
    "root": lambda m: "",
    "exercises": lambda m: "exercises",
    "mixed": lambda m: "" if m == "graph.py" else "exercises",
    "top folder": lambda m: "mywork/exercises",
    "root file beside a top folder": lambda m: "mywork",
}.items(), ids=lambda item: item[0])
def test_a_zip_and_its_unpacked_folder_hold_the_same_modules(tmp_path, layout):
    name, where = layout
    folder = write_modules(tmp_path / "sub", where)
    (folder / ROOT_FILE).write_text("EXERCISES = 'elsewhere'\n")
    from_folder = intake.load(folder)
    from_zip = intake.load(zip_folder(folder, tmp_path / "sub.zip"))
    assert sorted(from_folder.files) == sorted(intake.module_files())
    assert from_folder.files == from_zip.files
    assert from_folder.sha256 == from_zip.sha256
    assert from_folder.problems == from_zip.problems == []


def test_a_module_under_a_symlinked_folder_is_refused(tmp_path):
    real = write_modules(tmp_path / "elsewhere", lambda m: "")
    folder = tmp_path / "sub"
    folder.mkdir()
    os.symlink(real, folder / "exercises")
    sub = intake.load(folder)
    assert sub.files == {}
    assert any("symbolic link" in p for p in sub.problems)


def test_a_zip_without_unix_file_types_is_read(tmp_path):
    """Python's ZipFile.writestr and many Windows tools record no file type: such members are plain files."""
    out = tmp_path / "plain.zip"
    with zipfile.ZipFile(out, "w") as zf:
        for module in intake.module_files():
            zf.writestr(f"exercises/{module}", f"# {module}\n")
    sub = intake.load(out)
    assert sorted(sub.files) == sorted(intake.module_files()) and sub.problems == []


def test_submit_writes_the_modules_and_the_root_file(tmp_path, capsys):
    out = tmp_path / "submission.zip"
    assert main(["submit", str(SOLUTIONS), "--out", str(out)]) == 0
    with zipfile.ZipFile(out) as zf:
        names = zf.namelist()
        assert sorted(names) == sorted([ROOT_FILE] + [f"exercises/{m}" for m in intake.module_files()])
        for module in intake.module_files():
            assert zf.read(f"exercises/{module}") == (SOLUTIONS / module).read_bytes()
    # otter resolves exactly one .py at the root of the unpacked zip
    assert [n for n in names if "/" not in n and n.endswith(".py")] == [ROOT_FILE]
    first = out.read_bytes()
    assert main(["submit", str(SOLUTIONS), "--out", str(out)]) == 0
    assert out.read_bytes() == first, "the same modules make the same zip"
    assert "Hand in this one file" in capsys.readouterr().out


def test_submit_refuses_a_folder_without_modules(tmp_path, capsys):
    assert main(["submit", str(tmp_path), "--out", str(tmp_path / "s.zip")]) == 2
    assert main(["submit", str(tmp_path / "missing"), "--out", str(tmp_path / "s.zip")]) == 2
    assert not (tmp_path / "s.zip").exists()


def test_the_submitted_zip_grades_like_the_folder_and_its_root_file_never_counts(engine, tmp_path):
    modules = {m: (SOLUTIONS / m).read_bytes() for m in intake.module_files()}
    modules["grad.py"] = (STUBS / "grad.py").read_bytes()
    out = write_submission(modules, tmp_path / "submission.zip")
    folder = tmp_path / "folder"
    folder.mkdir()
    for module, source in modules.items():
        (folder / module).write_bytes(source)
    hostile = tmp_path / "hostile.zip"
    with zipfile.ZipFile(out) as src, zipfile.ZipFile(hostile, "w") as dst:
        for name in src.namelist():
            data = src.read(name)
            dst.writestr(name, b"import os\nos._exit(0)\n" if name == ROOT_FILE else data)
    from_zip, from_folder, from_hostile = (scores(engine.grade(p)) for p in (out, folder, hostile))
    assert from_zip == from_folder == from_hostile
    assert from_zip["partial_grads"] == 0 and from_zip["graph_node_counts"] == 5


def test_submit_refuses_a_missing_or_non_importing_module(tmp_path, capsys):
    folder = tmp_path / "work"
    folder.mkdir()
    for module in intake.module_files():
        (folder / module).write_bytes((SOLUTIONS / module).read_bytes())
    (folder / "grad.py").write_text((SOLUTIONS / "grad.py").read_text() + "\nimport no_such_module_anywhere\n")
    (folder / "inplace.py").unlink()
    out = tmp_path / "s.zip"
    assert main(["submit", str(folder), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "inplace.py is missing / 缺少 inplace.py" in err
    assert "grad.py does not import / 无法导入 grad.py" in err and "no_such_module_anywhere" in err
    assert not out.exists()


def test_submit_refuses_a_module_that_exits_at_import(tmp_path, capsys):
    folder = tmp_path / "work"
    folder.mkdir()
    for module in intake.module_files():
        (folder / module).write_bytes((SOLUTIONS / module).read_bytes())
    (folder / "graph.py").write_text("import os\nos._exit(3)\n")
    assert main(["submit", str(folder), "--out", str(tmp_path / "s.zip")]) == 1
    assert "graph.py does not import" in capsys.readouterr().err


def test_submit_names_a_syntax_errors_line_and_imports_the_rest_in_one_process(tmp_path, capsys, monkeypatch):
    folder = tmp_path / "work"
    folder.mkdir()
    for module in intake.module_files():
        (folder / module).write_bytes((SOLUTIONS / module).read_bytes())
    (folder / "grad.py").write_text("x = 1\ndef hvp(f, x, v:\n    pass\n")
    (folder / "inplace.py").write_text("import os\nos._exit(3)\n")  # ends its process: the others still import
    (folder / "backward.py").write_text((SOLUTIONS / "backward.py").read_text() + "\nraise ValueError('late')\n")
    import subprocess

    processes = []
    real_run = subprocess.run
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: processes.append(a) or real_run(*a, **k))
    assert main(["submit", str(folder), "--out", str(tmp_path / "s.zip")]) == 1
    err = capsys.readouterr().err
    assert "grad.py does not import" in err and "(line 2: def hvp(f, x, v:)" in err and "第 2 行" in err
    assert "inplace.py does not import" in err and "exit status 3" in err
    assert "backward.py does not import" in err and "ValueError: late" in err
    assert "graph.py" not in err and "accumulation.py" not in err
    assert len(processes) <= 2  # one import process, and one more for the modules after the one that exited


def test_submit_warns_about_unfinished_functions(tmp_path, capsys):
    out = tmp_path / "s.zip"
    assert main(["submit", str(STUBS), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "grad.py: partial_grads, nth_derivative, hvp, jacobian_rows still raise NotImplementedError" in err
    assert "SmoothAbs.forward, SmoothAbs.backward" in err
    assert out.exists()


def test_a_module_that_prints_on_import_is_not_misread_as_failing():
    """The import check's verdict has a channel of its own: what the module prints is not it."""
    from grader.exports.submit import import_failures

    assert import_failures({"graph.py": b"print('hello')\nprint('{not json')\n"}) == {}
    failed = import_failures({"graph.py": b"print('\"looks like a verdict\"')\nraise ValueError('real')\n"})
    assert failed == {"graph.py": "ValueError: real"}
