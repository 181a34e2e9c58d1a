"""The review page (one self-contained HTML file, nothing from the network) and the CSV of pairs.

Each ranked pair opens a side-by-side view of the two hand-ins' code for an exercise: lines whose
statements share fingerprints are highlighted, lines the stub ships are greyed. Clusters are shown
over the whole hand-in and per exercise. The page says a score is evidence for a person to review,
not proof.
"""

from __future__ import annotations

import csv
import functools
import html
import io

from grader.catalog import Catalog
from grader.similarity import handins, normalize
from grader.similarity.fingerprints import unit_fingerprints
from grader.similarity.index import Pair, Review

NOTICE = ("A score is evidence for a person to review, not proof: honest students converge on the same idioms, "
          "and the stub's code is already subtracted.")
STYLE = """body{font:14px system-ui,sans-serif;margin:1.5em}table{border-collapse:collapse}td,th{padding:2px 8px;
border-bottom:1px solid #ddd;text-align:left}.notice{background:#fff3cd;padding:.6em;border:1px solid #e0c36c}
.side{display:flex;gap:1em}.side pre{flex:1;border:1px solid #ccc;padding:.4em;overflow:auto;font-size:12px}
.shared{background:#ffd6d6}.stub{color:#aaa}details{margin:.3em 0}"""


def csv_text(result: Review, limit: int | None = None) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["a", "b", "overall", "shared_weight", *result.exercises])
    for p in result.pairs(limit):
        writer.writerow([p.a, p.b, f"{p.overall:.3f}", f"{p.shared:.2f}",
                         *(f"{p.by_exercise[e]:.3f}" if e in p.by_exercise else "" for e in result.exercises)])
    return out.getvalue()


def html_page(result: Review, course: Catalog, top: int = 100, per_exercise: int = 10) -> str:
    paths = {h.name: h.path for h in result.hand_ins}
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>Similarity review</title><style>{STYLE}</style>"
             "</head><body><h1>Similarity review</h1>", f"<p class='notice' id='notice'>{html.escape(NOTICE)}</p>",
             f"<p>{len(result.hand_ins)} hand-ins, {len(result.groups)} distinct after normalisation. Scores are weighted "
             "Jaccard (0 to 1), rare fragments weighing more than common ones. In a pair's view, "
             "<span class='shared'>highlighted</span>: statements both wrote; <span class='stub'>grey</span>: what the "
             "stub ships, comments and blank lines (never compared).</p>"]
    parts.append("<h2>Clusters, over the whole hand-in</h2>" + (_cluster_rows(result.clusters, None) or "<p>none</p>"))
    per_exercise_clusters = "".join(f"<h3>{html.escape(e)}</h3>" + _cluster_rows(found, e)
                                    for e, found in result.exercise_clusters.items())
    parts.append("<h2 id='exercise-clusters'>Clusters per exercise</h2>" + (per_exercise_clusters or "<p>none</p>"))
    parts.append("<h2>Pairs, over the whole hand-in</h2>" + _pair_rows(result.pairs(top), None, paths, course, result))
    for e in result.exercises:
        ranked = result.pairs(per_exercise, exercise=e)
        if ranked:
            clustered = result.exercise_clusters.get(e)
            note = f"<p>{len(clustered)} cluster(s) of this exercise, above.</p>" if clustered else ""
            parts.append(f"<h2>{html.escape(e)}</h2>" + note + _pair_rows(ranked, e, paths, course, result))
    problems = [(h.name, p) for h in result.hand_ins for p in h.problems]
    parts.append("<h2>Hand-ins not (wholly) read</h2><ul>" + "".join(
        f"<li>{html.escape(n)}: {html.escape(p)}</li>" for n, p in problems) + "</ul>")
    return "".join(parts) + "</body></html>"


def _cluster_rows(found: list[list[str]], exercise: str | None) -> str:
    data = f" data-exercise='{html.escape(exercise)}'" if exercise else ""
    return "".join(f"<p class='cluster'{data}>{len(c)} hand-ins: {html.escape(', '.join(c[:50]))}"
                   f"{' ...' if len(c) > 50 else ''}</p>" for c in found)


def _pair_rows(pairs: list[Pair], exercise: str | None, paths, course: Catalog, result: Review) -> str:
    rows = []
    for p in pairs:
        shown = [exercise] if exercise else sorted(p.by_exercise, key=p.by_exercise.get, reverse=True)[:3]
        views = "".join(side_by_side(paths[p.a], paths[p.b], e, course, result) for e in shown)
        score = p.by_exercise.get(exercise, 0) if exercise else p.overall
        rows.append(f"<details class='pair'><summary>{score:.2f} &nbsp; {html.escape(p.a)} &harr; {html.escape(p.b)}"
                    f"</summary>{views}</details>")
    return "".join(rows)


def side_by_side(path_a: str, path_b: str, exercise: str, course: Catalog, result: Review) -> str:
    module = course.exercise(exercise).module
    sources = [_source(path_a, module), _source(path_b, module)]
    marked = [_marked_lines(s, module, exercise, course) for s in sources]
    common = {fp for fp in (marked[0][1] & marked[1][1]) if result.fingerprint_weight(exercise, fp) > 0}
    columns = []
    for source, (lines, _) in zip(sources, marked):
        text = [] if source is None else source.splitlines()
        body = []
        for n, (first, last, fps) in sorted(lines.items()):
            kind = "shared" if fps & common else ("stub" if not fps else "")
            body.append(f"<span class='{kind}'>" + html.escape("\n".join(text[first - 1:last])) + "</span>")
        columns.append("<pre>" + "\n".join(body) + "</pre>")
    return f"<h3>{html.escape(exercise)}</h3><div class='side'>{''.join(columns)}</div>"


@functools.lru_cache(maxsize=256)  # the page shows a few hundred pairs: bounded, not the class
def _source(path: str, module: str) -> str | None:
    return handins.source_of(path, module)


_STUBS: dict[str, dict[str, frozenset[int]]] = {}


def _stub(course: Catalog) -> dict[str, frozenset[int]]:
    key = str(course.path)
    if key not in _STUBS:
        _STUBS[key] = handins.stub_fingerprints(course)
    return _STUBS[key]


def _marked_lines(source: str | None, module: str, exercise: str, course: Catalog):
    return _marked(source, exercise, _stub(course).get(exercise, frozenset()))


@functools.lru_cache(maxsize=512)
def _marked(source: str | None, exercise: str, stub: frozenset[int]):
    """{first line: (first, last, own fingerprints)} of the exercise's definition, and all its fingerprints."""
    if source is None:
        return {}, set()
    try:
        tree = normalize.parse(source)
        units = normalize.exercise_units(tree, (exercise,)).get(exercise, [])
    except (SyntaxError, ValueError):
        return {}, set()
    node = [n for n in tree.body if getattr(n, "name", None) == exercise][-1:]
    lines = {}
    if node:
        lines[node[0].lineno] = (node[0].lineno, node[0].end_lineno, frozenset())  # stub-grey by default
        for line in range(node[0].lineno, node[0].end_lineno + 1):
            lines[line] = (line, line, frozenset())
    everything: set[int] = set()
    for u in units:
        own = frozenset(unit_fingerprints(u) - stub)
        everything |= own
        if u.first_line in lines:
            for line in range(u.first_line, u.last_line + 1):
                lines.pop(line, None)
            lines[u.first_line] = (u.first_line, u.last_line, own)
    return lines, everything
