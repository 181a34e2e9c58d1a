"""When each submission was handed in, from one of three sources (policy key `submitted_at`):

- a CSV file `submission,submitted_at` (ISO 8601 with a time zone), e.g. an LMS's export;
- `gradescope`: `created_at` of Gradescope's `submission_metadata.json` in each submission's folder
  (SUBMISSIONS/<submission>/submission_metadata.json);
- `git`: the committer date of the last commit (HEAD) of each submission's repository
  (SUBMISSIONS/<submission>/.git), as GitHub Classroom clones them. The date is written by the
  student's own git, so a student can set it; where that matters, take the push times from GitHub
  into a CSV instead.

A submission whose time cannot be found is listed with the reason, never taken as on time.
Student repositories are hostile: git runs `cat-file` only (no pager, no hooks, no signature
programs), with no system or global configuration, and cannot climb out of the repository.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from grader.lms.roster import submission_key
from grader.policy import PolicyError
from grader.policy.config import Policy
from grader.policy.tables import read_table
from grader.policy.timeutil import parse_time
from grader.score_files import within_calendar

METADATA_FILE = "submission_metadata.json"
COMMITTER = re.compile(r"^committer .* (\d+) ([+-])(\d\d)(\d\d)$")


@dataclass
class HandIns:
    times: dict[str, datetime] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)  # submission -> why it has no time
    warnings: list[str] = field(default_factory=list)


def hand_in_times(policy: Policy, submissions: list[str]) -> HandIns:
    """The hand-in time of each of these submissions (score files' `submission` names)."""
    if policy.submitted_at == "csv":
        return _from_csv(policy.times_file, submissions)
    read = gradescope_time if policy.submitted_at == "gradescope" else git_commit_time
    found = HandIns()
    for name in submissions:
        try:
            found.times[name] = read(policy.submissions / name)
        except LookupError as exc:
            found.missing[name] = str(exc)
    return found


def _from_csv(path: Path, submissions: list[str]) -> HandIns:
    known = {submission_key(s): s for s in submissions}
    found, lines = HandIns(), {}
    for row in read_table(path, "the hand-in times file", ("submission", "submitted_at")):
        key = submission_key(row.get("submission"))
        if not key:
            raise row.error("no submission name")
        if key in lines:
            raise row.error(f"submission {key!r} is given a time twice (also on line {lines[key]})")
        lines[key] = row.line
        try:
            moment = parse_time(row.get("submitted_at"))
        except ValueError as exc:
            raise row.error(f"submitted_at: {exc}") from None
        if key in known:
            found.times[known[key]] = moment
        else:
            found.warnings.append(f"{path}, line {row.line}: {key!r} has a hand-in time but no score file")
    for key, name in known.items():
        if name not in found.times:
            found.missing[name] = f"not in {path.name}"
    return found


def gradescope_time(folder: Path) -> datetime:
    """`created_at` of FOLDER/submission_metadata.json; LookupError says why there is none."""
    path = folder / METADATA_FILE
    try:
        metadata = json.loads(path.read_text(encoding="utf-8"))
        return parse_time(metadata["created_at"])
    except FileNotFoundError:
        raise LookupError(f"no {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LookupError(f"{path} cannot be read: {exc}") from None
    except (KeyError, TypeError):
        raise LookupError(f"{path} has no created_at") from None
    except ValueError as exc:
        raise LookupError(f"{path}: created_at: {exc}") from None


def _commit_moment(repository: Path, seconds: str, sign: str, hours: str, minutes: str) -> datetime:
    """A committer date as git wrote it; git accepts offsets such as +9959 and years past 9999, which
    are no time zone and no date: LookupError names them, and the student is listed, not the class lost."""
    offset = timedelta(hours=int(hours), minutes=int(minutes)) * (1 if sign == "+" else -1)
    if abs(offset) >= timedelta(hours=24) or int(minutes) >= 60:
        raise LookupError(f"{repository}: HEAD's committer date has the offset {sign}{hours}{minutes}, which is no time zone")
    try:
        moment = datetime.fromtimestamp(int(seconds), timezone(offset))
    except (OverflowError, OSError, ValueError):
        moment = None
    if moment is None or not within_calendar(moment):
        raise LookupError(f"{repository}: HEAD's committer date ({seconds} s after 1970) is outside the calendar")
    return moment


def git_commit_time(repository: Path) -> datetime:
    """The committer date of HEAD in REPOSITORY (its own .git only); LookupError says why there is none."""
    if not (repository / ".git").exists():
        raise LookupError(f"{repository} is not a git repository (no .git)")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CEILING_DIRECTORIES": str(repository.resolve().parent),
           "GIT_TERMINAL_PROMPT": "0"}
    command = ["git", "-c", f"safe.directory={repository.resolve()}", "-C", str(repository),
               "cat-file", "commit", "HEAD"]
    try:
        done = subprocess.run(command, env=env, capture_output=True, timeout=30, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise PolicyError("`submitted_at: git` needs git installed (apt-get install git)") from None
    except subprocess.TimeoutExpired:
        raise LookupError(f"{repository}: git took more than 30 s to read HEAD") from None
    if done.returncode != 0:
        reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise LookupError(f"{repository}: git cannot read HEAD ({reason[-1] if reason else done.returncode})")
    header = done.stdout.decode("utf-8", "replace").split("\n\n", 1)[0]
    for line in header.splitlines():
        match = COMMITTER.match(line)
        if match:
            return _commit_moment(repository, *match.groups())
    raise LookupError(f"{repository}: HEAD has no committer line")
