"""What a student may read of their own score file, and nothing else.

A feedback page never shows the submission's captured `output`, and never any text a submission
could have shaped while it held a hidden test's inputs (docs/scoring.md, "What a student sees"). A
hidden test's message is such text as soon as it quotes the submission: an exception it raised
("hvp raised ValueError: <anything>"), an exit status, a type or key it chose, a time or memory
figure it can steer. So a hidden test shows, besides its name, status and points:
- its `mistake` (the course's English and Chinese text) when the score file names one;
- its message only when the whole message is a fixed text of the test cases (a string literal of
  grader/cases/) or one of the submission's own errors the page lists anyway (an import error);
  of a known mistake's message, the mistake's text (literals too); of an exception, only
  "<function> raised <a Python built-in exception>" and the grader's hint for torch's error;
- a "points withheld" sentence (no points without work), which names only the course's general tests;
- otherwise a fixed sentence for its status, a passed one's included.
Tests of one exercise that failed with the same message get the general tests' diagnosis, and a
message does not repeat the mistake shown above it.
- its hint: the test's docstring, written by the instructor.
Public tests show their whole message: their inputs are public.
"""

from __future__ import annotations

import ast
import builtins
import re
from functools import lru_cache
from pathlib import Path

from itertools import combinations

from grader import catalog
from grader.display import withheld_message

CASES_DIR = Path(__file__).resolve().parent / "cases"
BUILTIN_EXCEPTIONS = frozenset(n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException))
WRONG_VALUES = re.compile(r"^(?P<en>.+) has wrong values / (?P<zh>.+) 的数值不对$")
RAISED = re.compile(r"^(?P<function>[A-Za-z_]\w*) raised (?P<exception>[A-Za-z_]\w*)(?::|$)")

STATUS_TEXT = {  # one for every status of the score file schema
    "passed": ("the hidden check passed", "隐藏测试的检查通过了"),
    "failed": ("a hidden check did not pass", "隐藏测试的检查未通过"),
    "error": ("the test could not check a result: the code raised an error, crashed or could not be imported",
              "测试无法检查结果：代码抛出了错误、崩溃或无法导入"),
    "timeout": ("the code did not finish within the time limit", "代码未在时限内完成"),
}


def case_sources() -> list[Path]:
    """The Python files messages come from: the package's cases (the kit) and the course's tests."""
    try:
        course = [p for p in catalog.course_files(catalog.load()).values() if p.suffix == ".py"]
    except catalog.CatalogError:
        course = []
    return sorted(set(CASES_DIR.rglob("*.py")) | set(course))


@lru_cache(maxsize=1)
def fixed_texts() -> frozenset[str]:
    """Every string literal of the test cases long enough to be a message (f-strings are not literals)."""
    return frozenset({t for t in labels() if len(t) >= 12 and " " in t} | mistake_texts() | withheld_texts())


@lru_cache(maxsize=1)
def withheld_texts() -> frozenset[str]:
    """Every "points withheld" sentence the scoring can write: it names only the course's general tests."""
    try:
        course = catalog.load()
    except catalog.CatalogError:
        return frozenset()
    return frozenset(withheld_message(list(waiting)) for e in course.exercises
                     for size in range(1, len(e.general) + 1) for waiting in combinations(e.general, size))


@lru_cache(maxsize=1)
def mistake_texts() -> frozenset[str]:
    """The English and Chinese texts of the course's mistakes, each also as "en / zh" (a `{arg}` in a
    text is kept as written; `_fixed_line` matches it against any argument name)."""
    try:
        course = catalog.load()
    except catalog.CatalogError:
        return frozenset()
    texts = set()
    for m in [*course.common_mistakes.values(), *(m for e in course.exercises for m in e.mistakes.values())]:
        texts.update((m.en, m.zh, f"{m.en} / {m.zh}"))
    return frozenset(texts)


@lru_cache(maxsize=1)
def _templates() -> tuple[re.Pattern, ...]:
    """Course texts that name the argument involved (`{arg}`), as patterns."""
    return tuple(re.compile("^" + re.escape(t).replace(re.escape("{arg}"), r"[A-Za-z_]\w{0,30}") + "$")
                 for t in mistake_texts() if "{arg}" in t)


