"""otter-grader 7.0.0 integration: `grader export otter`, `grader export otter-check`, and the plugin.

`grader export otter --out autograder.zip` writes an otter autograder zip made by otter's own
`otter generate`: one otter question per exercise (one case per test of the course file, with its
points), an `otter_config.json` that registers `AutogradLabPlugin`, requirements with a CPU torch
and this package, and the package source under `autograd_lab/`. `otter run -a autograder.zip
submission.zip` (and Gradescope, with the same zip) grades with it.

Otter runs a submission in a Jupyter kernel and runs its tests in that same kernel, so a submission
can patch torch, the test runner or the pickle that carries the results. The plugin keeps every
student-written byte out of otter's processes:

* `before_grading` (runs before otter reads `.OTTER_LOG` or starts the kernel) reads the course's
  modules into memory, then empties the submission folder, which is the kernel's working
  directory and so on its import path: planted `.OTTER_LOG` files, packages that would shadow
  `otter` or `torch`, everything but otter's fresh copy of the tests and a harmless stand-in for
  the file otter resolved. It also switches off grading from logs and PDFs, and sets
  PYTHONSAFEPATH so the kernel's launcher is not looked up in that folder.
* `before_execution` hands otter a one-cell notebook that does nothing in place of the submission.
  The questions' cases in the kernel are placeholders that always fail: without the plugin every
  score is 0, never a student's choice.
* `after_grading` grades the snapshot with the sandboxed engine (the student's modules run in its
  worker process, never in otter's), rebuilds every question's case results from the score file,
  and sets each question's score with `GradingResults.update_score`: otter reports exactly the
  per-exercise scores of `grader grade`.

For students whose course uses otter, `grader export otter-check` writes `otter-tests/` (the public
tests as otter questions, each case asking the engine as `grader check` does) and the root file
`autograd_lab.py`: `otter check autograd_lab.py -t otter-tests`, or `otter.Notebook(tests_dir=
"otter-tests").check("hvp")` in a notebook, gives `grader check`'s pass/fail per exercise.

Importing otter takes a second, and students need not have it: this module imports it only when
the plugin class is first asked for (`AutogradLabPlugin`, built on first attribute access).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import traceback
import zipfile
from pathlib import Path

from grader import catalog, score_files
from grader.errors import UsageError
from grader.exports import gradescope
from grader.exports.bundle import add_course_option, write_zip
from grader.exports.gradescope import (add_grading_options, case_output, counterexample_output, requirements_txt, source_files,
                                       student_summary, submission_limit)
from grader.exports.submit import ROOT_FILE, ROOT_FILE_SOURCE
from grader.host import intake

PLUGIN = f"{__name__}.AutogradLabPlugin"
STUDENT_TESTS = "otter-tests"
PLACEHOLDER = "# autograd-lab: this submission is graded in autograd-lab's sandbox, not in this kernel.\n"
NOT_HERE = ("graded in autograd-lab's sandbox, not in otter's kernel: this placeholder never passes; "
            "the plugin sets the score")

CHECK_README = """\
# Checking your work with otter / 用 otter 检查

Unpack this zip next to your `exercises/` folder, then run the public tests:
把本 zip 解压到 `exercises/` 文件夹旁边，然后运行公开测试：

    otter check {root_file} -t {tests}               # every exercise / 全部习题
    otter check {root_file} -t {tests} -q {example}        # one exercise / 单个习题

In a notebook in the same folder / 在同一文件夹中的 notebook 里：

    import otter
    grader = otter.Notebook(tests_dir="{tests}")
    grader.check("{example}")

