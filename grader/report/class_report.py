"""`grader report`: the class on one self-contained HTML page, or the same figures in Markdown.

The page holds everything inline (CSS, SVG charts, a few lines of JavaScript that sort the table)
and a Content-Security-Policy that forbids loading anything, so it opens the same from a file, an
e-mail or an LMS upload, offline.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone

from grader import catalog
from grader.report import pages, plots
from grader.report.figures import ClassFigures, class_figures
from grader.report.scores import ScoreFiles
from grader.student_view import fixed_texts, shown_message


def warnings(f: ClassFigures) -> list[str]:
    """Mixed gradings in one folder: the figures then compare unlike things."""
    out = []
    if len(f.max_scores) > 1:
        out.append("The score files have different maximum scores ("
                   + ", ".join(f"{pages.num(m)}: {n}" for m, n in f.max_scores.most_common())
                   + "): they come from different gradings. / 成绩文件的满分不一致。")
    for key, what in (("tests_sha256", "test cases"), ("seed", "seeds"), ("grader_version", "grader versions"),
                      ("device", "devices")):
        values = f.recorded[key]
        known = [v for v in values if v != "not recorded"]
        if len(known) > 1:
            out.append(f"The submissions were graded with {len(known)} different {what} ("
                       + ", ".join(f"{v[:12]}: {n}" for v, n in values.most_common()) + "); "
                       "regrade them together to compare like with like. / 评分所用的设置不一致，请统一重新评分。")
    return out


def device_only(reports: list[dict], course: catalog.Catalog | None = None) -> list[dict]:
    """The course's learner mistakes that show on one device only (DEVICE = "cuda": right on the CPU)
    where none of these submissions was graded: a submission making one scores full marks here. Each
    with the class's submissions that are `make demo`'s sample of it (the demo grades them on the CPU)."""
    course = course or catalog.load()
    graded_on = {r.get("device") for r in reports}
    found = []
    for name, entry in catalog.learner_mistakes(course.place("learner_mistakes")).items():
        device = catalog.device_only(entry)
        if not device or device in graded_on:
            continue
        samples = [r for r in reports if catalog.is_sample_of(r["submission"], name)]
        found.append({"name": name, "mistake": entry.get("MISTAKE", ""), "device": device, "doc": entry.get("doc") or "",
                      "samples": [(r["submission"], r["score"], r["max_score"]) for r in samples]})
    return found


def context(scores: ScoreFiles, source: str, feedback_base: str | None, public: bool = False) -> dict:
    """`public`: for students or a forum post: no submission names and hidden tests' messages
    only as far as a student may read them (student_view)."""
    message_of = None
    if public:
        fixed = fixed_texts()
        message_of = lambda names, test: shown_message(test, names, fixed)  # noqa: E731
    f = class_figures(scores.reports, message_of)
    names = list(dict.fromkeys(e["name"] for r in scores.reports for e in r["exercises"]))
    return {
        "f": f,
        "source": source,
        "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "warnings": warnings(f),
        "unusable": [] if public else scores.unusable,
        "ungradable": [u if not public else None for u in scores.ungradable],
        "public": public,
        "problem_counts": Counter(k for p in f.problems for k in p.kinds).most_common(),
        "exercise_names": names,
        "exercise_max": {e.name: e.max_score for e in f.exercises},
        "feedback_base": feedback_base,
        "device_only": [{**d, "samples": []} if public else d for d in device_only(scores.reports)],
        "graded_on": ", ".join(sorted({str(r.get("device", "?")) for r in scores.reports})),
    }


def html(scores: ScoreFiles, source: str, feedback_base: str | None = "feedback/", public: bool = False) -> str:
    ctx = context(scores, source, feedback_base, public)
    return pages.render("report.html.j2", charts=plots.all_charts(ctx["f"]), **ctx)


def markdown(scores: ScoreFiles, source: str, public: bool = False) -> str:
    return pages.render("report.md.j2", **context(scores, source, None, public))
