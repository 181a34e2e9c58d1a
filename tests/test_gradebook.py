"""`grader gradebook`: the course policy between the raw score and the grade (issue 13).

Score files come from tests/lms_factory.py (the course's exercises, 5 points each, schema-valid); the policy,
hand-in times, extensions and overrides are files written here as an instructor would.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from grader.lms.scores import load_score_dir
from lms_factory import LAST, MAX_SCORE, PER_EXERCISE, VALIDATOR, WRONG, run_grader, write_roster, write_scores

POLICY = """\
due: 2026-12-01T23:59:00+08:00       # ISO 8601 with a time zone; required
grace_minutes: 15
late: {percent_per_day: 10, max_days: 3}   # % of the raw score per started day after due + grace
submitted_at: times.csv              # submission,submitted_at  (ISO 8601)
extensions: extensions.csv           # submission or login,due  (a new due for that student)
overrides: overrides.csv             # submission,exercise,score,reason  (exercise empty: the total)
"""


ONE_WRONG = MAX_SCORE - PER_EXERCISE  # the raw score of a hand-in with WRONG wrong (90 of 95 for this course)
TYPO = WRONG[0] + WRONG[2] + WRONG[1] + WRONG[3:]  # two letters swapped


def late_grade(raw: float, days: int) -> float:
    """POLICY's grade of `raw` handed in `days` started days late: 10% of the raw score per day."""
    return round(raw * (1 - days / 10), 2)


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def course(tmp_path, submissions: dict, times: str, extensions: str = "submission,due\n",
           overrides: str = "submission,exercise,score,reason\n", policy: str = POLICY) -> tuple[Path, Path]:
    scores = write_scores(tmp_path / "scores", submissions)
    write(tmp_path / "times.csv", "submission,submitted_at\n" + times)
    write(tmp_path / "extensions.csv", extensions)
    write(tmp_path / "overrides.csv", overrides)
    return scores, write(tmp_path / "policy.yaml", policy)


def gradebook(capsys, scores, policy, out) -> tuple[int, str, str]:
    return run_grader(capsys, "gradebook", scores, "--policy", policy, "--out", out)


def final(out: Path, name: str) -> dict:
    data = json.loads((out / f"{name}.json").read_text())
    VALIDATOR.validate(data)
    return data


def test_the_worked_example_of_the_issue(tmp_path, capsys):
    """Due 2026-12-01T23:59+08:00, 15 min grace, 10% per started day, at most 3 days; raw 90 of 95 for
    this course (WRONG, worth 5, failed)."""
    scores, policy = course(
        tmp_path, {"late": [WRONG], "extended": [WRONG], "very_late": [WRONG], "regraded": [WRONG]},
        times="late,2026-12-03T10:00+08:00\n"           # 1 day 10 h after the due time
              "extended,2026-12-03T10:00+08:00\n"
              "very_late,2026-12-06T23:59+08:00\n"      # 5 days
              "regraded,2026-12-01T23:00+08:00\n",
        extensions="submission,due\nextended,2026-12-04T00:00+08:00\n",
        overrides=f"submission,exercise,score,reason\nregraded,{WRONG},5,regrade request 12\n")
    out = tmp_path / "final"
    code, stdout, err = gradebook(capsys, scores, policy, out)
    assert code == 0, err
    late, extended, very_late, regraded = (final(out, n) for n in ("late", "extended", "very_late", "regraded"))
    assert all(f["raw_score"] == ONE_WRONG for f in (late, extended, very_late, regraded))
    assert late["score"] == late_grade(ONE_WRONG, 2)  # 72
    assert [(a["kind"], a["points"]) for a in late["adjustments"]] == [("late", late_grade(ONE_WRONG, 2) - ONE_WRONG)]
    assert f"2 started days x 10% of {ONE_WRONG:g}" in late["adjustments"][0]["reason"]
    assert late["submitted_at"] == "2026-12-03T10:00:00+08:00"
    assert extended["score"] == ONE_WRONG and extended["adjustments"] == []
    assert very_late["score"] == 0 and very_late["adjustments"][0]["points"] == -ONE_WRONG
    assert regraded["score"] == MAX_SCORE
    assert regraded["adjustments"] == [{"kind": "override", "exercise": WRONG, "points": 5,
                                        "reason": "regrade request 12"}]
    wrong = next(e for e in regraded["exercises"] if e["name"] == WRONG)
    assert (wrong["score"], wrong["raw_score"], sum(t["score"] for t in wrong["tests"])) == (5, 0, 0)
    assert f"regraded: {ONE_WRONG:g} -> {MAX_SCORE:g}/{MAX_SCORE:g} (override {WRONG} +5)" in stdout