The results are those of `grader check`. Hand in the zip that `grader submit` makes.
结果与 `grader check` 相同。请提交 `grader submit` 生成的 zip。
"""


# ============================================================================= export

def register(commands, exports) -> None:
    p = exports.add_parser("otter", help="an otter-grader autograder zip whose scores come from the sandboxed engine")
    p.add_argument("--out", required=True, type=Path, help="the .zip to write")
    add_grading_options(p)
    p.add_argument("--python-version", default=None, metavar="X.Y",
                   help="Python of otter's grading image on Gradescope (default: otter's own, 3.13)")
    p.set_defaults(func=cmd_export_otter)

    p = exports.add_parser("otter-check", help="for students of an otter course: public tests as otter questions")
    p.add_argument("--out", required=True, type=Path, help="the .zip to write")
    add_course_option(p)
    p.set_defaults(func=cmd_export_otter_check)


def cmd_export_otter(args) -> int:
    catalog.use(args.course)
    out = build_otter_zip(args.out, seed=args.seed, device=args.device, python_version=args.python_version,
                          limit=submission_limit(args))
    print(f"wrote {out}: `otter run -a {out} SUBMISSION.zip` grades one submission; upload it to Gradescope as an "
          f"otter autograder. Students submit the zip that `grader submit` makes.")
    return 0


def cmd_export_otter_check(args) -> int:
    catalog.use(args.course)
    out = build_check_zip(args.out)
    print(f"wrote {out}: students unpack it next to exercises/ and run `otter check {ROOT_FILE} -t {STUDENT_TESTS}`")
    return 0


def otter_config(seed: int, device: str, limit=None) -> dict:
    return {
        "lang": "python",
        "plugins": [{PLUGIN: {"seed": seed, "device": device, **(limit.as_config() if limit else {})}}],
        "show_hidden": True,  # question results after_published, as the hidden cases of `grader export gradescope`
    }


def question_file(exercise: catalog.Exercise, student: bool) -> str:
    """An otter exception-format test file for one exercise: one case per test of the course file.

    Instructor (student=False): every test, hidden ones hidden, each case a placeholder that fails.
    Student: the public tests, each case asking the engine through `public_check`."""
    kind = "its public tests, for `otter check`" if student else "placeholders; the plugin sets the score"
    lines = [
        f'"""Otter question `{exercise.name}` ({exercise.module}): {kind}.',
        "",
        "Made by autograd-lab's `grader export`. Nothing is compared in otter's kernel: "
        + ("each case asks autograd-lab's sandboxed engine, as `grader check` does." if student else
           "autograd-lab's plugin grades\nthe submission in its sandbox and sets this question's score."),
        '"""',
        "",
        "from otter.test_files import test_case",
        "",
        "OK_FORMAT = False",
        f"name = {exercise.name!r}",
        "all_or_nothing = False",
        f"NOT_HERE = {NOT_HERE!r}" if not student else "",
    ]
    tests = [t for t in exercise.tests if t.folder == "public" or not student]
    for i, t in enumerate(tests, 1):
        lines += ["", "",
                  f"@test_case(name={t.name!r}, points={t.points!r}, hidden={t.folder == 'hidden'})"]
        if student:
            lines += [f"def case_{i}(env):",
                      "    from grader.exports.otter import public_check",
                      f"    public_check(env, {exercise.name!r}, {t.name!r})"]
        else:
            lines += [f"def case_{i}():", "    raise AssertionError(NOT_HERE)"]
    return "\n".join(lines) + "\n"


def _otter_generate():
    try:
        from otter.generate import main
    except ImportError:
        raise UsageError("this export needs otter-grader: pip install 'autograd-lab[otter]'") from None
    return main


def build_otter_zip(out: Path, seed: int = 0, device: str = "cpu", python_version: str | None = None,
                    limit=None) -> Path:
    """The autograder zip, made by otter's own `otter generate`, plus the package source."""
    otter_generate = _otter_generate()
    out = Path(out)
    with tempfile.TemporaryDirectory(prefix="autograd-lab-otter-") as tmp:
        tmp = Path(tmp)
        (tmp / "tests").mkdir()
        for exercise in catalog.load().exercises:
            (tmp / "tests" / f"{exercise.name}.py").write_text(question_file(exercise, student=False), encoding="utf-8")
        (tmp / "otter_config.json").write_text(json.dumps(otter_config(seed, device, limit), indent=2), encoding="utf-8")
        (tmp / "requirements.txt").write_text(requirements_txt(), encoding="utf-8")
        built = tmp / "autograder.zip"
        otter_generate(tests_dir=str(tmp / "tests"), output_path=str(built), config=str(tmp / "otter_config.json"),
                       requirements=str(tmp / "requirements.txt"), no_environment=True,
                       python_version=python_version)
        with zipfile.ZipFile(built, "a", zipfile.ZIP_DEFLATED) as zf:
            for name, data in source_files(catalog.load()).items():
                zf.writestr(name, data)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(built, out)
    return out


