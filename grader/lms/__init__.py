"""Scores into the LMS: gradebook exports and LTI 1.3 grade passback.

Instructor-only. Every command reads a directory of score files written by `grader grade`
(`DIR/<submission>.json`, see `grader/schema/score.schema.json`) and, for the gradebooks,
a roster CSV that says which student each submission belongs to.

Modules, one concern each:
- `scores`: load and validate the score files of a directory; score arithmetic and summaries.
- `roster`: read the roster CSV and check the columns an export needs.
- `matching`: pair roster rows with score files; list what could not be paired.
- `canvas`, `moodle`: gradebook import CSVs and the importer rules they follow.
- `lti`, `ledger`: LTI 1.3 Assignment and Grade Services passback, and the record of what
  was already posted (so a rerun posts nothing twice).
- `prairielearn`, `github_classroom`: per-submission results for those platforms.
- `cli`: the `grader export ...` and `grader publish ...` commands.

Every export reads its consumer's rules from the consumer's own source (cited in each
module's docstring), and every text a submission controls reaches it cleaned by
`grader.safetext` (the same function that cleans `grader grade`'s summary and summary.csv).

The optional packages (pylti1p3, jwcrypto, requests, jsonschema) are imported only inside
the commands that need them: students never install them.

The path of one test through the whole engine, and a glossary: docs/engine.md.
"""


from grader.errors import UsageError  # noqa: E402  (the bad-input family)


class LmsError(UsageError):
    """A problem with the instructor's input (score files, roster, keys, config).

    The message is written for the instructor: it names the file, the row or the setting.
    The CLI prints it and exits with status 2 without writing anything.
    """
