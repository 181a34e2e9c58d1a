"""`grader diff OLD NEW`: what a regrade changed, submission by submission, and why when the files say.

Two score folders (before and after fixing a test, changing the seed, upgrading the grader) are
matched by submission name. A submission changed when its total, an exercise's score, or a test's
status or points differ. The reason is read from what each file records: the test cases'
fingerprint (`tests_sha256`), `seed`, `device`, `grader_version`, `torch_version` and the
submission's own files (`source_sha256`). Markdown for a post to the class, CSV for a spreadsheet.
"""

from __future__ import annotations

import csv
import io
import statistics
from dataclasses import dataclass, field

from grader.report.pages import md_cell, num

EPS = 1e-9
SHOWN_PER_ROW = 8
RECORDED = (  # (field, how it is named in a reason); a changed value is a reason the scores may differ
    ("tests_sha256", "test cases"),
    ("seed", "seed"),
    ("device", "device"),
    ("grader_version", "grader version"),
    ("torch_version", "torch version"),
    ("source_sha256", "the submission's files"),
)
FINGERPRINTS = {"tests_sha256", "source_sha256"}


@dataclass
class Change:
    submission: str
    old: dict | None
    new: dict | None
    exercises: list[tuple[str, float | None, float | None]] = field(default_factory=list)
    tests: list[tuple[str, str, str, str]] = field(default_factory=list)  # exercise, test, old status, new status
    reasons: list[str] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return "added" if self.old is None else "removed" if self.new is None else "changed"

    @property
    def delta(self) -> float:
        return (self.new or {}).get("score", 0) - (self.old or {}).get("score", 0)


@dataclass
class Comparison:
    changes: list[Change]  # changed, then added, then removed
    unchanged: int
    old_mean: float
    new_mean: float
    both: int


def compare(old_reports: list[dict], new_reports: list[dict]) -> Comparison:
    old = {r["submission"]: r for r in old_reports}
    new = {r["submission"]: r for r in new_reports}
    both = sorted(old.keys() & new.keys())
    changed = [c for c in (submission_change(old[n], new[n]) for n in both) if c is not None]
    changed.sort(key=lambda c: (-abs(c.delta), c.submission))
    added = [Change(n, None, new[n]) for n in sorted(new.keys() - old.keys())]
    removed = [Change(n, old[n], None) for n in sorted(old.keys() - new.keys())]
    return Comparison(changed + added + removed, len(both) - len(changed),
                      statistics.fmean(r["score"] for r in old_reports) if old_reports else 0.0,
                      statistics.fmean(r["score"] for r in new_reports) if new_reports else 0.0, len(both))


def submission_change(old: dict, new: dict) -> Change | None:
    change = Change(old["submission"], old, new)
    old_ex = {e["name"]: e for e in old["exercises"]}
    new_ex = {e["name"]: e for e in new["exercises"]}
    for name in list(dict.fromkeys([*old_ex, *new_ex])):
        a, b = old_ex.get(name), new_ex.get(name)
        if a is None or b is None or abs(a["score"] - b["score"]) > EPS:
            change.exercises.append((name, a and a["score"], b and b["score"]))
        old_tests = {t["name"]: t for t in (a or {}).get("tests", [])}
        new_tests = {t["name"]: t for t in (b or {}).get("tests", [])}
        for test in list(dict.fromkeys([*old_tests, *new_tests])):
            s, t = old_tests.get(test), new_tests.get(test)
            if s is None or t is None or s["status"] != t["status"] or abs(s["score"] - t["score"]) > EPS:
                change.tests.append((name, test, s["status"] if s else "absent", t["status"] if t else "absent"))
    if abs(old["score"] - new["score"]) <= EPS and not change.exercises and not change.tests:
        return None
    change.reasons = reasons(old, new)
    return change