def build_check_zip(out: Path) -> Path:
    checked = [e for e in catalog.load().exercises if any(t.folder == "public" for t in e.tests)]
    readme = CHECK_README.format(root_file=ROOT_FILE, tests=STUDENT_TESTS, example=checked[0].name if checked else "NAME")
    files = {ROOT_FILE: ROOT_FILE_SOURCE.encode(), "OTTER-CHECK.md": readme.encode()}
    for exercise in catalog.load().exercises:
        if any(t.folder == "public" for t in exercise.tests):
            files[f"{STUDENT_TESTS}/{exercise.name}.py"] = question_file(exercise, student=True).encode()
    return write_zip(out, files)


# ============================================================================= students: otter check

_public_reports: dict[tuple[str, str], dict] = {}


def public_check(env, exercise: str, test: str) -> None:
    """One public test of `exercise`, run as `grader check` runs it; AssertionError unless it passed.

    The folder checked is the `EXERCISES` variable of the file otter checks (`autograd_lab.py`
    sets it), else ./exercises, else the working directory. One engine run serves every case of
    an `otter check`: the public report is kept while the modules do not change."""
    folder = _exercises_folder(env)
    report = _public_report(folder)
    items = [t for e in report["exercises"] if e["name"] == exercise
             for t in e["tests"] if t["name"].split("[")[0] == test]
    if not items:
        problems = "; ".join(report.get("submission_errors", [])) or f"{test} is not a public test of {exercise}"
        raise AssertionError(f"{test} did not run: {problems}")
    failed = [t for t in items if t["status"] != "passed"]
    if failed:
        raise AssertionError("\n".join(f"{t['name']}: {case_output(t, report)}" for t in failed))


def _exercises_folder(env) -> Path:
    named = env.get("EXERCISES") if isinstance(env, dict) else None
    if isinstance(named, str) and named:
        return Path(named)
    return Path("exercises") if Path("exercises").is_dir() else Path(".")


def _public_report(folder: Path) -> dict:
    from grader.host.runner import Engine, Options

    sub = intake.load(folder)
    key = (str(folder.resolve()), sub.sha256)
    if key not in _public_reports:
        engine = Engine(Options(seed=0, folders=("public",)))  # what `grader check` runs
        try:
            report = engine.grade_loaded(sub)
        finally:
            engine.close()
        _public_reports.clear()
        _public_reports[key] = report
    return _public_reports[key]


# ============================================================================= the plugin