@lru_cache(maxsize=1)
def labels() -> frozenset[str]:
    """Every string literal of the test cases, short ones included: the labels messages are built from."""
    found = set()
    for path in case_sources():
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, UnicodeDecodeError):
            continue
        found.update(node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str))
    return frozenset(found)


def _label(text: str) -> bool:
    return text in labels() or bool(re.fullmatch(r"derivative \d+|\d+ 阶导数", text))


def _fixed_line(line: str, fixed: frozenset[str]) -> bool:
    """A line made of the grader's own texts only: a literal of the cases or the course file's mistakes,
    "en / zh" of two such texts, or "<label> has wrong values / <标签> 的数值不对"."""
    if line in fixed or any(t.match(line) for t in _templates()):
        return True
    en, slash, zh = line.rpartition(" / ")
    if slash and en in fixed and zh in fixed:
        return True
    match = WRONG_VALUES.match(line)
    return bool(match) and _label(match["en"]) and _label(match["zh"])


def hidden_message(test: dict, exercise_names: set[str], fixed: frozenset[str], problems: tuple[str, ...] = ()) -> str:
    """The part of a hidden test's message a student may read; "" when there is none. `problems`:
    the submission's own errors (a module that could not be imported...), which the page shows anyway."""
    message = test.get("message", "")
    lines = message.splitlines()
    if message in fixed or message in problems:
        return message
    _, colon, rest = lines[0].partition(": ") if lines else ("", "", "")
    en, slash, zh = rest.rpartition(" / ")
    if colon and slash and en in fixed and zh in fixed:  # "<what> has wrong values: <a known mistake, en / zh>"
        return f"{en} / {zh}"
    match = RAISED.match(lines[0]) if lines else None
    if match and match["function"] in exercise_names and match["exception"] in BUILTIN_EXCEPTIONS:
        hint = next((line for line in lines[1:] if line.startswith("Hint: ")), "")
        en, _, zh = hint.removeprefix("Hint: ").partition(" / ")
        shown = f"{match['function']} raised {match['exception']}"
        return shown + (f"\n{hint}" if hint and en in fixed and zh in fixed else "")
    if lines and all(_fixed_line(line, fixed) for line in lines):
        return message
    return ""


def shown_message(test: dict, exercise_names: set[str], fixed: frozenset[str], problems: tuple[str, ...] = ()) -> str:
    """A test's message as its student may read it: whole for a public test; for a hidden one,
    the readable part or the fixed sentence for its status."""
    if test["visibility"] != "hidden":
        return test.get("message", "")
    return hidden_message(test, exercise_names, fixed, problems) or " / ".join(STATUS_TEXT[test["status"]])