def test_overrides_apply_to_exercises_first_then_the_late_penalty_to_the_total(tmp_path, capsys):
    scores, policy = course(tmp_path, {"ada": [WRONG, LAST]}, times="ada,2026-12-03T10:00+08:00\n",
                            overrides=f"submission,exercise,score,reason\nada,{WRONG},5,regrade request 12\n")
    out = tmp_path / "final"
    assert gradebook(capsys, scores, policy, out)[0] == 0
    ada = final(out, "ada")
    assert [(a["kind"], a["points"]) for a in ada["adjustments"]] == [("override", 5),
                                                                      ("late", late_grade(ONE_WRONG, 2) - ONE_WRONG)]
    assert ada["raw_score"] == MAX_SCORE - 10 and ada["score"] == late_grade(ONE_WRONG, 2)  # (85 + 5) x 0.8


def test_an_override_of_the_total_is_the_last_word(tmp_path, capsys):
    board = MAX_SCORE - 15  # 80
    scores, policy = course(tmp_path, {"ada": [WRONG]}, times="ada,2026-12-03T10:00+08:00\n",
                            overrides=f"submission,exercise,score,reason\nada,,{board:g},academic board decision 3\n")
    out = tmp_path / "final"
    assert gradebook(capsys, scores, policy, out)[0] == 0
    ada = final(out, "ada")
    assert ada["score"] == board
    assert [(a["kind"], a["points"]) for a in ada["adjustments"]] == [("late", late_grade(ONE_WRONG, 2) - ONE_WRONG),
                                                                      ("override", board - late_grade(ONE_WRONG, 2))]
    assert ada["adjustments"][1]["reason"] == "academic board decision 3" and "exercise" not in ada["adjustments"][1]


@pytest.mark.parametrize("handed_in, days, score", [
    ("2026-12-02T00:14+08:00", 0, MAX_SCORE),          # inside the grace period
    ("2026-12-02T00:15+08:00", 1, late_grade(MAX_SCORE, 1)),  # one minute after it: a started day
    ("2026-12-01T17:14+01:00", 0, MAX_SCORE),          # the same instants in Central Europe
    ("2026-12-01T17:15+01:00", 1, late_grade(MAX_SCORE, 1)),
    ("2026-12-05T00:14+08:00", 3, late_grade(MAX_SCORE, 3)),  # the third day, the last accepted
    ("2026-12-05T00:15+08:00", 4, 0),       # the fourth: later than max_days
])
def test_started_days_and_time_zones(tmp_path, capsys, handed_in, days, score):
    scores, policy = course(tmp_path, {"ada": []}, times=f"ada,{handed_in}\n")
    out = tmp_path / "final"
    assert gradebook(capsys, scores, policy, out)[0] == 0
    assert final(out, "ada")["score"] == score
    row = (out / "summary.csv").read_text().splitlines()[1].split(",")
    assert row[0] == "ada" and row[5] == str(days)


def test_a_submission_without_a_time_is_left_out_and_listed_never_on_time(tmp_path, capsys):
    scores, policy = course(tmp_path, {"ada": [], "bob": []}, times="ada,2026-12-01T10:00+08:00\n")
    out = tmp_path / "final"
    code, stdout, err = gradebook(capsys, scores, policy, out)
    assert code == 1
    assert "bob: no hand-in time (not in times.csv)" in err
    assert not (out / "bob.json").exists() and (out / "ada.json").exists()
    summary = (out / "summary.csv").read_text()
    assert "bob,left out: no hand-in time" in summary
    assert [s.submission for s in load_score_dir(out).scores] == ["ada"]