class PluginLogic:
    """What AutogradLabPlugin does; the class otter loads adds otter's AbstractOtterPlugin."""

    def __init__(self, submission_path, submission_metadata, plugin_config):
        super().__init__(submission_path, submission_metadata, plugin_config)
        self.snapshot: intake.Submission | None = None
        self.report: dict | None = None
        self.autograder_dir: Path | None = None
        self.course: Path | None = None  # the zip's course file, which grades (never the installed checkout's)
        self.course_copy: str | None = None  # where it is copied when another grader package runs the zip

    # -- before otter reads the log or starts its kernel -----------------------------------
    def before_grading(self, config) -> None:
        folder = Path(self.submission_path).parent
        self.snapshot = intake.load(folder)
        self.autograder_dir = Path(config.autograder_dir).resolve()
        self.course = gradescope.zip_course(self.autograder_dir)
        if self.course is not None:  # the zip's course, tests and points: what Gradescope grades with
            self.course_copy = tempfile.mkdtemp(prefix="autograd-lab-zip-course-")
            catalog.use(gradescope.course_to_grade(self.course, Path(self.course_copy)))
        clear_submission_folder(folder, Path(self.submission_path), self.autograder_dir / "source" / "tests")
        config.grade_from_log = False
        config.serialized_variables = None
        config.pdf = False
        config.use_submission_pdf = False
        config.token = None
        # The kernel starts as `python -m ipykernel_launcher` in the submission folder: never look
        # the launcher up there. And nothing in this process imports from a relative path.
        os.environ["PYTHONSAFEPATH"] = "1"
        sys.path[:] = [p for p in sys.path if p and os.path.isabs(p)]

    def before_execution(self, submission_nb):
        import nbformat

        return nbformat.v4.new_notebook(
            cells=[nbformat.v4.new_code_cell(PLACEHOLDER)],
            metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})

    # -- after otter's kernel is done ------------------------------------------------------
    def after_grading(self, results) -> None:
        from grader.host.runner import Options, failure_report
        from grader.policy import limits

        config = self.plugin_config or {}
        seed, device = int(config.get("seed", 0)), config.get("device", "cpu")
        limit = limits.Limit.from_config(config)
        verdict = limits.decide(self.submission_metadata, limit) if limit else None
        if verdict and not verdict.graded:
            self._drop_course_copy()
            return keep_last_graded(results, verdict.kept, verdict.note)
        try:
            if self.snapshot is None:
                raise RuntimeError("the plugin's before_grading did not run, so nothing was read to grade")
            gradescope.protect_hidden_tests(self.autograder_dir, self.course)
            self.report = gradescope.grade(self.snapshot, seed=seed, device=device,
                                           secrets=gradescope.secret_paths(self.autograder_dir),
                                           course=catalog.active_path() if self.course else None)
        except Exception:
            self.report = failure_report("submission", Options(seed=seed), "internal grader error:\n"
                                         + traceback.format_exc()[-3000:])
        finally:
            self._drop_course_copy()
        if score_files.is_ungradable(self.report):
            return self._ungradable(results)
        results.results = {e["name"]: question_result(e, self.report) for e in self.report["exercises"]}
        results._catastrophic_error = None  # the kernel ran only placeholders: its outcome counts for nothing
        for exercise in self.report["exercises"]:
            results.update_score(exercise["name"], exercise["score"])
        results.set_output(student_summary(self.report) + (f"\n{verdict.note}" if verdict else ""))
        results.set_plugin_data(PLUGIN, self.report)

    def _ungradable(self, results) -> None:
        """A submission the grader could not grade honestly (docs/scoring.md) gets no score of its own: with an
        earlier graded submission in the metadata, that one's scores stand, the reason first (no attempt for
        the limit); without one, `NotGraded` leaves otter without results, so that it writes no results.json
        (otter writes one only for its own errors), which Gradescope reports as an autograder error, not a 0."""
        from grader.policy import limits

        reason = student_summary(self.report)
        kept = limits.last_graded(self.submission_metadata)
        if kept is None:
            raise NotGraded(reason)
        keep_last_graded(results, kept, reason + "\n" + limits.score_stays(kept))

    def _drop_course_copy(self) -> None:
        if self.course_copy:
            shutil.rmtree(self.course_copy, ignore_errors=True)
            self.course_copy = None

    def generate_report(self) -> str:
        import grader

        if self.report is None:
            return "autograd-lab: nothing was graded"
        r = self.report
        lines = [f"autograd-lab {grader.__version__} ({os.path.dirname(os.path.abspath(grader.__file__))}) graded "
                 f"this submission in its sandbox ({r.get('sandbox', {}).get('backend', 'unknown')}, device "
                 f"{r['device']}, seed {r.get('seed')}): {r['score']:g}/{r['max_score']:g}"]
        lines.append(f"  course: {self.course} (the autograder zip's own)" if self.course else
                     f"  course: {catalog.load().path} (the installed grader's: this zip carries none)")
        lines += [f"  {e['name']:<28}{e['score']:g}/{e['max_score']:g}" for e in r["exercises"]]
        lines += [f"  ! {p}" for p in r.get("submission_errors", [])]
        return "\n".join(lines)


