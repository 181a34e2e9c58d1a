"""Reading a submission: a folder, a .zip or a notebook (.ipynb), treated as untrusted files.

Only the exercise modules the course file lists are taken, from the submission's root or from an
`exercises/` folder in it; everything else (a planted `conftest.py`, `sitecustomize.py`,
`.pth` files, packages named `torch` or `grader`) is never read, let alone run. Nothing is
extracted to disk: zip members are read into memory with size caps. Members with absolute
paths, `..`, symlinks or device files are rejected with a message; a zip bomb stops at the
size cap; a symlinked module in a folder is refused rather than followed.

A notebook (alone, or the one `.ipynb` of a folder or zip that holds no module) is read within the
same caps and turned into the course's modules by `grader.host.cells`, by parsing only: no cell is
run on this side. The submission then records which cell each exercise came from (`cells`), and a
notebook of another assignment is refused with a message (`wrong_assignment`) instead of graded.
"""

from __future__ import annotations

import hashlib
import os
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from grader import catalog
from grader.errors import GraderError
from grader.host import cells as notebook_cells

MAX_MODULE_BYTES = 1024 * 1024
MAX_ZIP_MEMBERS = 2000
MAX_ZIP_TOTAL_BYTES = 32 * 1024 * 1024
PREFIXES = ("", "exercises/")
NOTEBOOK_SUFFIX = ".ipynb"


def module_files(course: catalog.Course | None = None) -> tuple[str, ...]:
    """The module files a submission holds ("graph.py", ...), as the course file lists them
    (`course`, by default the process's: an engine always passes its own)."""
    return tuple((course or catalog.load()).modules)


@dataclass
class Submission:
    name: str
    path: str
    files: dict[str, bytes] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    cells: dict[str, dict] = field(default_factory=dict)  # a notebook's: exercise -> {cell, id, found_by}
    wrong_assignment: str | None = None  # a notebook of another assignment: why it is not graded
    modules: tuple[str, ...] = ()  # the module files of the course it was read for

    @property
    def sha256(self) -> str:
        digest = hashlib.sha256()
        for name in sorted(self.files):
            digest.update(name.encode() + b"\0" + hashlib.sha256(self.files[name]).digest())
        return digest.hexdigest()

    @property
    def missing_modules(self) -> list[str]:
        return [m for m in self.modules or module_files() if m not in self.files]


def submission_name(path: str | os.PathLike) -> str:
    p = Path(path)
    name = p.stem if p.suffix.lower() in (".zip", NOTEBOOK_SUFFIX) else p.name
    return name or "submission"


def load(path: str | os.PathLike, course: catalog.Course | None = None) -> Submission:
    """Read a submission of `course` (by default the process's); problems are recorded, never
    raised, so every submission gets graded."""
    path = Path(path)
    course = course or catalog.load()
    sub = Submission(name=submission_name(path.resolve() if str(path) in (".", "") else path), path=str(path),
                     modules=module_files(course))
    try:
        if path.is_dir():
            _load_folder(path, sub, course)
        elif path.suffix.lower() == ".zip" and path.is_file():
            _load_zip(path, sub, course)
        elif path.suffix.lower() == NOTEBOOK_SUFFIX and path.is_file():
            _load_notebook(_read_capped(path, notebook_cells.MAX_NOTEBOOK_BYTES), path.name, sub, course)
        elif not path.exists():
            sub.problems.append(f"{path} does not exist")
        else:
            sub.problems.append(f"{path} is neither a folder, a .zip file nor a notebook (.ipynb)")
    except Exception as exc:  # an archive zipfile cannot read in one of its many ways: the submission scores 0
        sub.problems.append(f"could not read {path.name}: {type(exc).__name__}: {str(exc)[:300]}")
    for module in sub.missing_modules if sub.wrong_assignment is None else ():
        sub.problems.append(f"{module} is missing: its exercises score 0 / 缺少 {module}：其中的习题得 0 分")
    return sub


class SubmissionVanished(GraderError):
    """A submission that was there when the run started is gone: a fault of the machine, not of the
    student's work, so it gets no score file (a score of 0 would be a wrong grade)."""