@pytest.mark.parametrize("file, text, message", [
    ("extensions.csv", "submission,due\nbbo,2026-12-04T00:00+08:00\n",
     "extensions.csv, line 2: submission 'bbo' has no score file (did you mean 'bob'?): an extension for an unknown"),
    ("overrides.csv", f"submission,exercise,score,reason\nbob,{WRONG},5,ok\nzed,{WRONG},5,regrade\n",
     "overrides.csv, line 3: submission 'zed' has no score file: an override for an unknown submission is an error"),
    ("overrides.csv", f"submission,exercise,score,reason\nbob,{TYPO},5,regrade\n",
     f"overrides.csv, line 2: exercise '{TYPO}' is not in bob's score file (did you mean '{WRONG}'?)"),
    ("overrides.csv", f"submission,exercise,score,reason\nbob,{WRONG},6,regrade\n",
     f"overrides.csv, line 2: score 6 is outside 0..5 for {WRONG}"),
    ("overrides.csv", f"submission,exercise,score,reason\nbob,{WRONG},5,\n", "line 2: an override needs a reason"),
    ("overrides.csv", f"submission,exercise,score,reason\nbob,,{ONE_WRONG:g},a\nbob,,{ONE_WRONG + 1:g},b\n",
     "line 3: a second override of the total for 'bob' (the first is on line 2)"),
    ("extensions.csv", "submission,due\nbob,2026-12-04 00:00\n", "line 2: due: '2026-12-04 00:00' has no time zone"),
    ("extensions.csv", "submission,due\nbob,2026-11-30T00:00+08:00\n", "is before the course's due time"),
    ("times.csv", "submission,submitted_at\nbob,yesterday\n", "times.csv, line 2: submitted_at: 'yesterday' is not"),
    ("times.csv", "submission,submitted_at\nbob,2026-12-01T10:00Z\nbob,2026-12-01T11:00Z\n",
     "line 3: submission 'bob' is given a time twice (also on line 2)"),
    ("times.csv", "name,submitted_at\nbob,2026-12-01T10:00Z\n",
     "times.csv, line 1: the hand-in times file needs the column(s) submission"),
])
def test_bad_csv_rows_are_errors_naming_file_and_line_and_nothing_is_written(tmp_path, capsys, file, text, message):
    scores, policy = course(tmp_path, {"bob": [WRONG]}, times="bob,2026-12-01T10:00+08:00\n")
    write(tmp_path / file, text)
    out = tmp_path / "final"
    code, _, err = gradebook(capsys, scores, policy, out)
    assert code == 2
    assert message in err
    assert not out.exists()


def test_extensions_by_login_through_the_roster(tmp_path, capsys):
    scores, policy = course(tmp_path, {"ada": [], "bob": []},
                            times="ada,2026-12-03T10:00+08:00\nbob,2026-12-03T10:00+08:00\n",
                            extensions="login,due\nBSTONE,2026-12-04T00:00+08:00\n",
                            policy=POLICY + "roster: roster.csv\n")
    write_roster(tmp_path / "roster.csv")
    out = tmp_path / "final"
    assert gradebook(capsys, scores, policy, out)[0] == 0
    assert final(out, "bob")["score"] == MAX_SCORE and final(out, "ada")["score"] == late_grade(MAX_SCORE, 2)
    write(tmp_path / "extensions.csv", "login,due\nnobody,2026-12-04T00:00+08:00\n")
    code, _, err = gradebook(capsys, scores, policy, out)
    assert code == 2 and "extensions.csv, line 2: login 'nobody' is not in the roster" in err


def test_extensions_by_login_need_a_roster(tmp_path, capsys):
    scores, policy = course(tmp_path, {"bob": []}, times="bob,2026-12-01T10:00+08:00\n",
                            extensions="login,due\nbstone,2026-12-04T00:00+08:00\n")
    code, _, err = gradebook(capsys, scores, policy, tmp_path / "final")
    assert code == 2 and "extensions name logins; add `roster: roster.csv`" in err


