"""A zip grades exactly like the folder it unpacks to (otter and Gradescope grade the unpacked folder)."""

import os
import zipfile

import pytest

from grader import submission



def zip_folder(folder, out):
    with zipfile.ZipFile(out, "w") as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                zf.write(path, path.relative_to(folder).as_posix())
    return out


def write_modules(folder, where):
    """The six modules, each at the place `where(module)` names inside `folder`."""
    for module in submission.MODULE_FILES:
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
    (folder / "autograd_lab.py").write_text("EXERCISES = 'elsewhere'\n")
    from_folder = submission.load(folder)
    from_zip = submission.load(zip_folder(folder, tmp_path / "sub.zip"))
    assert sorted(from_folder.files) == sorted(submission.MODULE_FILES)
    assert from_folder.files == from_zip.files
    assert from_folder.sha256 == from_zip.sha256
    assert from_folder.problems == from_zip.problems == []


def test_a_module_under_a_symlinked_folder_is_refused(tmp_path):
    real = write_modules(tmp_path / "elsewhere", lambda m: "")
    folder = tmp_path / "sub"
    folder.mkdir()
    os.symlink(real, folder / "exercises")
    sub = submission.load(folder)
    assert sub.files == {}
    assert any("symbolic link" in p for p in sub.problems)


def test_a_zip_without_unix_file_types_is_read(tmp_path):
    """Python's ZipFile.writestr and many Windows tools record no file type: such members are plain files."""
    out = tmp_path / "plain.zip"
    with zipfile.ZipFile(out, "w") as zf:
        for module in submission.MODULE_FILES:
            zf.writestr(f"exercises/{module}", f"# {module}\n")
    sub = submission.load(out)
    assert sorted(sub.files) == sorted(submission.MODULE_FILES) and sub.problems == []