def load_present(path: str | os.PathLike, course: catalog.Course | None = None) -> Submission:
    """`load` a submission that must still be there: SubmissionVanished when it is gone, before or
    after its files were read."""
    if not os.path.lexists(path):
        raise SubmissionVanished(f"{path} was there when the run started and is gone now")
    sub = load(path, course)
    if not os.path.lexists(path):
        raise SubmissionVanished(f"{path} vanished while it was being read")
    return sub


def _load_folder(folder: Path, sub: Submission, course: catalog.Course) -> None:
    tops = [c.name for c in folder.iterdir() if c.is_dir() and not c.is_symlink()]
    located = locate_modules(lambda rel: os.path.lexists(folder / rel), tops, sub.modules)
    if not located:
        notebooks = sorted(c.name for c in folder.iterdir() if c.name.lower().endswith(NOTEBOOK_SUFFIX)
                           and not c.name.startswith(".") and c.is_file() and not c.is_symlink())
        if notebooks:
            _note_several(notebooks, sub)
            _load_notebook(_read_capped(folder / notebooks[0], notebook_cells.MAX_NOTEBOOK_BYTES), notebooks[0], sub,
                           course)
        return
    for module, rel in located.items():
        path = folder / rel
        if any((folder / parent).is_symlink() for parent in PurePosixPath(rel).parents if str(parent) != "."):
            sub.problems.append(f"{rel} lies under a symbolic link: rejected")
            continue
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            sub.problems.append(f"{rel} is a symbolic link: rejected")
            continue
        if not stat.S_ISREG(info.st_mode):
            sub.problems.append(f"{rel} is not a regular file: rejected")
            continue
        if info.st_size > MAX_MODULE_BYTES:
            sub.problems.append(f"{rel} is larger than {MAX_MODULE_BYTES // 1024} KiB: rejected "
                                f"/ {rel} 超过 {MAX_MODULE_BYTES // 1024} KiB，已拒绝")
            continue
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as f:
            sub.files[module] = f.read(MAX_MODULE_BYTES + 1)[:MAX_MODULE_BYTES]


def _load_zip(path: Path, sub: Submission, course: catalog.Course) -> None:
    with zipfile.ZipFile(path) as zf:
        members = zf.infolist()
        if len(members) > MAX_ZIP_MEMBERS:
            raise ValueError(f"the archive has {len(members)} members (at most {MAX_ZIP_MEMBERS})")
        safe: dict[str, zipfile.ZipInfo] = {}
        for info in members:
            problem = _unsafe_member(info)
            if problem:
                sub.problems.append(f"archive member {info.filename!r} rejected: {problem}")
            else:
                safe[_normal(info.filename)] = info
        tops = {name.split("/", 1)[0] for name in safe if "/" in name}
        budget = MAX_ZIP_TOTAL_BYTES
        located = locate_modules(lambda rel: rel in safe, tops, sub.modules)
        if not located:
            _load_zipped_notebook(zf, safe, sub, course)
        for module, rel in located.items():
            info = safe[rel]
            if info.file_size > MAX_MODULE_BYTES:
                sub.problems.append(f"archive member {info.filename!r} rejected: larger than {MAX_MODULE_BYTES // 1024} KiB "
                                    f"/ 超过 {MAX_MODULE_BYTES // 1024} KiB，已拒绝")
                continue
            try:
                with zf.open(info) as f:
                    data = f.read(MAX_MODULE_BYTES + 1)  # never trust the declared size
            except Exception as exc:  # bad CRC, corrupt deflate data, encrypted, unknown compression...
                sub.problems.append(f"archive member {info.filename!r} rejected: it cannot be read "
                                    f"({type(exc).__name__}: {str(exc)[:200]})")
                continue
            if len(data) > MAX_MODULE_BYTES or len(data) > budget:
                sub.problems.append(f"archive member {info.filename!r} rejected: it expands past the size limit "
                                    f"/ 解压后超过大小限制，已拒绝")
                continue
            budget -= len(data)
            sub.files[module] = data


