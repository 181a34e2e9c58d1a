"""Times as policies and platforms write them: ISO 8601 with a time zone, never a bare local time.

A time without a zone is refused rather than guessed: the same '2026-12-01 23:59' is a different
instant in Beijing and on the grading server, and the difference is a late penalty.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from grader.score_files import within_calendar  # one rule for times, in score files and in policies

EXAMPLE = "2026-12-01T23:59:00+08:00"


def parse_time(text: str) -> datetime:
    """An ISO 8601 time with a time zone ('Z' for UTC); ValueError says what is wrong."""
    value = str(text).strip()
    if value[-1:] in ("Z", "z"):
        value = value[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO 8601 time (e.g. {EXAMPLE})") from None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise ValueError(f"{text!r} has no time zone: write it as e.g. {EXAMPLE}")
    if not within_calendar(parsed):
        raise ValueError(f"{text!r} is too close to the calendar's first or last day to be a hand-in time or a deadline")
    return parsed


def iso(moment: datetime) -> str:
    """'2026-12-03T10:00:00+08:00': seconds always, microseconds only when there are some."""
    return moment.isoformat(timespec="microseconds" if moment.microsecond else "seconds")


def in_words(span: timedelta) -> str:
    """'1 day 9 h 46 min' (seconds left out, '0 min' for less than a minute)."""
    minutes = int(span.total_seconds() // 60)
    days, minutes = divmod(minutes, 24 * 60)
    hours, minutes = divmod(minutes, 60)
    parts = [f"{days} day{'s' if days != 1 else ''}"] if days else []
    parts += [f"{hours} h"] if hours else []
    parts += [f"{minutes} min"] if minutes or not parts else []
    return " ".join(parts)
