"""The figures of a graded class, computed from its score files: plain numbers, no presentation.

`class_figures(reports)` is everything `grader report` shows, in HTML or Markdown: the score
distribution, each exercise's mean and shares at full marks and at zero, each test's pass rate
(public and hidden apart; a test nobody passes is flagged), the commonest mistakes (by the
`mistake` id of the score files, other failure messages apart), the submissions with problems,
grading time and sandboxes, and one row per submission for the table.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import dataclass, field

from grader.report.scores import page_name
from grader.student_view import has_cjk

HISTOGRAM_BINS = 20
TOP_MISTAKES = 20
EPS = 1e-9
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e-?\d+)?(?![\w.])")

# A problem with a submission, recognised in its `submission_errors` or in a test's message: the
# engine's own wording (grader/host/intake.py, grader/host/student_code.py). First match wins.
PROBLEM_KINDS = (
    ("tampering", ("changed the grader's code", "tampered")),
    ("rejected archive member", ("rejected",)),
    ("import error", ("could not be imported", "importing ")),
    ("missing module", ("is missing", "the submission has no ")),
    ("crash", ("worker process ended", "memory than at its start", "malformed reply", "reply to ",
               "could not start a worker")),
)


@dataclass
class Histogram:
    edges: list[float]  # len(counts) + 1 bin edges; the last bin includes its right edge
    counts: list[int]


@dataclass
class ExerciseFigure:
    name: str
    module: str
    max_score: float
    submissions: int
    mean: float
    share_full: float
    share_zero: float
    counterexample_sizes: list[int] = field(default_factory=list)  # each found one's largest tensor argument

    @property
    def counterexamples(self) -> str:
        """How many counterexamples the class's score files hold, and their sizes ("3 (1, 2, 2 elements)")."""
        sizes = sorted(self.counterexample_sizes)
        return f"{len(sizes)} ({', '.join(map(str, sizes))} elements)" if sizes else "0"

    @property
    def mean_fraction(self) -> float:
        return self.mean / self.max_score if self.max_score else 0.0


@dataclass
class TestFigure:
    exercise: str
    name: str
    visibility: str
    submissions: int
    passed: int

    @property
    def pass_rate(self) -> float:
        return self.passed / self.submissions if self.submissions else 0.0

    @property
    def nobody_passes(self) -> bool:
        return self.submissions > 0 and self.passed == 0


@dataclass
class MistakeFigure:
    id: str  # "<exercise>.<mistake>", or "" for a failure message without a mistake id
    en: str
    zh: str
    exercise: str
    submissions: int  # submissions with at least one test failed this way
    failures: int  # failed tests
    example_en: str = ""  # a failure message as one submission got it (numbers kept): what the page shows
    example_zh: str = ""

    @property
    def shown_en(self) -> str:
        return self.example_en or self.en

    @property
    def shown_zh(self) -> str:
        return self.example_zh or self.zh


@dataclass
class ProblemRow:
    submission: str
    kinds: list[str]
    details: list[str]


@dataclass
class Row:
    submission: str
    page: str
    score: float
    max_score: float
    exercises: dict[str, float]
    problems: list[str]
    raw_score: float | None = None
    adjustments: list[dict] = field(default_factory=list)
    submitted_at: str | None = None

    @property
    def percent(self) -> float:
        return 100 * self.score / self.max_score


@dataclass
class ClassFigures:
    submissions: int
    max_score: float
    scores: list[float]
    mean: float
    median: float
    full_marks: int
    zeros: int
    histogram: Histogram
    exercises: list[ExerciseFigure]  # hardest first
    tests: list[TestFigure]  # lowest pass rate first
    mistakes: list[MistakeFigure]  # with an id, commonest first
    messages: list[MistakeFigure]  # failures without a mistake id, by message, commonest first
    problems: list[ProblemRow]
    durations: list[float]
    duration_histogram: Histogram
    sandboxes: Counter  # (device, sandbox backend) -> submissions
    sandbox_notes: Counter  # a note of the sandbox block -> submissions
    rows: list[Row]
    recorded: dict[str, Counter]  # grader_version, seed, tests_sha256, torch_version -> value -> submissions
    max_scores: Counter  # max_score -> submissions: more than one means files from different gradings
    has_adjustments: bool = False

    def tests_of(self, visibility: str) -> list[TestFigure]:
        return [t for t in self.tests if t.visibility == visibility]

    @property
    def duration_stats(self) -> dict[str, float]:
        d = sorted(self.durations)
        return {"median": statistics.median(d), "p90": quantile(d, 0.9), "max": d[-1], "total": sum(d)}