def _load_zipped_notebook(zf: zipfile.ZipFile, safe: dict[str, zipfile.ZipInfo], sub: Submission,
                          course: catalog.Course) -> None:
    """The notebook of a zip that holds no module: at its root, or else in one top folder."""
    notebooks = sorted(n for n in safe if n.lower().endswith(NOTEBOOK_SUFFIX) and n.count("/") <= 1
                       and not any(part.startswith(".") for part in n.split("/")))
    notebooks = [n for n in notebooks if "/" not in n] or notebooks
    if not notebooks:
        return
    _note_several(notebooks, sub)
    info = safe[notebooks[0]]
    with zf.open(info) as f:
        data = f.read(notebook_cells.MAX_NOTEBOOK_BYTES + 1)  # never trust the declared size
    _load_notebook(data, notebooks[0], sub, course)


def _note_several(notebooks: list[str], sub: Submission) -> None:
    if len(notebooks) > 1:
        sub.problems.append(f"several notebooks ({', '.join(notebooks[:5])}): graded {notebooks[0]} only "
                            f"/ 有多个 notebook，只评 {notebooks[0]}")


def _read_capped(path: Path, cap: int) -> bytes:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as f:
        return f.read(cap + 1)


def _load_notebook(data: bytes, name: str, sub: Submission, course: catalog.Course) -> None:
    """The course's modules out of a notebook's code cells (parsing only, see grader.host.cells)."""
    try:
        cells, metadata, problems = notebook_cells.read_notebook(data, name)
    except notebook_cells.NotANotebook as exc:
        sub.problems.append(str(exc))
        return
    sub.problems += problems
    wrong = notebook_cells.identity_problem(metadata, course, name)
    if wrong:
        sub.wrong_assignment = wrong
        sub.problems.append(wrong)
        return
    extracted = notebook_cells.extract(cells, course, name)
    sub.problems += extracted.problems
    for module, source in extracted.modules.items():
        if len(source) > MAX_MODULE_BYTES:
            sub.problems.append(f"{name}: the code for {module} is larger than {MAX_MODULE_BYTES // 1024} KiB: rejected "
                                f"/ {module} 的代码超过 {MAX_MODULE_BYTES // 1024} KiB，已拒绝")
            continue
        sub.files[module] = source
    sub.cells = {e: where for e, where in extracted.origins.items() if course.exercise(e).module in sub.files}


def _unsafe_member(info: zipfile.ZipInfo) -> str | None:
    name = info.filename
    if "\0" in name or "\\" in name:
        return "odd characters in the name"
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "absolute path"
    if ".." in PurePosixPath(name).parts:
        return "'..' in the path"
    kind = stat.S_IFMT((info.external_attr >> 16) & 0xFFFF)  # 0: no Unix file type recorded, a plain file
    if kind == stat.S_IFLNK:
        return "symbolic link"
    if kind not in (0, stat.S_IFREG, stat.S_IFDIR):
        return "device, pipe or other special file"
    return None


def _normal(name: str) -> str:
    return str(PurePosixPath(name)) + ("/" if name.endswith("/") else "")


def locate_modules(exists, tops, modules: tuple[str, ...] = ()) -> dict[str, str]:
    """Module file -> its path in the submission, by the same rule for folders and zips.

    `exists(relative_path)` says whether the submission holds that path; `tops` are its top-level
    folders; `modules`: the course's module files (by default the process's course's). The modules sit at the root or in `exercises/`; failing both, inside the first top
    folder (sorted) that holds them that way, as zipping a folder makes. Each module is taken from
    the first of those places that has it, so an extracted zip grades exactly like the zip itself.
    """
    modules = modules or module_files()

    def holds(root: str) -> bool:
        return any(exists(root + p + m) for p in PREFIXES for m in modules)

    root = "" if holds("") else next((t + "/" for t in sorted(tops) if holds(t + "/")), "")
    located = {}
    for module in modules:
        rel = next((root + p + module for p in PREFIXES if exists(root + p + module)), None)
        if rel is not None:
            located[module] = rel
    return located
