"""Finding and reading the score files of a graded class, and listing the ones that cannot be used.

`grader grade --out DIR` writes `DIR/<submission>.json`. A folder is read as every `*.json` in it
whose name does not start with a dot (ledgers and temporary files do); a file given by name is
read as it is, by `grader.score_files`, the one reader and validator of score files: a file that
cannot be read or is not a valid score file is listed with the reason, never skipped in silence
and never counted. Two files for one submission are both set aside: which one is the student's is
unknown. An ungradable file (the grader failed) is kept apart too: listed, never in the figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from grader import score_files
from grader.host.results import score_file_name
from grader.report import ReportError
from grader.score_files import Unusable


@dataclass
class ScoreFiles:
    """The usable score files (parsed JSON, sorted by submission) and the ones set aside."""

    reports: list[dict] = field(default_factory=list)
    unusable: list[Unusable] = field(default_factory=list)
    ungradable: list[Unusable] = field(default_factory=list)  # valid files the grader could not grade: shown apart
    paths: dict[str, Path] = field(default_factory=dict)  # submission -> its file


def load(paths: list[str | Path]) -> ScoreFiles:
    """Read score folders and files. Raises ReportError when there is nothing to read at all."""
    try:
        loaded = score_files.load(paths)
    except score_files.ScoreFileError as exc:
        raise ReportError(str(exc)) from None
    result = ScoreFiles(unusable=loaded.unusable)
    for found in sorted(loaded.files, key=lambda f: f.data["submission"]):
        if score_files.is_ungradable(found.data):  # its zeros are no score: never in the class's figures
            result.ungradable.append(Unusable(found.path, score_files.ungradable_reason(found.data), found.submission))
            continue
        result.reports.append(found.data)
        result.paths[found.data["submission"]] = found.path
    if not result.reports:
        count = len(loaded.unusable) + len(result.ungradable)
        reasons = "; ".join(f"{u.path.name}: {u.reason}" for u in (result.unusable + result.ungradable)[:3])
        raise ReportError(f"no usable score file among {count} ({reasons})")
    return result


def page_name(submission: str) -> str:
    """The file name (without suffix) of a submission's feedback page: its score file's name."""
    return score_file_name(submission).removesuffix(".json")
