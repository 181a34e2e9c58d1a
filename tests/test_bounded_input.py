"""Every file an instructor or a student controls is bounded on input: numbers, dates, text sizes per
consumer, names printed. One bad file is listed and skipped, never fatal to the class, and the exit
status means what docs/lms.md says (1: written, some files left out; 2: bad input, nothing written)."""

import base64
import json
import os
import subprocess
from pathlib import Path

from grader.cli import progress_display
from grader.lms import github_classroom as ghc
from grader.lms.scores import load_score_path

from lms_factory import EXERCISES, WRONG, adjusted, make_score, run_grader, write_roster, write_scores

EMOJI = "\U0001F600" * 2000  # 12 bytes each once json.dumps escapes it


def test_a_huge_integer_is_one_bad_file_not_a_blocked_class(capsys, tmp_path):
    scores = write_scores(tmp_path / "scores", {"ada": [], "chen": [WRONG]})
    huge = make_score("bob")
    huge["exercises"][0]["tests"][0]["duration_s"] = 10 ** 400  # valid JSON, passes the schema
    (scores / "bob.json").write_text(json.dumps(huge), encoding="utf-8")
    roster = write_roster(tmp_path / "roster.csv")
    code, _, err = run_grader(capsys, "export", "canvas", scores, "--roster", roster, "--title", "HW1",
                              "--out", tmp_path / "c.csv")
    assert code == 1 and "Traceback" not in err and "NOT EXPORTED: bob.json" in err and "too large" in err
    assert "Lovelace, Ada" in (tmp_path / "c.csv").read_text(encoding="utf-8")
    code, _, err = run_grader(capsys, "export", "prairielearn", scores, "--out", tmp_path / "pl")
    assert code == 1 and sorted(p.name for p in (tmp_path / "pl").iterdir()) == ["ada", "chen"]
    code, _, err = run_grader(capsys, "export", "github-classroom", scores / "bob.json")
    assert code == 2 and "Traceback" not in err and "too large" in err


def test_times_at_the_calendars_edge_are_refused_on_input(capsys, tmp_path):
    scores = tmp_path / "scores"
    scores.mkdir()
    for name, moment in (("ada", "2026-12-01T10:00:00+08:00"), ("bob", "0001-01-01T00:30+01:00"),
                         ("chen", "9999-12-31T23:30-01:00")):
        data = adjusted(make_score(name), submitted_at=moment)
        (scores / f"{name}.json").write_text(json.dumps(data), encoding="utf-8")
    loaded = load_score_path(scores)
    assert [s.submission for s in loaded.scores] == ["ada"]
    assert sorted(p.submission for p in loaded.problems) == ["bob", "chen"]
    # the policy's own times: a hand-in time there is refused naming the line, before anything is written
    write_scores(tmp_path / "raw", {"ada": []})
    (tmp_path / "times.csv").write_text("submission,submitted_at\nada,9999-12-31T23:30-01:00\n", encoding="utf-8")
    (tmp_path / "policy.yaml").write_text("due: 2026-12-01T23:59:00+08:00\nlate: none\nsubmitted_at: times.csv\n")
    code, _, err = run_grader(capsys, "gradebook", tmp_path / "raw", "--policy", tmp_path / "policy.yaml",
                              "--out", tmp_path / "final")
    assert code == 2 and "times.csv, line 2" in err and "calendar" in err and "Traceback" not in err


def _git(repo: Path, *args: str, stdin: bytes = b"") -> str:
    env = {"PATH": os.environ["PATH"], "HOME": str(repo.parent), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "s", "GIT_AUTHOR_EMAIL": "s@example.edu",
           "GIT_COMMITTER_NAME": "s", "GIT_COMMITTER_EMAIL": "s@example.edu"}
    return subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True,
                          input=stdin).stdout.decode()


