"""Pair roster rows with score files, and report everything that could not be paired.

Nothing is dropped in silence. After `reconcile(roster, scores)`:
- `matched`: a roster row and its valid score file: these are exported;
- `unmatched_submissions`: valid score files with no roster row: not exported (whose score
  would it be?), listed so that the roster can be fixed;
- `without_submission`: roster rows with no score file at all: the student has not submitted
  (or the roster's `submission` is misspelt); the exports leave their grade empty, or write 0
  with `--missing-as-zero`;
- `invalid`: score files that could not be read or are invalid, with the roster row they
  belong to when it is known; their students get no grade, even with `--missing-as-zero`,
  because a broken score file is the grader's fault, not the student's.

`Report` prints the summary on stderr and writes the same lists as JSON (`--report FILE`).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from grader.lms.roster import Roster, RosterRow, submission_key
from grader.lms.scores import ScoreProblem, ScoreSet, SubmissionScore
from grader.safetext import replace_lone_surrogates


@dataclass
class Reconciliation:
    matched: list[tuple[RosterRow, SubmissionScore]] = field(default_factory=list)
    unmatched_submissions: list[SubmissionScore] = field(default_factory=list)
    without_submission: list[RosterRow] = field(default_factory=list)
    invalid: list[tuple[ScoreProblem, RosterRow | None]] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """True when every score file was valid and belongs to a roster row."""
        return not self.unmatched_submissions and not self.invalid

    def set_aside(self, scores: list[SubmissionScore], reason: str) -> None:
        """Valid score files an export cannot use after all: reported with the invalid ones."""
        left_out = {id(s) for s in scores}
        for row, score in self.matched:
            if id(score) in left_out:
                self.invalid.append((ScoreProblem(score.path, reason, score.submission), row))
        self.matched = [(row, score) for row, score in self.matched if id(score) not in left_out]

    @property
    def warnings(self) -> list[str]:
        return [w for _, score in self.matched for w in score.warnings]


def reconcile(roster: Roster, scores: ScoreSet) -> Reconciliation:
    rows_by_key = {submission_key(r.submission): r for r in roster.rows if r.submission}
    result = Reconciliation()
    used: set[int] = set()
    for score in scores.scores:
        row = rows_by_key.get(submission_key(score.submission))
        if row is None:
            result.unmatched_submissions.append(score)
        else:
            result.matched.append((row, score))
            used.add(id(row))
    for problem in scores.problems:
        row = rows_by_key.get(submission_key(problem.submission))
        result.invalid.append((problem, row))
        if row is not None:
            used.add(id(row))
    result.without_submission = [r for r in roster.rows if id(r) not in used]
    # Export in roster order, the order the instructor knows.
    order = {id(r): i for i, r in enumerate(roster.rows)}
    result.matched.sort(key=lambda pair: order[id(pair[0])])
    return result


class Report:
    """What an export or publish did, for the instructor (stderr) and for scripts (JSON)."""

    def __init__(self, command: str) -> None:
        self.data: dict[str, Any] = {"command": command}
        self.warnings: list[str] = []

    def add_reconciliation(self, rec: Reconciliation, missing_as_zero: bool = False,
                           no_grade: str = "no grade") -> None:
        """`no_grade`: what a student without a submission gets when not given 0, in words."""
        self.data["exported"] = [score.submission for _, score in rec.matched]
        self.data["submissions_without_roster_row"] = [
            {"submission": s.submission, "file": str(s.path)} for s in rec.unmatched_submissions]
        self.data["students_without_submission"] = [r.as_dict() for r in rec.without_submission]
        self.data["students_without_submission_given"] = "0" if missing_as_zero else no_grade
        self.data["invalid_score_files"] = [
            {**problem.as_dict(), "roster_line": row.line if row else None} for problem, row in rec.invalid]
        self.warnings += rec.warnings

    def add_invalid_files(self, problems: list[ScoreProblem], scores: list[SubmissionScore] = ()) -> None:
        """For the per-submission exports, which use no roster."""
        self.data["invalid_score_files"] = [p.as_dict() for p in problems]
        self.warnings += [w for s in scores for w in s.warnings]

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def print_summary(self, rec: Reconciliation | None, stream: TextIO | None = None) -> None:
        stream = stream or sys.stderr

        def say(line: str) -> None:  # a file name that is not UTF-8 decodes to lone surrogates
            print(replace_lone_surrogates(line), file=stream)

        if rec is not None:
            for score in rec.unmatched_submissions:
                say(f"NOT EXPORTED: {score.path.name}: submission {score.submission!r} has no roster row")
            for problem, row in rec.invalid:
                owner = f" (student at roster {row.label()})" if row else ""
                say(f"NOT EXPORTED: {problem.path.name}{owner}: {problem.reason}")
            if rec.without_submission:
                given = self.data.get("students_without_submission_given", "no grade")
                say(f"{len(rec.without_submission)} roster student(s) without a submission ({given}): "
                    + ", ".join(r.label() for r in rec.without_submission[:20])
                    + (" ..." if len(rec.without_submission) > 20 else ""))
        else:
            for problem in self.data.get("invalid_score_files", []):
                say(f"NOT EXPORTED: {Path(problem['file']).name}: {problem['reason']}")
        for warning in self.warnings:
            say(f"warning: {warning}")

    def write(self, path: str | Path | None) -> None:
        if path is None:
            return
        self.data["warnings"] = self.warnings
        text = json.dumps(self.data, indent=2, ensure_ascii=False) + "\n"
        Path(path).write_text(replace_lone_surrogates(text), encoding="utf-8")  # a file name may hold some