def class_figures(reports: list[dict], message_of=None) -> ClassFigures:
    """`message_of(exercise_names, test)`: the message to group failures by when a test has no
    mistake id (default: the test's own message)."""
    if not reports:
        raise ValueError("no score files")
    reports = sorted(reports, key=lambda r: r["submission"])
    scores = [float(r["score"]) for r in reports]
    max_scores = Counter(float(r["max_score"]) for r in reports)
    max_score = max_scores.most_common(1)[0][0]
    durations = [float(r.get("duration_s", 0.0)) for r in reports]
    rows = [row(r) for r in reports]
    failures = mistake_figures(reports, message_of)
    return ClassFigures(
        submissions=len(reports),
        max_score=max_score,
        scores=scores,
        mean=statistics.fmean(scores),
        median=statistics.median(scores),
        full_marks=sum(1 for r in reports if r["score"] >= r["max_score"] - EPS),
        zeros=sum(1 for s in scores if s <= EPS),
        histogram=histogram(scores, 0.0, max_score),
        exercises=exercise_figures(reports),
        tests=test_figures(reports),
        mistakes=[m for m in failures if m.id][:TOP_MISTAKES],
        messages=[m for m in failures if not m.id][:TOP_MISTAKES],
        problems=[p for p in map(problem_row, reports) if p.kinds],
        durations=durations,
        duration_histogram=histogram(durations, 0.0, max(durations) or 1.0),
        sandboxes=Counter((r.get("device", "?"), (r.get("sandbox") or {}).get("backend", "not recorded"))
                          for r in reports),
        sandbox_notes=Counter(n for r in reports for n in (r.get("sandbox") or {}).get("notes", [])),
        rows=rows,
        recorded={key: Counter(str(r[key]) if key in r else "not recorded" for r in reports)
                  for key in ("grader_version", "seed", "tests_sha256", "torch_version", "device")},
        max_scores=max_scores,
        has_adjustments=any(r.raw_score is not None or r.adjustments or r.submitted_at for r in rows),
    )


def histogram(values: list[float], low: float, high: float, bins: int = HISTOGRAM_BINS) -> Histogram:
    """Equal bins over [low, high]; a value at `high` falls in the last bin, values outside are clamped."""
    width = (high - low) / bins
    counts = [0] * bins
    for v in values:
        counts[min(bins - 1, max(0, int((v - low) / width + EPS)))] += 1
    return Histogram([low + i * width for i in range(bins + 1)], counts)


def quantile(sorted_values: list[float], q: float) -> float:
    """The q-quantile by linear interpolation between closest ranks (numpy's default)."""
    position = q * (len(sorted_values) - 1)
    lower = int(position)
    upper = min(lower + 1, len(sorted_values) - 1)
    return sorted_values[lower] + (sorted_values[upper] - sorted_values[lower]) * (position - lower)


def exercise_figures(reports: list[dict]) -> list[ExerciseFigure]:
    entries: dict[str, list[dict]] = {}
    for r in reports:
        for e in r["exercises"]:
            entries.setdefault(e["name"], []).append(e)
    figures = []
    for name, es in entries.items():
        top = Counter(float(e["max_score"]) for e in es).most_common(1)[0][0]
        figures.append(ExerciseFigure(
            name=name, module=es[0].get("module", ""), max_score=top, submissions=len(es),
            mean=statistics.fmean(float(e["score"]) for e in es),
            share_full=sum(1 for e in es if e["score"] >= e["max_score"] - EPS) / len(es),
            share_zero=sum(1 for e in es if e["score"] <= EPS) / len(es),
            counterexample_sizes=[int(e["counterexample"].get("elements", 0)) for e in es
                                  if isinstance(e.get("counterexample"), dict)]))
    return sorted(figures, key=lambda f: (f.mean_fraction, -f.share_zero, f.name))


