"""Resubmission limits where students resubmit to the autograder: `grader export gradescope` and
`grader export otter` with `--max-submissions N [--window HOURS]`.

Gradescope hands the autograder `submission_metadata.json`: this submission's `created_at` and the
student's `previous_submissions`, each with `submission_time`, `score` and `results` (the
results.json it got) (gradescope/autograder_samples, docs/submission_metadata.md). The rules:

- A previous submission counts when it was graded: not one turned away by this rule (its results'
  output starts with NOT_GRADED), not one where the autograder failed (`autograder_error`) and not
  one the grader could not grade (an ungradable score file: its output starts with UNGRADABLE).
  A previous submission that comes without its results counts.
- At most N submissions are graded within the HOURS before this one's `created_at` (over the whole
  assignment without --window). Times come from the metadata, never from the clock, so a regrade
  decides the same.
- Past the limit the submission is not graded: its results are those of the last graded
  submission (score and tests), with a message in English and Chinese that says when a submission
  counts again. Gradescope shows the latest submission's score, so the student keeps that score.
- Without metadata (a local `otter run`, a test run of the Gradescope folder) every submission is
  graded: a missing file never costs a student a grade.
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from grader.policy.timeutil import parse_time

NOT_GRADED = "autograd-lab: not graded: over the submission limit / 超出提交次数限制，未评分"
# The first line of an ungradable result: the grader's own failure, or a notebook of another course or
# term (its reason is the next line); neither is a grade, and neither counts as a submission.
UNGRADABLE = ("autograd-lab: not graded, for the reason below (the grader failed, or this is not this assignment's "
              "file); this is no grade and does not count as a submission / 未评分，原因见下（评分程序出错，或这不是"
              "本次作业的文件）：这不是成绩，也不计入提交次数")
# Its earlier wording, still on the previous submissions of a term that began with it.
_UNGRADABLE_BEFORE = ("autograd-lab: not graded: the grader failed (not your code); this is no grade and does not "
                      "count as a submission / 评分程序出错（不是你的代码的问题）：这不是成绩，也不计入提交次数")
METADATA_FILE = "submission_metadata.json"


@dataclass(frozen=True)
class Limit:
    max_submissions: int
    window_hours: float | None = None

    @classmethod
    def from_options(cls, max_submissions: int | None, window_hours: float | None) -> "Limit | None":
        """From the export's options; ValueError names the bad one."""
        if max_submissions is None:
            if window_hours is not None:
                raise ValueError("--window needs --max-submissions N")
            return None
        if max_submissions < 1:
            raise ValueError(f"--max-submissions must be at least 1, not {max_submissions}")
        if window_hours is not None and not (math.isfinite(window_hours) and window_hours > 0):
            raise ValueError(f"--window must be a positive number of hours, not {window_hours:g}")
        return cls(max_submissions, window_hours)

    @classmethod
    def from_config(cls, config: dict) -> "Limit | None":
        """From the autograder's configuration (autograd_lab.json, or the otter plugin's config)."""
        if not config.get("max_submissions"):
            return None
        return cls(int(config["max_submissions"]), config.get("window_hours"))

    def as_config(self) -> dict:
        return {"max_submissions": self.max_submissions,
                **({"window_hours": self.window_hours} if self.window_hours else {})}

    def in_words(self) -> tuple[str, str]:
        """('3 graded submissions in 24 hours', '24 小时内最多评分 3 次') and the like."""
        submissions = f"{self.max_submissions} graded submission{'s' if self.max_submissions != 1 else ''}"
        if self.window_hours is None:
            return submissions, f"最多评分 {self.max_submissions} 次"
        return (f"{submissions} in {self.hours()}", f"{self.window_hours:g} 小时内最多评分 {self.max_submissions} 次")

    def hours(self) -> str:
        return f"{self.window_hours:g} hour{'s' if self.window_hours != 1 else ''}"


@dataclass(frozen=True)
class Verdict:
    graded: bool
    counted: int  # graded submissions in the window, this one included when it is graded
    note: str  # what the student reads, English then Chinese
    kept: dict | None = None  # not graded: the previous submission whose score stands
    next_counts_at: datetime | None = None  # not graded, with a window: when one counts again


