"""Bad input is one family, printed one way: `grader: error: <message>` on stderr, exit status 2.

Each kind of the family (`grader.errors.UsageError`: a course file, score files, a policy, a report's
options, an LMS roster, a file that cannot be written) comes from a real command line here, run by
`grader.cli.main` as the `grader` command runs it; none of them prints a traceback or another prefix.
"""

from __future__ import annotations

import pytest

from grader import catalog, cli, errors, lms, policy, report, score_files

from report_class import hand_class, write_class

KINDS = [catalog.CatalogError, score_files.ScoreFileError, policy.PolicyError, report.ReportError, lms.LmsError]


def test_every_bad_input_error_is_of_the_family():
    assert all(issubclass(kind, errors.UsageError) for kind in KINDS)


@pytest.fixture(scope="module")
def scores(tmp_path_factory):
    return write_class(hand_class(), tmp_path_factory.mktemp("scores"))


CASES = {
    "a course file that is not there": (["validate", "--course", "{tmp}/missing.yaml"], "cannot read the course file"),
    "a folder without score files": (["report", "{tmp}", "--format", "md"], "no score files"),
    "a policy file that is not there": (["gradebook", "{scores}", "--policy", "{tmp}/policy.yaml", "--out", "{tmp}/final"],
                                        "the policy file not found"),
    "an HTML report without --out": (["report", "{scores}"], "an HTML report needs --out"),
    "a roster that is not there": (["export", "canvas", "{scores}", "--roster", "{tmp}/roster.csv", "--title", "A1",
                                    "--out", "{tmp}/canvas.csv"], "roster.csv"),
    "an output file that cannot be written": (["report", "{scores}", "--format", "md", "--out", "{tmp}/plain/r.md"],
                                              "plain: File exists"),  # its folder is a file
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_exits_2_with_one_line(case, scores, tmp_path, capsys):
    argv, said = CASES[case]
    (tmp_path / "plain").write_text("a file, not a folder")
    code = cli.main([a.format(tmp=tmp_path, scores=scores) for a in argv])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = [line for line in err.splitlines() if line.startswith("grader: error: ")]
    assert len(lines) == 1 and said in lines[0], err
    assert "Traceback" not in err and not any(line.startswith("error: ") for line in err.splitlines())


def test_an_unreadable_or_unwritable_file_joins_the_family():
    def writes(args):
        raise PermissionError(13, "Permission denied", "/graded/out.csv")

    with pytest.raises(errors.UsageError, match="/graded/out.csv: Permission denied"):
        errors.usage_errors(writes)(None)
