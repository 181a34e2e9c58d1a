"""Seeing a graded class: `grader report`, `grader feedback` and `grader diff`.

Instructor-side and read-only: these commands read the score files `grader grade` wrote and
never grade, import student code or touch the engine. Modules, one concern each:
- `scores`: find and read the score files of a folder; list those that cannot be used.
- `figures`: the class's figures (distribution, exercises, tests, mistakes, problems, timing).
- `plots`: those figures as inline SVG charts (matplotlib).
- (`grader.student_view`, shared with the Gradescope and otter exports: what a student may read of their own score file.)
- `pages`: the jinja2 templates and filters every page is written with.
- `class_report`, `feedback`, `diff`: the three commands; `cli` registers them.

The path of one test through the whole engine, and a glossary: docs/engine.md.
"""


from grader.errors import UsageError  # noqa: E402  (the bad-input family)


class ReportError(UsageError):
    """Bad input from the instructor (no score files, an unwritable folder): printed, exit 2."""