def clear_submission_folder(folder: Path, resolved: Path, trusted_tests: Path) -> None:
    """Leave in the kernel's folder only the zip's own tests and a harmless stand-in for the file
    otter resolved (otter reads it once more before `before_execution` replaces it)."""
    for entry in list(folder.iterdir()):
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    if trusted_tests.is_dir():
        shutil.copytree(trusted_tests, folder / "tests")
    if resolved.suffix == ".ipynb":
        import nbformat

        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(PLACEHOLDER)]), str(resolved))
    else:
        resolved.write_text(PLACEHOLDER, encoding="utf-8")


class NotGraded(Exception):
    """The submission could not be graded and there is no earlier score to keep: otter writes no results."""


def keep_last_graded(results, kept: dict, note: str) -> None:
    """Past the submission limit, or ungradable: nothing of this submission is scored; each question gets the
    last graded submission's (`kept`, grader.policy.limits) score and the student reads why (`note`)."""
    from otter.test_files.abstract_test import TestCase, TestCaseResult
    from otter.test_files.exception_test import ExceptionTestFile

    from grader.policy.limits import kept_question_scores

    exercises = catalog.load().exercises
    scores, own = kept_question_scores(kept, {e.name: e.max_score for e in exercises})
    message = "not graded; the score is your last graded submission's / 未评分；成绩为上次评分的提交的成绩"
    results.results = {}
    for exercise in exercises:
        cases = [TestCase(name=t.name, body=None, hidden=t.folder == "hidden", points=t.points, success_message=None,
                          failure_message=None) for t in exercise.tests]
        question = ExceptionTestFile(exercise.name, f"tests/{exercise.name}.py", cases, all_or_nothing=False)
        question.test_case_results = [TestCaseResult(test_case=c, message=message, passed=False) for c in cases]
        results.results[exercise.name] = question
        results.update_score(exercise.name, scores[exercise.name])
    results._catastrophic_error = None
    results.set_output(note + ("" if own else "\n(The kept score's split over the exercises is not "
                                                      "known: it is shown spread over them in order.)"))


def question_result(exercise: dict, report: dict):
    """An otter TestFile for one exercise of `report` (a score file): one case per test, its results
    from the engine, its messages as the student may read them (gradescope.case_output)."""
    from otter.test_files.abstract_test import TestCase, TestCaseResult
    from otter.test_files.exception_test import ExceptionTestFile

    points = {(t.visibility, t.name): t.points for t in catalog.load().exercise(exercise["name"]).tests}
    by_test: dict[tuple[str, str], list[dict]] = {}
    for t in exercise["tests"]:
        by_test.setdefault((t["visibility"], t["name"].split("[")[0]), []).append(t)
    cases, outcomes = [], []
    for (visibility, name), items in by_test.items():
        case = TestCase(name=name, body=None, hidden=visibility == "hidden", points=points[visibility, name],
                        success_message=None, failure_message=None)
        failed = [t for t in items if t["status"] != "passed"]
        message = ("❌ " + "\n".join(f"{t['name']}: {case_output(t, report)}" for t in failed)) if failed else "✅ passed"
        if failed and visibility == "hidden" and not any(not o.passed and o.test_case.hidden for o in outcomes):
            message += counterexample_output(exercise)  # on the exercise's first failed hidden case
        cases.append(case)
        outcomes.append(TestCaseResult(test_case=case, message=message, passed=not failed))
    question = ExceptionTestFile(exercise["name"], f"tests/{exercise['name']}.py", cases, all_or_nothing=False)
    question.test_case_results = outcomes
    return question


def _plugin_class():
    from otter.plugins import AbstractOtterPlugin

    cls = type("AutogradLabPlugin", (PluginLogic, AbstractOtterPlugin), {
        "__module__": __name__,
        "__doc__": "Otter plugin: scores from autograd-lab's sandboxed engine; nothing student-written runs in otter.",
    })
    return cls


def __getattr__(name: str):
    if name == "AutogradLabPlugin":
        cls = globals()[name] = _plugin_class()
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