def read_metadata(root: Path) -> dict | None:
    """ROOT/submission_metadata.json, or None when it is missing or not a JSON object."""
    try:
        metadata = json.loads((Path(root) / METADATA_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return metadata if isinstance(metadata, dict) else None


def was_graded(previous: dict) -> bool:
    """Whether a previous submission counts against the limit."""
    if previous.get("autograder_error"):
        return False
    results = previous.get("results")
    output = results.get("output") if isinstance(results, dict) else None
    return not (isinstance(output, str) and output.split("\n", 1)[0] in (NOT_GRADED, UNGRADABLE, _UNGRADABLE_BEFORE))


def _graded_before(metadata: dict | None) -> tuple[datetime, list[tuple[datetime, dict]]]:
    """This submission's time and the earlier submissions that count, oldest first; raises TypeError,
    KeyError or ValueError on unreadable metadata."""
    now = parse_time(metadata["created_at"])
    previous = [(parse_time(p["submission_time"]), p) for p in metadata.get("previous_submissions") or []
                if isinstance(p, dict)]
    return now, sorted(((t, p) for t, p in previous if t < now and was_graded(p)), key=lambda item: item[0])


def _last_with_score(graded: list[tuple[datetime, dict]]) -> dict | None:
    return next(({**p, "score": _score(p)} for _, p in reversed(graded) if _score(p) is not None), None)


def last_graded(metadata: dict | None) -> dict | None:
    """The latest earlier submission that was graded, with its score (None without metadata or one)."""
    try:
        return _last_with_score(_graded_before(metadata)[1])
    except (TypeError, KeyError, ValueError):
        return None


def decide(metadata: dict | None, limit: Limit) -> Verdict:
    """Whether this submission is graded under the limit. Never raises: unreadable metadata grades."""
    try:
        now, graded = _graded_before(metadata)
    except (TypeError, KeyError, ValueError):
        return Verdict(True, 0, "(No submission metadata: the submission limit was not applied. / "
                                "没有提交元数据：未应用提交次数限制。)")
    since = now - timedelta(hours=limit.window_hours) if limit.window_hours else None
    in_window = [t for t, _ in graded if since is None or t > since]
    en_limit, zh_limit = limit.in_words()
    if len(in_window) < limit.max_submissions:
        used = len(in_window) + 1
        return Verdict(True, used, f"Submission limit: {en_limit}; this is graded submission {used} of "
                                   f"{limit.max_submissions}. / 提交次数限制：{zh_limit}；这是第 {used} 次评分。")
    kept = _last_with_score(graded)
    if kept is None:  # nothing to keep: grading this one is fairer than a 0
        return Verdict(True, len(in_window) + 1, f"Submission limit: {en_limit}; no earlier score was found, so this "
                                                 f"submission is graded. / 提交次数限制：{zh_limit}；未找到之前的成绩，本次照常评分。")
    next_time = (in_window[len(in_window) - limit.max_submissions] + timedelta(hours=limit.window_hours)
                 if limit.window_hours else None)
    return Verdict(False, len(in_window), _refusal(limit, kept, next_time, now), kept, next_time)


def _refusal(limit: Limit, kept: dict, next_time: datetime | None, now: datetime) -> str:
    zh_limit = limit.in_words()[1]
    had = f"{limit.max_submissions} graded submission{'s' if limit.max_submissions != 1 else ''}"
    had += f" in the last {limit.hours()}" if limit.window_hours else ""
    when = _local(parse_time(kept["submission_time"]), now)
    en_kept = f"Your score stays {kept['score']:g}, from your submission of {when}."
    zh_kept = f"你的成绩保持为 {kept['score']:g}（来自 {when} 的提交）。"
    if next_time is None:
        en_next, zh_next = "No further submission is graded.", "之后的提交都不会评分。"
    else:
        counts = _local(next_time, now, round_up=True)
        en_next, zh_next = f"A submission counts again from {counts}.", f"从 {counts} 起的提交将再次评分。"
    return "\n".join([NOT_GRADED,
                      f"You have had {had}, the most allowed, so this one was not graded. {en_kept} {en_next}",
                      f"本次提交未评分：{zh_limit}，已用完。{zh_kept}{zh_next}"])


def _local(moment: datetime, like: datetime, round_up: bool = False) -> str:
    """'2026-12-02 09:13 (UTC+08:00)' in the time zone of `like`, to the minute (rounded up: a time
    from which something holds)."""
    moment = moment.astimezone(like.tzinfo)
    if round_up and (moment.second or moment.microsecond):
        moment += timedelta(minutes=1)
    moment = moment.replace(second=0, microsecond=0)
    offset = moment.strftime("%z")
    return f"{moment:%Y-%m-%d %H:%M} (UTC{offset[:3]}:{offset[3:]})"


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _score(previous: dict) -> float | None:
    """A previous submission's score (Gradescope writes a number; a numeric string is read too)."""
    try:
        value = float(previous.get("score"))
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


# ----------------------------------------------------------------------------- what the student gets

def kept_results(verdict: Verdict, execution_time: float) -> dict:
    """A Gradescope results.json for a submission that was not graded: the last graded one's results
    and score, the note first."""
    previous = verdict.kept
    results = copy.deepcopy(previous.get("results")) if isinstance(previous.get("results"), dict) else {}
    results.pop("leaderboard", None)
    earlier = results.get("output")
    results.update(score=previous["score"], execution_time=round(execution_time, 3),
                   output=verdict.note + (f"\n\nYour last graded submission / 上次评分的提交:\n{earlier}" if earlier else ""))
    results.setdefault("tests", [])
    extra = results.setdefault("extra_data", {}).setdefault("autograd_lab", {})
    extra["submission_limit"] = {"graded": False, "counted": verdict.counted}
    return results


def kept_question_scores(previous: dict, maxima: dict[str, float]) -> tuple[dict[str, float], bool]:
    """Per-exercise scores that add up to the kept (`previous`: `Verdict.kept`, `last_graded`) score, for
    otter's questions, and whether they are the kept submission's own (otter's results list one test per
    question). Without them, the kept total is spread over the exercises in order, each up to its maximum."""
    results = previous.get("results") if isinstance(previous.get("results"), dict) else {}
    tests = {t.get("name"): t.get("score") for t in results.get("tests", []) if isinstance(t, dict)}
    if all(_is_number(tests.get(name)) for name in maxima):
        return {name: float(tests[name]) for name in maxima}, True
    left, spread = previous["score"], {}
    for name, maximum in maxima.items():
        spread[name] = min(maximum, max(0.0, left))
        left -= spread[name]
    return spread, False


def score_stays(kept: dict) -> str:
    """What the student reads of the earlier graded submission (`last_graded`) whose score stands."""
    moment = parse_time(kept["submission_time"])
    when = _local(moment, moment)
    return (f"Your score stays {kept['score']:g}, from your submission of {when}. / "
            f"你的成绩保持为 {kept['score']:g}（来自 {when} 的提交）。")


def kept_when_ungradable(kept: dict, reason: str, execution_time: float) -> dict:
    """A Gradescope results.json for a submission the grader could not grade (`reason`, whose first line is
    UNGRADABLE): the last graded submission's results and score stand, as past the limit, with `reason`
    first; it is no grade of this submission and counts as no submission."""
    results = copy.deepcopy(kept.get("results")) if isinstance(kept.get("results"), dict) else {}
    results.pop("leaderboard", None)
    earlier = results.get("output")
    results.update(score=kept["score"], execution_time=round(execution_time, 3),
                   output=reason + "\n" + score_stays(kept)
                   + (f"\n\nYour last graded submission / 上次评分的提交:\n{earlier}" if earlier else ""))
    results.setdefault("tests", [])
    extra = results.setdefault("extra_data", {}).setdefault("autograd_lab", {})
    extra.update(status="ungradable", kept_from=kept["submission_time"])
    return results
