"""The LTI ledger: which scores the platform has already accepted, so a rerun posts nothing twice.

A JSON file, by default `<scores dir>/.lti-ledger.json` (the leading dot keeps it out of the
score files). For every line item and LTI user id it keeps the hash of the last score accepted
(user, points, maximum, progress, comment, hand-in time; not the timestamp) and that post's
timestamp:
- the same score again is skipped ("unchanged");
- a changed score is posted again, with a timestamp in a later second than the recorded one
  (platforms reject a score that is not newer than the last: Moodle answers 409), and as no
  new submission attempt (Canvas's `new_submission: false`), since one is recorded;
- a post that failed is not recorded, so the next run tries it again.

The file is rewritten after every accepted post (write to a temporary file, then rename), so an
interrupted run loses nothing it had posted.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from grader.lms import LmsError

LEDGER_NAME = ".lti-ledger.json"
LEDGER_VERSION = 1


def score_hash(body: dict[str, Any]) -> str:
    """Identify a planned score by its content (user, points, comment, hand-in time), whatever the
    timestamp and Canvas's new_submission flag of the post that carried it."""
    content = {k: v for k, v in body.items() if k != "timestamp"}
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


class Ledger:
    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path = path
        self._line_items: dict[str, dict[str, dict[str, Any]]] = data.setdefault("line_items", {})
        self._data = data

    @classmethod
    def load(cls, path: str | Path) -> "Ledger":
        path = Path(path)
        if not path.exists():
            return cls(path, {"version": LEDGER_VERSION, "line_items": {}})
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise LmsError(f"{path}: the LTI ledger cannot be read ({exc}); it records what was already "
                           "posted, so it is not overwritten: fix or move it first") from None
        if not isinstance(data, dict) or data.get("version") != LEDGER_VERSION \
                or not isinstance(data.get("line_items"), dict):
            raise LmsError(f"{path}: not an LTI ledger written by this tool (version {LEDGER_VERSION})")
        return cls(path, data)

    def entry(self, line_item: str, user_id: str) -> dict[str, Any] | None:
        return self._line_items.get(line_item, {}).get(user_id)

    def already_posted(self, line_item: str, user_id: str, digest: str) -> bool:
        entry = self.entry(line_item, user_id)
        return entry is not None and entry.get("score_hash") == digest

    def last_timestamp(self, line_item: str, user_id: str) -> str | None:
        entry = self.entry(line_item, user_id)
        return entry.get("timestamp") if entry else None

    def record(self, line_item: str, user_id: str, body: dict[str, Any], submission: str, digest: str) -> None:
        """`body` as posted; `digest` the score_hash of the planned score it carried."""
        self._line_items.setdefault(line_item, {})[user_id] = {
            "score_hash": digest,
            "timestamp": body["timestamp"],
            "scoreGiven": body.get("scoreGiven"),
            "scoreMaximum": body.get("scoreMaximum"),
            "submission": submission,
        }
        self.save()

    def save(self) -> None:
        temp = self.path.with_name(self.path.name + ".tmp")
        temp.write_text(json.dumps(self._data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        temp.replace(self.path)