@pytest.mark.parametrize("policy, message", [
    ("due: 2026-12-01T23:59:00+08:00\ngrace_minute: 15\n",
     "line 2: grace_minute: unknown key; did you mean `grace_minutes`?"),
    ("due: 2026-12-01T23:59:00\nlate: {percent_per_day: 10, max_days: 3}\nsubmitted_at: times.csv\n",
     "line 1: due: '2026-12-01T23:59:00' has no time zone"),
    ("due: 2026-12-01T23:59:00+08:00\nsubmitted_at: times.csv\n", "late: required"),
    ("due: 2026-12-01T23:59:00+08:00\nlate: {percent_per_day: 10, max_day: 3}\nsubmitted_at: times.csv\n",
     "line 2: late.max_day: unknown key; did you mean `max_days`?"),
    ("due: 2026-12-01T23:59:00+08:00\nlate:\n  percent_per_day: 150\n  max_days: 3\nsubmitted_at: times.csv\n",
     "line 3: late.percent_per_day: 150 is out of range"),
    ("due: 2026-12-01T23:59:00+08:00\nlate: {percent_per_day: 10, max_days: 2.5}\nsubmitted_at: times.csv\n",
     "line 2: late.max_days: '2.5' is not a whole number"),
    ("due: 2026-12-01T23:59:00+08:00\ngrace_minutes: -5\nlate: {percent_per_day: 10, max_days: 3}\n"
     "submitted_at: times.csv\n", "line 2: grace_minutes: -5 is out of range"),
    ("due: 2026-12-01T23:59:00+08:00\nlate: {percent_per_day: 10, max_days: 3}\nsubmitted_at: times.cvs\n",
     "line 3: submitted_at: file 'times.cvs' not found"),
    ("due: 2026-12-01T23:59:00+08:00\nlate: {percent_per_day: 10, max_days: 3}\nsubmitted_at: git\n",
     "line 3: submitted_at: `git` reads each submission's folder: add `submissions: FOLDER`"),
    ("due: 2026-12-01T23:59:00+08:00\ndue: 2026-12-02T23:59:00+08:00\n", "line 2: due: given twice (also on line 1)"),
    ("due: [2026]\n", "line 1: due: a list is not allowed here"),
    ("due: 2026-12-01T23:59:00+08:00\n  late: {percent_per_day: 10\n", "line 2: not valid YAML"),
    ("", "the policy file is empty"),
    ("due: 2026-12-01T23:59:00+08:00\nlate: {percent_per_day: 10, max_days: 3}\n", "submitted_at: required"),
    ("due: 2026-12-01T23:59:00+08:00\nlate: {percent_per_day: 10, max_days: 3}\nsubmitted_at: times.csv\n"
     "overrides:\n", "line 4: overrides: empty: give a value or remove the line"),
])
def test_a_bad_policy_names_the_key_and_line(tmp_path, capsys, policy, message):
    scores, policy_file = course(tmp_path, {"bob": []}, times="bob,2026-12-01T10:00+08:00\n", policy=policy)
    code, _, err = gradebook(capsys, scores, policy_file, tmp_path / "final")
    assert code == 2
    assert f"{policy_file}" in err and message in err, err
    assert not (tmp_path / "final").exists()


def test_gradebook_on_its_own_output_recomputes_from_the_raw_score(tmp_path, capsys):
    """A late deduction is never applied twice: FINAL through the same policy is FINAL again, and
    through a policy with a new extension it is recomputed from raw_score."""
    scores, policy = course(tmp_path, {"ada": [WRONG], "bob": []},
                            times="ada,2026-12-03T10:00+08:00\nbob,2026-12-02T10:00+08:00\n",
                            overrides=f"submission,exercise,score,reason\nada,{WRONG},5,regrade request 12\n")
    first, second = tmp_path / "final", tmp_path / "final2"
    assert gradebook(capsys, scores, policy, first)[0] == 0
    assert gradebook(capsys, first, policy, second)[0] == 0
    for name in ("ada", "bob"):
        once, twice = final(first, name), final(second, name)
        assert twice == once
    assert final(second, "bob")["score"] == late_grade(MAX_SCORE, 1) and final(second, "ada")["score"] == late_grade(MAX_SCORE, 2)
    write(tmp_path / "extensions.csv", "submission,due\nada,2026-12-04T00:00+08:00\n")
    assert gradebook(capsys, first, policy, second)[0] == 0
    ada = final(second, "ada")
    assert ada["score"] == MAX_SCORE and [a["kind"] for a in ada["adjustments"]] == ["override"]


def test_the_output_folder_is_ours_alone_and_a_rerun_replaces_it(tmp_path, capsys):
    scores, policy = course(tmp_path, {"ada": [], "bob": []},
                            times="ada,2026-12-01T10:00+08:00\nbob,2026-12-01T10:00+08:00\n")
    code, _, err = gradebook(capsys, scores, policy, scores)
    assert code == 2 and "is the score folder itself" in err
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    code, _, err = gradebook(capsys, scores, policy, foreign)
    assert code == 2 and "did not write" in err
    out = tmp_path / "final"
    assert gradebook(capsys, scores, policy, out)[0] == 0
    (out / ".lti-ledger.json").write_text("{}")  # what `grader publish lti` keeps there
    write(tmp_path / "times.csv", "submission,submitted_at\nada,2026-12-01T10:00+08:00\n")
    assert gradebook(capsys, scores, policy, out)[0] == 1
    assert sorted(p.name for p in out.iterdir()) == [".gradebook.json", ".lti-ledger.json", "ada.json", "summary.csv"]


