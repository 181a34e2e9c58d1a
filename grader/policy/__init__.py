"""Course policy between the raw score and the grade: deadlines, late penalties, extensions,
overrides (`grader gradebook`) and resubmission limits (the Gradescope autograder, the otter plugin).

`grader gradebook SCORES --policy policy.yaml --out FINAL` reads the score files of `grader grade`
and writes FINAL: the same score files with `raw_score`, `adjustments` and `submitted_at` added and
`score` the grade, which every export reads as it reads SCORES.

Modules, one concern each:
- `timeutil`: ISO 8601 times with a time zone, and durations in words.
- `config`: policy.yaml, validated; an error names the key and its line.
- `tables`: the CSV files a policy names (hand-in times, extensions, overrides).
- `handin`: when each submission was handed in: a CSV, Gradescope's `submission_metadata.json`
  (`created_at`), or the last commit of a git repository (GitHub Classroom).
- `adjust`: one score file through the policy: exercise overrides, the late penalty, a total
  override, the clamped total.
- `gradebook`: a folder of score files through the policy into FINAL, with FINAL/summary.csv.
- `limits`: `--max-submissions N [--window HOURS]`: which Gradescope submissions are graded.
- `cli`: the `grader gradebook` command.

The path of one test through the whole engine, and a glossary: docs/engine.md.
"""


from grader.errors import UsageError  # noqa: E402  (the bad-input family)


class PolicyError(UsageError):
    """Bad input from the instructor (policy file, CSV, score folder): the message names the file,
    the line and the key. The CLI prints it and exits with status 2 without writing anything
    (one of the bad-input family, `grader.errors.UsageError`)."""
