"""`grader report` and `grader feedback` as instructors run them, on a class graded for real."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys

import pytest

from conftest import ROOT
from grader.report.scores import page_name
from report_class import graded_class, hand_class, write_class  # noqa: F401  (fixture)


def run(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def report_html(graded_class, tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "report.html"
    result = run("report", str(graded_class), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert re.search(r"wrote .*report.html: 7 submissions, \d+ KiB, in [\d.]+ s", result.stderr)
    return out.read_text(encoding="utf-8")


def test_the_page_holds_every_section_and_nothing_from_the_network(report_html):
    for heading in ("Scores", "Exercises, hardest first", "Tests: pass rates", "Common mistakes",
                    "Submissions with problems", "Grading time and sandbox", "Submissions"):
        assert f"{heading} <span" in report_html, heading
    assert report_html.count("<svg ") == 5
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", report_html) and "@import" not in report_html
    assert "default-src 'none'" in report_html


def test_each_submission_links_to_its_feedback_page(report_html, graded_class):
    links = set(re.findall(r'<a href="feedback/([^"]+)\.html">', report_html))
    assert links == {p.stem for p in graded_class.glob("*.json")}


def test_problems_are_named(report_html):
    problems = report_html[report_html.index('id="problems"'):report_html.index('id="timing"')]
    assert re.search(r"<td>leaky</td><td>crash</td>", problems)
    assert re.search(r"<td>syntax_error</td><td>import error</td>", problems)
    assert "<td>reference</td>" not in problems


def test_the_report_counts_counterexamples_and_each_page_shows_its_own(report_html, graded_class, tmp_path):
    """The exercises table's counterexample column gives, per exercise, how many the class's score files hold
    and their sizes; the page each submission's name links to shows that submission's own, and only there."""
    reports = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(graded_class.glob("*.json"))]
    sizes: dict[str, list[int]] = {}
    for r in reports:
        for e in r["exercises"]:
            sizes.setdefault(e["name"], [])
            if e.get("counterexample"):
                sizes[e["name"]].append(e["counterexample"]["elements"])
    assert sum(map(len, sizes.values())) >= 2, sizes  # the class's learner mistakes lose on random inputs
    table = report_html[report_html.index('<h2 id="exercises">'):report_html.index('<h2 id="tests">')]
    for name, found in sizes.items():
        cell = re.search(rf"<tr><td>{name}</td>.*?<td class=\"n\">([^<]*)</td></tr>", table, re.S).group(1)
        assert cell == (f"{len(found)} ({', '.join(map(str, sorted(found)))} elements)" if found else "0"), name
    result = run("feedback", str(graded_class), "--out", str(tmp_path / "fb"))
    assert result.returncode == 0, result.stderr
    pages = {r["submission"]: (tmp_path / "fb" / f"{page_name(r['submission'])}.html").read_text(encoding="utf-8")
             for r in reports}
    snippets = {r["submission"]: [e["counterexample"] for e in r["exercises"] if e.get("counterexample")] for r in reports}
    for submission, page in pages.items():
        assert ("找到的最小反例" in page) == bool(snippets[submission]), submission
        text = page.replace("&#39;", "'").replace("&#34;", '"')
        for ce in snippets[submission]:
            assert html.escape(ce["snippet"], quote=False) in text and html.escape(ce["got"], quote=False) in text


def test_markdown_goes_to_the_terminal(graded_class):
    result = run("report", str(graded_class), "--format", "md")
    assert result.returncode == 0, result.stderr
    md = result.stdout
    assert md.startswith("# autograd-lab: class report")
    assert re.search(r"^\| 7 \| [\d.]+ \| [\d.]+ \| 1 \(14%\) \| 1 \(14%\) \| 100 \|$", md, re.M)   # reference, stubs
    assert re.search(r"^\| reference \| 100 \| 100\.0 \|", md, re.M)
    assert "<svg" not in md


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_public_summary_names_nobody(graded_class, fmt, tmp_path):
    out = tmp_path / f"public.{fmt}"
    result = run("report", str(graded_class), "--format", fmt, "--public", "--out", str(out))
    assert result.returncode == 0, result.stderr
    text = out.read_text(encoding="utf-8")
    for name in ("reference", "stubs", "leaky", "syntax_error", "wrong-", "feedback/"):
        assert name not in text
    assert "LEAKPRINT" not in text and "全部提交" not in text
    assert re.search(r"^\| crash \| 1 \|$" if fmt == "md" else r"<td>crash</td><td class=\"n\">1</td>", text, re.M)


def test_feedback_command(graded_class, tmp_path):
    result = run("feedback", str(graded_class), "--out", str(tmp_path / "fb"), "--format", "md")
    assert result.returncode == 0, result.stderr
    assert "wrote 7 feedback pages" in result.stderr
    assert sorted(p.name for p in (tmp_path / "fb").iterdir()) == sorted(p.stem + ".md" for p in graded_class.glob("*.json"))


def test_unusable_files_are_listed_not_counted(tmp_path):
    folder = write_class(hand_class(), tmp_path / "scores")
    (folder / "broken.json").write_text("{not json", encoding="utf-8")
    (folder / "other.json").write_text(json.dumps({"submission": "x"}), encoding="utf-8")
    (folder / "s1-copy.json").write_text((folder / "s1.json").read_text(encoding="utf-8"), encoding="utf-8")
    (folder / ".lti-ledger.json").write_text("{}", encoding="utf-8")
    result = run("report", str(folder), "--format", "md")
    assert result.returncode == 0, result.stderr
    assert "4 submissions from" in result.stdout              # s2 to s5: both files of s1 are set aside
    assert "broken.json: is not valid JSON" in result.stderr
    assert "other.json: does not match the score file schema: $: 'schema_version' is a required property" in result.stderr
    assert "submission 's1' is scored in several files" in result.stderr
    assert "4 score files were not used" in result.stdout and "ledger" not in result.stdout


def test_html_escapes_what_submissions_chose(tmp_path):
    reports = hand_class()
    reports[0]["submission"] = '<script>alert("x")</script>'
    reports[1]["exercises"][1]["tests"][1]["message"] = "<img src=x onerror=alert(1)> / 中文"
    folder = write_class(reports, tmp_path / "scores")
    result = run("report", str(folder), "--out", str(tmp_path / "r.html"))
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert '<script>alert("x")' not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page


@pytest.mark.parametrize("args, message", [
    (("report", "no/such/folder", "--out", "r.html"), "no such score file or folder"),
    (("report", "{empty}", "--out", "r.html"), "no score files (*.json) in this folder"),
    (("report", "{empty}"), "an HTML report needs --out FILE"),
    (("feedback", "no/such/folder", "--out", "fb"), "no such score file or folder"),
    (("diff", "{empty}", "no/such/folder"), "no score files"),
])
def test_bad_input_exits_2_with_a_message(args, message, tmp_path):
    (tmp_path / "empty").mkdir()
    result = run(*(a.replace("{empty}", str(tmp_path / "empty")) for a in args), cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr


def test_the_page_says_which_mistakes_only_show_on_a_device_naming_the_demos_samples(tmp_path):
    """`make demo` grades its samples on the CPU, where the device-specific learner mistakes (DEVICE = "cuda") are
    right and score full marks: the page names each such mistake and the class's samples of it, and says nothing
    of the mistakes that show everywhere, nor anything once the class was graded on the GPU."""
    from conftest import COURSE
    from grader import catalog
    from lms_factory import MAX_SCORE, make_score

    corpus = catalog.learner_mistakes(COURSE.place("learner_mistakes"))
    device_only = {name: e for name, e in corpus.items() if catalog.device_only(e) == "cuda"}
    everywhere = next(name for name, e in corpus.items() if not catalog.device_only(e))
    assert device_only
    scores = tmp_path / "scores"
    scores.mkdir()
    samples = {name: f"{catalog.SAMPLE_PREFIX}{name}-001" for name in [*device_only, everywhere]}

    def write_class(device: str) -> str:
        for submission in [*samples.values(), "ada"]:
            data = {**make_score(submission), "device": device}
            (scores / f"{submission}.json").write_text(json.dumps(data), encoding="utf-8")
        out = tmp_path / f"report-{device}.html"
        result = run("report", str(scores), "--out", str(out))
        assert result.returncode == 0, result.stderr
        return out.read_text(encoding="utf-8")

    page = write_class("cpu")
    block = re.search(r'<div class="note" id="device-only">(.*?)</div>', page, re.S)
    assert block, "no note on the device-specific mistakes"
    block = block.group(1)
    assert f"{len(device_only)} of the course's learner mistakes show on cuda" in block and "graded on cpu" in block
    assert "scores full marks" in block and "得满分" in block
    for name, entry in device_only.items():
        assert f"<code>{entry['MISTAKE']}</code>" in block and f"<b>{samples[name]}</b> {MAX_SCORE:g}/{MAX_SCORE:g}" in block
    assert samples[everywhere] not in block and corpus[everywhere]["MISTAKE"] not in block and ">ada<" not in block
    assert 'id="device-only"' not in write_class("cuda")
    out = tmp_path / "public.html"
    write_class("cpu")
    assert run("report", str(scores), "--out", str(out), "--public").returncode == 0
    public = out.read_text(encoding="utf-8")
    assert 'id="device-only"' in public and not any(s in public for s in samples.values())