def test_an_invalid_score_file_is_left_out_and_listed(tmp_path, capsys):
    scores, policy = course(tmp_path, {"ada": [], "bob": []},
                            times="ada,2026-12-01T10:00+08:00\nbob,2026-12-01T10:00+08:00\n",
                            overrides=f"submission,exercise,score,reason\nbob,{WRONG},5,regrade\n")
    data = json.loads((scores / "bob.json").read_text())
    data["score"] = 1000
    (scores / "bob.json").write_text(json.dumps(data))
    out = tmp_path / "final"
    code, _, err = gradebook(capsys, scores, policy, out)
    assert code == 1 and "bob: invalid score file" in err
    assert not (out / "bob.json").exists()


def test_times_from_gradescope_submission_metadata(tmp_path, capsys):
    scores, _ = course(tmp_path, {"ada": [], "bob": [], "chen": []}, times="")
    folders = tmp_path / "submissions"
    for name, created in (("ada", "2026-12-01T14:22:32.365935-08:00"), ("bob", "2026-12-01T15:59:00.000000Z")):
        (folders / name).mkdir(parents=True)
        (folders / name / "submission_metadata.json").write_text(json.dumps(
            {"id": 123456, "created_at": created, "assignment": {"due_date": "2026-12-01T23:59:00.000000+08:00"},
             "users": [{"email": f"{name}@example.edu", "id": 1, "name": name}], "previous_submissions": []}))
    (folders / "chen").mkdir()
    policy = write(tmp_path / "policy.yaml", "due: 2026-12-01T23:59:00+08:00\ngrace_minutes: 15\n"
                   "late: {percent_per_day: 10, max_days: 3}\nsubmitted_at: gradescope\nsubmissions: submissions\n")
    out = tmp_path / "final"
    code, _, err = gradebook(capsys, scores, policy, out)
    assert code == 1 and f"chen: no hand-in time (no {folders / 'chen' / 'submission_metadata.json'})" in err
    ada = final(out, "ada")  # 2026-12-02T06:22:32+08:00: 6 h 7 min after due + grace: one started day
    assert ada["submitted_at"] == "2026-12-01T14:22:32.365935-08:00" and ada["score"] == late_grade(MAX_SCORE, 1)
    assert final(out, "bob")["score"] == MAX_SCORE  # 23:59 in Beijing is 15:59 UTC: on time


def git(repo: Path, *args: str, date: str | None = None, check: bool = True, stdin: bytes = b"") -> str:
    env = {"PATH": os.environ["PATH"], "HOME": str(repo.parent), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "student", "GIT_AUTHOR_EMAIL": "s@example.edu",
           "GIT_COMMITTER_NAME": "student", "GIT_COMMITTER_EMAIL": "s@example.edu"}
    if date:
        env["GIT_COMMITTER_DATE"] = env["GIT_AUTHOR_DATE"] = date
    done = subprocess.run(["git", "-C", str(repo), *args], env=env, check=check, capture_output=True, input=stdin)
    return done.stdout.decode()


def classroom_repo(folder: Path, *commit_dates: str) -> Path:
    folder.mkdir(parents=True)
    git(folder, "init", "-q")
    for i, date in enumerate(commit_dates):
        (folder / "grad.py").write_text(f"# version {i}\n")
        git(folder, "add", "grad.py")
        git(folder, "commit", "-q", "-m", f"version {i}", date=date)
    return folder


def test_times_from_the_last_commit_of_each_repository(tmp_path, capsys):
    scores, _ = course(tmp_path, {"ada": [], "bob": [], "chen": []}, times="")
    folders = tmp_path / "submissions"
    classroom_repo(folders / "ada", "2026-11-30T12:00:00+08:00", "2026-12-03T10:00:00+08:00")
    classroom_repo(folders / "bob", "2026-12-01T23:00:00+0800")
    (folders / "chen").mkdir()  # a folder, not a clone: no time, and never the time of a repository around it
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "policy.yaml")
    git(tmp_path, "commit", "-q", "-m", "the course's own repository", date="2026-11-01T00:00:00+08:00")
    policy = write(tmp_path / "policy.yaml", "due: 2026-12-01T23:59:00+08:00\ngrace_minutes: 15\n"
                   "late: {percent_per_day: 10, max_days: 3}\nsubmitted_at: git\nsubmissions: submissions\n")
    out = tmp_path / "final"
    code, _, err = gradebook(capsys, scores, policy, out)
    assert code == 1 and "chen: no hand-in time" in err and "is not a git repository" in err
    assert final(out, "ada")["submitted_at"] == "2026-12-03T10:00:00+08:00" and final(out, "ada")["score"] == late_grade(MAX_SCORE, 2)
    assert final(out, "bob")["score"] == MAX_SCORE