def reasons(old: dict, new: dict) -> list[str]:
    """What the two files record differently, in words; a fingerprint is named, not quoted in full."""
    found = []
    for key, what in RECORDED:
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        if key in FINGERPRINTS:
            found.append(f"{what} changed ({key}" + (", not recorded before" if a is None else "") + ")")
        else:
            found.append(f"{what} {'not recorded' if a is None else a} → {'not recorded' if b is None else b}")
    if abs(old["max_score"] - new["max_score"]) > EPS:
        found.append(f"points possible {num(old['max_score'])} → {num(new['max_score'])}")
    return found or ["nothing recorded differs: the same tests and settings gave another result "
                     "(a flaky test, or a time or memory limit reached once)"]


def _exercises_text(c: Change) -> list[str]:
    return [f"{name} {num(a) if a is not None else 'absent'} → {num(b) if b is not None else 'absent'}"
            for name, a, b in c.exercises]


def _tests_text(c: Change) -> list[str]:
    return [f"{exercise}/{test}: {a} → {b}" for exercise, test, a, b in c.tests]


def _shown(items: list[str]) -> str:
    more = len(items) - SHOWN_PER_ROW
    return "; ".join(items[:SHOWN_PER_ROW]) + (f"; and {more} more" if more > 0 else "")


def common_reasons(comparison: Comparison) -> list[tuple[str, int]]:
    counts: dict[str, int] = {}
    for c in comparison.changes:
        for r in c.reasons:
            counts[r] = counts.get(r, 0) + 1
    return sorted(counts.items(), key=lambda kv: -kv[1])


def markdown(comparison: Comparison, old_name: str, new_name: str) -> str:
    changed = [c for c in comparison.changes if c.kind == "changed"]
    up = sum(1 for c in changed if c.delta > EPS)
    down = sum(1 for c in changed if c.delta < -EPS)
    added = [c for c in comparison.changes if c.kind == "added"]
    removed = [c for c in comparison.changes if c.kind == "removed"]
    lines = [
        f"# Regrade: {md_cell(old_name)} → {md_cell(new_name)}",
        "",
        f"{comparison.both} submissions in both: {len(changed)} changed ({up} up, {down} down, "
        f"{len(changed) - up - down} with the same total), {comparison.unchanged} unchanged; "
        f"{len(added)} only in the new grading, {len(removed)} only in the old one.",
        f"Mean score: {num(comparison.old_mean)} → {num(comparison.new_mean)}.",
    ]
    common = common_reasons(comparison)
    if common:
        lines += ["", "Why, as the score files record it:", ""]
        lines += [f"- {md_cell(r)}: {n} submission{'s' if n != 1 else ''}" for r, n in common]
    if changed:
        lines += ["", "| submission | old | new | change | exercises | tests | why |",
                  "| --- | ---: | ---: | ---: | --- | --- | --- |"]
        for c in changed:
            lines.append(f"| {md_cell(c.submission)} | {num(c.old['score'])} | {num(c.new['score'])} | "
                         f"{c.delta:+.2f} | {md_cell(_shown(_exercises_text(c)))} | {md_cell(_shown(_tests_text(c)))} | "
                         f"{md_cell('; '.join(c.reasons))} |")
    for title, items, key in (("Only in the new grading", added, "new"), ("Only in the old grading", removed, "old")):
        if items:
            lines += ["", f"## {title}", ""]
            lines += [f"- {md_cell(c.submission)} ({num(getattr(c, key)['score'])})" for c in items]
    return "\n".join(lines) + "\n"


def csv_text(comparison: Comparison) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["submission", "kind", "old_score", "new_score", "change", "exercises", "tests", "why"])
    for c in comparison.changes:
        writer.writerow([c.submission, c.kind, num(c.old["score"]) if c.old else "", num(c.new["score"]) if c.new else "",
                         f"{c.delta:+.2f}" if c.kind == "changed" else "", "; ".join(_exercises_text(c)),
                         "; ".join(_tests_text(c)), "; ".join(c.reasons)])
    return out.getvalue()