def test_figures(reports: list[dict]) -> list[TestFigure]:
    tests: dict[tuple[str, str], TestFigure] = {}
    for r in reports:
        for e in r["exercises"]:
            for t in e["tests"]:
                key = (e["name"], t["name"])
                f = tests.get(key) or tests.setdefault(key, TestFigure(e["name"], t["name"], t["visibility"], 0, 0))
                f.submissions += 1
                f.passed += t["status"] == "passed"
    return sorted(tests.values(), key=lambda f: (f.pass_rate, f.exercise, f.name))


def mistake_key(test: dict, message: str) -> tuple[str, str, str]:
    """(id, English, Chinese) of a failed test: its `mistake` when the score file has one, else
    its message's first line with its numbers as "#" (shapes, indices and versions would split one
    failure into many), split at the " / " before the Chinese part when there is one."""
    mistake = test.get("mistake")
    if isinstance(mistake, dict) and mistake.get("id"):
        return str(mistake["id"]), str(mistake.get("en", "")), str(mistake.get("zh", ""))
    line = NUMBER.sub("#", first_line(test, message))
    return ("", *bilingual(line))


def first_line(test: dict, message: str) -> str:
    return (message or f"({test['status']}, no message)").splitlines()[0]


def bilingual(line: str) -> tuple[str, str]:
    """(English, Chinese) of a message line, split at the " / " before its Chinese part, if any."""
    en, sep, zh = line.rpartition(" / ")
    return (en, zh) if sep and has_cjk(zh) else (line, "")


def mistake_figures(reports: list[dict], message_of=None) -> list[MistakeFigure]:
    found: dict[tuple, MistakeFigure] = {}
    for r in reports:
        seen = set()
        names = {e["name"] for e in r["exercises"]}
        for e in r["exercises"]:
            for t in e["tests"]:
                if t["status"] != "failed":  # errors and timeouts are problems, listed apart
                    continue
                message = message_of(names, t) if message_of else t.get("message", "")
                mid, en, zh = mistake_key(t, message)
                key = (mid,) if mid else ("", e["name"], en, zh)
                f = found.get(key) or found.setdefault(key, MistakeFigure(
                    mid, en, zh, e["name"], 0, 0, *(("", "") if mid else bilingual(first_line(t, message)))))
                f.failures += 1
                if key not in seen:
                    seen.add(key)
                    f.submissions += 1
    return sorted(found.values(), key=lambda f: (-f.submissions, -f.failures, f.id, f.exercise, f.en))


def problem_kind(text: str) -> str | None:
    return next((kind for kind, needles in PROBLEM_KINDS if any(n in text for n in needles)), None)


def problem_row(report: dict) -> ProblemRow:
    """What went wrong with a submission beyond wrong answers: timeouts, crashes, import errors,
    rejected archive members, missing modules, tampering."""
    kinds: list[str] = []
    details: list[str] = []

    def add(kind: str, detail: str) -> None:
        if kind not in kinds:
            kinds.append(kind)
            details.append(detail)

    for error in report.get("submission_errors", []):
        add(problem_kind(error) or "other", error)
    for e in report["exercises"]:
        for t in e["tests"]:
            if t["status"] == "timeout":
                add("timeout", f"{t['name']}: {t.get('message', '')}")
            elif t["status"] == "error":
                add(problem_kind(t.get("message", "")) or "error", f"{t['name']}: {t.get('message', '')}")
    return ProblemRow(report["submission"], kinds, details)


def row(report: dict) -> Row:
    raw = report.get("raw_score")
    return Row(
        submission=report["submission"],
        page=page_name(report["submission"]),
        score=float(report["score"]),
        max_score=float(report["max_score"]),
        exercises={e["name"]: float(e["score"]) for e in report["exercises"]},
        problems=problem_row(report).kinds,
        raw_score=float(raw) if isinstance(raw, (int, float)) else None,
        adjustments=[a for a in report.get("adjustments", []) if isinstance(a, dict)],
        submitted_at=report.get("submitted_at"),
    )