def test_a_hostile_repository_configuration_runs_nothing(tmp_path, capsys):
    """Student repositories are hostile: settings that make `git log` or `git status` run a program
    (signature checks, fsmonitor, a pager) must not run when the grader reads the commit time."""
    scores, _ = course(tmp_path, {"eve": []}, times="")
    repo = classroom_repo(tmp_path / "submissions" / "eve", "2026-12-01T20:00:00+08:00")
    commit = git(repo, "cat-file", "commit", "HEAD")  # sign it (badly), so that a signature check runs gpg
    header, message = commit.split("\n\n", 1)
    signed = f"{header}\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n AAAA\n -----END PGP SIGNATURE-----\n\n{message}"
    git(repo, "update-ref", "HEAD", git(repo, "hash-object", "-t", "commit", "-w", "--stdin", stdin=signed.encode()).strip())
    ran = tmp_path / "ran"
    payload = write(tmp_path / "payload.sh", f"#!/bin/sh\ntouch {ran}\n")
    payload.chmod(0o755)
    for key, value in (("log.showSignature", "true"), ("gpg.program", str(payload)), ("core.fsmonitor", str(payload)),
                       ("core.pager", str(payload)), ("pager.cat-file", "true"), ("alias.cat-file", f"!{payload}")):
        git(repo, "config", key, value)
    for control in (("log", "-1"), ("status",)):  # the payload is live: plain git commands run it
        git(repo, *control, check=False)
        assert ran.exists(), control
        ran.unlink()
    policy = write(tmp_path / "policy.yaml", "due: 2026-12-01T23:59:00+08:00\n"
                   "late: {percent_per_day: 10, max_days: 3}\nsubmitted_at: git\nsubmissions: submissions\n")
    out = tmp_path / "final"
    assert gradebook(capsys, scores, policy, out)[0] == 0
    assert final(out, "eve")["score"] == MAX_SCORE
    assert not ran.exists()


def test_late_none_leaves_lateness_to_the_lms_and_lists_it_in_the_summary(tmp_path, capsys):
    policy = POLICY.replace("late: {percent_per_day: 10, max_days: 3}", "late: none")
    scores, policy = course(tmp_path, {"ada": []}, times="ada,2026-12-09T10:00+08:00\n", policy=policy)
    out = tmp_path / "final"
    assert gradebook(capsys, scores, policy, out)[0] == 0
    ada = final(out, "ada")
    assert ada["score"] == MAX_SCORE and ada["adjustments"] == [] and ada["submitted_at"] == "2026-12-09T10:00:00+08:00"
    assert (out / "summary.csv").read_text().splitlines()[1].startswith("ada,late,2026-12-09T10:00:00+08:00,"
                                                                        "2026-12-01T23:59:00+08:00,,8,")


def test_a_grade_that_does_not_follow_from_its_adjustments_is_refused_by_the_exports(tmp_path, capsys):
    scores, policy = course(tmp_path, {"ada": [WRONG]}, times="ada,2026-12-03T10:00+08:00\n")
    out = tmp_path / "final"
    assert gradebook(capsys, scores, policy, out)[0] == 0
    assert [s.score for s in load_score_dir(out).scores] == [late_grade(ONE_WRONG, 2)]
    ada = final(out, "ada")
    for broken, reason in (({**ada, "score": int(ONE_WRONG)}, f"$.score is {int(ONE_WRONG)} but raw_score"),
                           ({k: v for k, v in ada.items() if k != "raw_score"}, "raw_score")):
        (out / "ada.json").write_text(json.dumps(broken))
        (problem,) = load_score_dir(out).problems
        assert reason in problem.reason, problem.reason


def test_a_hand_in_time_in_the_future_is_reported(tmp_path, capsys):
    scores, policy = course(tmp_path, {"ada": [], "bob": []},
                            times="ada,2026-11-01T10:00+08:00\nbob,2099-12-01T10:00+08:00\n")
    code, _, err = gradebook(capsys, scores, policy, tmp_path / "final")
    assert code == 0
    assert "warning: bob: hand-in time 2099-12-01T10:00:00+08:00 is in the future; check its date and time zone" in err
    assert "ada: hand-in time" not in err