def _repo_with_committer_date(folder: Path, date: str) -> None:
    """A repository whose HEAD has the raw committer date `date` ('<seconds> <offset>'), as git writes it."""
    folder.mkdir(parents=True)
    _git(folder, "init", "-q")
    tree = _git(folder, "write-tree").strip()
    commit = f"tree {tree}\nauthor s <s@example.edu> {date}\ncommitter s <s@example.edu> {date}\n\nwork\n"
    sha = _git(folder, "hash-object", "-t", "commit", "-w", "--stdin", stdin=commit.encode()).strip()
    _git(folder, "update-ref", "HEAD", sha)


def test_git_dates_git_writes_but_no_calendar_holds_list_that_student_only(capsys, tmp_path):
    scores = write_scores(tmp_path / "scores", {"ada": [], "bob": [], "chen": []})
    folders = tmp_path / "submissions"
    _repo_with_committer_date(folders / "ada", "1764604800 +0800")  # 2025-12-01
    _repo_with_committer_date(folders / "bob", "253402300800 +0000")  # 10000-01-01
    _repo_with_committer_date(folders / "chen", "1764604800 +9959")  # an offset of 99 h 59 min
    (tmp_path / "policy.yaml").write_text("due: 2026-12-01T23:59:00+08:00\nlate: none\nsubmitted_at: git\n"
                                          "submissions: submissions\n")
    out = tmp_path / "final"
    code, _, err = run_grader(capsys, "gradebook", scores, "--policy", tmp_path / "policy.yaml", "--out", out)
    assert code == 1 and "Traceback" not in err, err
    assert "bob: no hand-in time" in err and "outside the calendar" in err
    assert "chen: no hand-in time" in err and "+9959, which is no time zone" in err
    assert sorted(p.name for p in out.glob("[!.]*.json")) == ["ada.json"]


def test_long_hidden_messages_fit_the_classroom_reporters_environment(capsys, tmp_path):
    data = make_score("bob", [name for name, _ in EXERCISES])
    for exercise in data["exercises"]:
        for test in exercise["tests"]:
            test["message"] = EMOJI
    exercise = data["exercises"][0]
    exercise["tests"] = [dict(exercise["tests"][1], name=f"test_hidden_{i}", score=0.0, max_score=0.5)
                         for i in range(10)]
    (tmp_path / "bob.json").write_text(json.dumps(data), encoding="utf-8")
    output = tmp_path / "github_output"
    code, _, err = run_grader(capsys, "export", "github-classroom", tmp_path / "bob.json", "--show-hidden-messages",
                              "--github-output", output)
    assert code == 0, err
    lines = output.read_text(encoding="utf-8").splitlines()
    assert ghc.validate_output_lines(lines) == []
    for line in lines:
        name, _, value = line.partition("=")
        assert len(f"{name.upper()}_RESULTS={value}".encode()) + 1 < 128 * 1024
    first = json.loads(base64.b64decode(lines[0].partition("=")[2]))
    assert first["tests"][0]["message"].endswith("[cut]")


def test_feedback_texts_stay_within_canvas_and_moodle_limits(capsys, tmp_path):
    scores = write_scores(tmp_path / "scores", {"ada": []})
    data = make_score("bob", [WRONG], submission_errors=[EMOJI, EMOJI])
    (scores / "bob.json").write_text(json.dumps(data), encoding="utf-8")
    roster = write_roster(tmp_path / "roster.csv")
    code, _, err = run_grader(capsys, "export", "moodle", scores, "--roster", roster, "--item", "HW1",
                              "--out", tmp_path / "m.csv")
    assert code == 0, err
    rows = (tmp_path / "m.csv").read_text(encoding="utf-8").splitlines()
    assert max(len(row) for row in rows) < 1_200 and any("[cut]" in row for row in rows)


def test_a_name_with_a_newline_cannot_write_a_workflow_command(capsys):
    show = progress_display(1)._plain
    show({"submission": "eve\n::error file=x::pwned\r\n##[group]x", "score": 1, "max_score": 2}, 1, 1)
    printed = capsys.readouterr().err
    assert printed.count("\n") == 1 and not any(line.lstrip().startswith(("::", "##[")) for line in printed.split("\n"))