def has_cjk(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


def split_languages(text: str) -> tuple[str, str]:
    """A hint ("English\\n中文") or a message ("English / 中文") as (English, Chinese)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) >= 2 and has_cjk(lines[-1]):
        return "\n".join(lines[:-1]), lines[-1]
    return text, ""


def without_mistake(message: str, mistake: dict) -> str:
    """The message less the mistake's own text, which the page shows above it ("<what> has wrong
    values: en / zh" keeps "<what> has wrong values")."""
    texts = {str(mistake.get("en", "")), str(mistake.get("zh", "")), f"{mistake.get('en', '')} / {mistake.get('zh', '')}"}
    kept = []
    for line in message.splitlines():
        if line in texts:
            continue
        kept.append(next((line.removesuffix(": " + t) for t in texts if t and line.endswith(": " + t)), line))
    return "\n".join(kept)


def test_view(test: dict, exercise_names: set[str], fixed: frozenset[str], problems: tuple[str, ...] = ()) -> dict:
    hidden = test["visibility"] == "hidden"
    mistake = test.get("mistake") if isinstance(test.get("mistake"), dict) else None
    message = hidden_message(test, exercise_names, fixed, problems) if hidden and mistake else \
        shown_message(test, exercise_names, fixed, problems)
    if mistake:
        message = without_mistake(message, mistake)
    hint_en, hint_zh = split_languages(test.get("hint", ""))
    return {
        "name": test["name"],
        "hidden": hidden,
        "status": test["status"],
        "score": test["score"],
        "max_score": test["max_score"],
        "message": message,
        "mistake": {k: str(mistake.get(k, "")) for k in ("id", "en", "zh")} if mistake else None,
        "hint_en": hint_en,
        "hint_zh": hint_zh,
    }


def grouped(views: list[dict]) -> list[dict]:
    """The parameter cases of one test that failed the same way, as one entry: `name` without its
    parameters, `cases` the parameter ids, points summed."""
    groups: dict[tuple, dict] = {}
    for v in views:
        base, bracket, params = v["name"].partition("[")
        key = (base, v["hidden"], v["status"], v["message"], repr(v["mistake"]), v["hint_en"], v["hint_zh"])
        group = groups.get(key) or groups.setdefault(key, {**v, "name": base, "cases": [], "score": 0, "max_score": 0})
        if bracket:
            group["cases"].append(params.removesuffix("]"))
        group["score"] = round(group["score"] + v["score"], 4)
        group["max_score"] = round(group["max_score"] + v["max_score"], 4)
    return list(groups.values())


def general_tests() -> dict[str, tuple[str, ...]]:
    """Each exercise's general tests (the course file); none when the course cannot be read."""
    try:
        return {e.name: e.general for e in catalog.load().exercises}
    except catalog.CatalogError:
        return {}


def one_diagnosis_per_error(tests: list[dict], general: tuple[str, ...]) -> list[dict]:
    """Tests of one exercise that failed with the same message get one diagnosis: the general
    tests' (the exercise's main case), not the guess of a test whose inputs make the same error
    look like another mistake (an hvp without create_graph fails a linear f's test too)."""
    diagnosed = {t["message"]: t["mistake"] for t in tests if t["name"].partition("[")[0] in general
                 and t["status"] != "passed" and isinstance(t.get("mistake"), dict) and t.get("message")}
    return [{**t, "mistake": diagnosed[t["message"]]} if isinstance(t.get("mistake"), dict)
            and t["status"] != "passed" and t.get("message") in diagnosed else t for t in tests]


COUNTEREXAMPLE_FIELDS = ("snippet", "expected", "got", "reason")


def counterexample_view(counterexample) -> dict | None:
    """A failed exercise's counterexample: shown whole. Its input is a fresh one the search drew (never a
    hidden test's), and the code that answered ran in a fresh worker that never held a hidden input, so
    what it returned or raised carries none."""
    if not isinstance(counterexample, dict) or not isinstance(counterexample.get("snippet"), str):
        return None
    view = {k: str(counterexample[k]) for k in COUNTEREXAMPLE_FIELDS if counterexample.get(k) is not None}
    mistake = counterexample.get("mistake")
    if isinstance(mistake, dict) and isinstance(mistake.get("id"), str):
        view["mistake"] = {k: str(mistake.get(k, "")) for k in ("id", "en", "zh")}
    return view


def student_view(report: dict, fixed: frozenset[str] | None = None) -> dict:
    """The fields of a score file a feedback page is made of. Nothing else reaches the page."""
    fixed = fixed_texts() if fixed is None else fixed
    names = {e["name"] for e in report["exercises"]}
    problems = tuple(report.get("submission_errors", []))
    general = general_tests()
    exercises = []
    for e in report["exercises"]:
        tests = one_diagnosis_per_error(e["tests"], general.get(e["name"], ()))
        not_passed = [test_view(t, names, fixed, problems) for t in tests if t["status"] != "passed"]
        exercises.append({
            "name": e["name"], "module": e.get("module", ""), "score": e["score"], "max_score": e["max_score"],
            "passed": len(e["tests"]) - len(not_passed), "tests": len(e["tests"]), "not_passed": grouped(not_passed),
            "counterexample": counterexample_view(e.get("counterexample")),
        })
    adjustments = [{"kind": str(a.get("kind", "")), "points": a.get("points", 0), "reason": str(a.get("reason", ""))}
                   for a in report.get("adjustments", []) if isinstance(a, dict)]
    return {
        "submission": report["submission"],
        "score": report["score"],
        "max_score": report["max_score"],
        "raw_score": report.get("raw_score"),
        "adjustments": adjustments,
        "submitted_at": report.get("submitted_at"),
        "problems": list(problems),
        "exercises": exercises,
        "recorded": {k: report[k] for k in ("seed", "grader_version", "graded_at", "device", "torch_version",
                                            "tests_sha256") if k in report},
    }
