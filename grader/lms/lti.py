"""LTI 1.3 Assignment and Grade Services (AGS): post each student's score to an LMS line item.

Works with any LTI 1.3 platform with AGS (Canvas, Moodle, Blackboard, Brightspace...), once the
LMS admin has registered this tool (client id, the tool's public key) and the course has a line
item (a gradebook column) for the assignment. The tool side is pylti1p3 (`ServiceConnector`,
`AssignmentsGradesService.put_grade`), following docs/lms-formats.md, LTI:

1. token: POST the platform's token URL, form-encoded, `grant_type=client_credentials`, a
   client assertion JWT signed RS256 with the tool's private key (`iss = sub = client_id`,
   `aud` = token URL, `iat`, `exp`, unique `jti`, header `kid`), `scope` = the AGS score scope;
2. score: POST `{line item}/scores` (before any query string), `Content-Type:
   application/vnd.ims.lis.v1.score+json`, Bearer token, body `userId`, `scoreGiven`,
   `scoreMaximum`, `activityProgress: Completed`, `gradingProgress: FullyGraded` (Moodle keeps a
   score only when FullyGraded; Canvas ignores NotReady/Failed/Pending), `timestamp` and
   `comment` (the per-exercise summary).

When the student handed in (the score file's `submitted_at`, written by `grader gradebook`):
AGS's `submission: {submittedAt}` and Canvas's extension
`https://canvas.instructure.com/lti/submission: {new_submission, submitted_at}` carry it.
Canvas (`app/controllers/lti/ims/scores_controller.rb`) makes every score post a new submission
attempt, "submitted" when it is posted, unless `new_submission` is false; only a new attempt
takes `submitted_at`, and its lateness (and the course's late policy) follows from it. So:
- the first post for a student whose hand-in time is known is a new attempt dated then, so
  the platform's late policy judges when the student handed in, not when we posted;
- every other post says `new_submission: false`: a regrade or a rerun makes no new attempt (no
  422 with limited attempts); with no hand-in time no attempt is ever made, so Canvas never
  marks the grade late (`--no-submitted-at` forces this when `grader gradebook` already applied
  the late policy: a deduction is never applied twice).

Timestamps: ISO 8601 with milliseconds (Canvas asks for sub-second precision), and each post
for a student in a later whole second than the last one sent or accepted for them: Moodle
compares `strtotime()` seconds and refuses an equal one with 409 (`scores.php`), Canvas refuses
an older one with 400. The clock waits for the next second rather than writing a time to come.

Failures: 5xx, 429 and network errors are retried with exponential backoff (a new timestamp
each try); other errors (a 409 among them) are reported per student with what they mean and
the run goes on, except a refused token, which stops the run. Accepted scores are recorded in
the ledger (`ledger.py`) as they are accepted, so a rerun posts only what changed, and an
interrupted run says who was posted.

Secrets come from files only: the platform config (JSON) and the tool's private key (PEM).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit

from grader.lms import LmsError
from grader.lms.ledger import Ledger, score_hash
from grader.lms.matching import Reconciliation
from grader.lms.roster import Roster, RosterRow
from grader.lms.scores import Adjustment, SubmissionScore, exercise_summary, format_points
from grader.safetext import clean_text

CANVAS_SUBMISSION = "https://canvas.instructure.com/lti/submission"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
LINE_ITEM_READ_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"
SCORE_MEDIA_TYPE = "application/vnd.ims.lis.v1.score+json"
NO_SUBMISSION_COMMENT = "No submission received."
RETRYABLE_STATUS = {429, 500, 502, 503, 504}
MAX_RETRY_AFTER_S = 60.0
MAX_CLOCK_WAIT_S = 2.0  # the longest the clock waits for a later second; beyond, the clock is behind
LMS_EXTRA_HINT = "install the instructor's LMS extra: pip install 'autograd-lab[lms]'"


def require_lms_extra() -> None:
    """Fail with a clear message when the LMS packages are missing (students do not have them)."""
    missing = []
    for module, package in (("pylti1p3", "pylti1p3"), ("jwcrypto", "jwcrypto"), ("requests", "requests"),
                            ("jwt", "PyJWT")):
        try:
            __import__(module)
        except ImportError:
            missing.append(package)
    if missing:
        raise LmsError(f"LTI passback needs {', '.join(missing)}; {LMS_EXTRA_HINT}")


# ----------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class PlatformConfig:
    """What the LMS admin gives you when registering the tool (see docs/lms.md)."""

    issuer: str
    client_id: str
    token_url: str
    deployment_id: str = ""
    line_item_url: str = ""
    line_items_url: str = ""
    key_id: str = ""
    audience: str = ""


REQUIRED_CONFIG = ("issuer", "client_id", "token_url")
OPTIONAL_CONFIG = ("deployment_id", "line_item_url", "line_items_url", "key_id", "audience")


def load_platform_config(path: str | Path) -> PlatformConfig:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LmsError(f"{path}: platform config file not found") from None
    except (OSError, ValueError) as exc:
        raise LmsError(f"{path}: the platform config must be a JSON object ({exc})") from None
    if not isinstance(data, dict):
        raise LmsError(f"{path}: the platform config must be a JSON object")
    unknown = sorted(set(data) - set(REQUIRED_CONFIG) - set(OPTIONAL_CONFIG))
    if unknown:
        raise LmsError(f"{path}: unknown setting(s) {', '.join(unknown)}; known: "
                       f"{', '.join(REQUIRED_CONFIG + OPTIONAL_CONFIG)}")
    missing = [k for k in REQUIRED_CONFIG if not isinstance(data.get(k), str) or not data[k].strip()]
    if missing:
        raise LmsError(f"{path}: missing setting(s) {', '.join(missing)}")
    not_text = [k for k in OPTIONAL_CONFIG if k in data and not isinstance(data[k], str)]
    if not_text:
        raise LmsError(f"{path}: setting(s) {', '.join(not_text)} must be strings")
    config = PlatformConfig(**{k: data[k].strip() for k in data})
    check_service_url(config.token_url, f"{path}: token_url")
    for name in ("line_item_url", "line_items_url"):
        if getattr(config, name):
            check_service_url(getattr(config, name), f"{path}: {name}")
    return config


def check_service_url(url: str, what: str) -> None:
    """https, except on this machine: a Bearer token must not cross a network in clear text."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.netloc:
        return
    if parts.scheme == "http" and parts.hostname in ("127.0.0.1", "localhost", "::1"):
        return
    raise LmsError(f"{what} must be an https:// URL (http:// only for 127.0.0.1/localhost), not {url!r}")


def load_private_key(path: str | Path) -> str:
    """The tool's RSA private key (PEM). Warn when other users can read it."""
    from jwcrypto.jwk import JWK

    path = Path(path)
    try:
        pem = path.read_text(encoding="ascii")
    except FileNotFoundError:
        raise LmsError(f"{path}: private key file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise LmsError(f"{path}: cannot read the private key ({exc})") from None
    try:
        key = JWK.from_pem(pem.encode("ascii"))
    except (ValueError, TypeError) as exc:
        raise LmsError(f"{path}: not a PEM private key ({exc})") from None
    if key.get("kty") != "RSA" or not key.has_private:
        raise LmsError(f"{path}: LTI 1.3 needs an RSA private key (RS256); got {key.get('kty')}"
                       f"{'' if key.has_private else ' public key'}")
    return pem


def key_is_private_to_owner(path: str | Path) -> bool:
    return os.name != "posix" or (Path(path).stat().st_mode & 0o077) == 0


def public_jwk(private_pem: str, key_id: str = "") -> dict[str, Any]:
    """The public half as a JWK (what the admin registers), with our kid or the key's thumbprint."""
    from jwcrypto.jwk import JWK

    key = JWK.from_pem(private_pem.encode("ascii"))
    jwk = json.loads(key.export_public())
    jwk.update({"alg": "RS256", "use": "sig", "kid": key_id or key.thumbprint()})
    return jwk


# ----------------------------------------------------------------------------- what to post


@dataclass(frozen=True)
class PlannedScore:
    user_id: str
    submission: str  # '' for a student without a submission (posted with --missing-as-zero)
    row: RosterRow
    body: dict[str, Any]  # the score without its timestamp and Canvas's new_submission flag
    late_adjustments: tuple[Adjustment, ...] = ()

    @property
    def digest(self) -> str:
        return score_hash(self.body)


def iso_milliseconds(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds")


def score_body(user_id: str, score_given: float, score_maximum: float, comment: str,
               submitted_at: datetime | None = None) -> dict[str, Any]:
    body = {
        "userId": user_id,
        "scoreGiven": round(score_given, 4),
        "scoreMaximum": round(score_maximum, 4),
        "activityProgress": "Completed",
        "gradingProgress": "FullyGraded",
        "comment": comment,
    }
    if submitted_at is not None:
        body["submission"] = {"submittedAt": iso_milliseconds(submitted_at)}
    return body


def post_body(planned: PlannedScore, timestamp: str, first_post: bool) -> dict[str, Any]:
    """What is sent: the planned score, its timestamp, and Canvas's submission extension.

    A new attempt only on the first post of a score with a hand-in time (module docstring).
    """
    submitted = planned.body.get("submission", {}).get("submittedAt")
    extension: dict[str, Any] = {"new_submission": bool(first_post and submitted)}
    if submitted:
        extension["submitted_at"] = submitted
    return {**planned.body, "timestamp": timestamp, CANVAS_SUBMISSION: extension}


def plan_scores(roster: Roster, rec: Reconciliation, user_id_column: str = "lti_user_id",
                missing_as_zero: bool = False, send_submitted_at: bool = True) -> list[PlannedScore]:
    """One score per matched student (and per student without a submission, with --missing-as-zero)."""
    missing_rows = rec.without_submission if missing_as_zero else []
    rows = [row for row, _ in rec.matched] + missing_rows
    purpose = f"LTI passback (userId from {user_id_column})"
    roster.require_values(user_id_column, purpose, rows)
    roster.require_unique(user_id_column, purpose)
    planned = [PlannedScore(row.get(user_id_column), score.submission, row,
                            score_body(row.get(user_id_column), score.score, score.max_score, exercise_summary(score),
                                       score.submitted_at if send_submitted_at else None),
                            score.late_adjustments)
               for row, score in rec.matched]
    if missing_rows:
        maximum = _common_maximum([score for _, score in rec.matched])
        planned += [PlannedScore(row.get(user_id_column), "", row,
                                 score_body(row.get(user_id_column), 0.0, maximum, NO_SUBMISSION_COMMENT))
                    for row in missing_rows]
    return planned


def _common_maximum(scores: list[SubmissionScore]) -> float:
    maxima = {s.max_score for s in scores}
    if len(maxima) != 1:
        raise LmsError("--missing-as-zero needs every score file to have the same max_score, "
                       f"found {sorted(maxima)}")
    return maxima.pop()


def late_penalty_warning(planned: list[PlannedScore]) -> str | None:
    """docs/scoring.md: when the files already carry `grader gradebook`'s late penalty, say so before posting."""
    late = [p for p in planned if p.late_adjustments]
    if not late:
        return None
    example = late[0]
    shown = "; ".join(f"{a.points:+g} ({a.reason})" for a in example.late_adjustments)
    sends_time = any("submission" in p.body for p in late)
    return (f"{len(late)} score file(s) already carry a late penalty from `grader gradebook` (e.g. "
            f"{example.submission}: {shown}). "
            + ("This passback also tells the LMS when each student handed in, so an LMS late policy (Canvas: "
               "Late Policies) would deduct again. " if sends_time else "")
            + "Use one of the two policies, not both: turn the LMS's late policy off for this course, or pass "
              "--no-submitted-at (docs/lms.md, 'Late penalties').")


# ----------------------------------------------------------------------------- timestamps


class ClockBehind(Exception):
    pass


class PostClock:
    """ISO 8601 UTC timestamps with milliseconds, each in a later whole second than the last
    one sent or accepted for the same user (Moodle: `strtotime()` seconds, 409 if not later).

    When the current time is not yet in such a second, the clock waits for it; a wait longer
    than `max_wait_s` means that this computer's clock is behind the platform's record, and
    raises ClockBehind instead of writing a time to come.
    """

    def __init__(self, now: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
                 sleep: Callable[[float], None] = time.sleep, max_wait_s: float = MAX_CLOCK_WAIT_S) -> None:
        self._now = now
        self._sleep = sleep
        self._max_wait_s = max_wait_s
        self._last: dict[str, datetime] = {}

    def _current(self) -> datetime:
        moment = self._now().astimezone(timezone.utc)
        return moment.replace(microsecond=moment.microsecond // 1000 * 1000)

    def next(self, user: str, after: str | None = None) -> str:
        floors = [t for t in (self._last.get(user), _parse_timestamp(after)) if t is not None]
        moment = self._current()
        if floors:
            earliest = max(floors).replace(microsecond=0) + timedelta(seconds=1)
            if moment < earliest:
                wait = (earliest - moment).total_seconds()
                if wait > self._max_wait_s:
                    raise ClockBehind(
                        f"the last score posted for this student has the timestamp {iso_milliseconds(max(floors))}, "
                        f"{wait:.0f} s ahead of this computer's clock; platforms refuse a score that is not newer "
                        "(Moodle: 409): set the clock right, then run again")
                self._sleep(wait)
                moment = max(self._current(), earliest)
        self._last[user] = moment
        return iso_milliseconds(moment)


def _parse_timestamp(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)
    except ValueError:
        return None


# ----------------------------------------------------------------------------- posting


class PostError(Exception):
    def __init__(self, message: str, retryable: bool, token_refused: bool = False,
                 retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.token_refused = token_refused
        self.retry_after = retry_after


def _service_connector(config: PlatformConfig, private_pem: str, timeout_s: float):
    """pylti1p3's ServiceConnector for our registration, with a timeout on every request."""
    import requests
    from pylti1p3.registration import Registration
    from pylti1p3.service_connector import ServiceConnector

    jwk = public_jwk(private_pem, config.key_id)

    class ToolRegistration(Registration):
        def get_kid(self) -> str:  # pylti1p3 derives the kid from the key; the admin may have set another
            return jwk["kid"]

    class TimeoutSession(requests.Session):
        def request(self, *args, **kwargs):
            kwargs.setdefault("timeout", timeout_s)
            return super().request(*args, **kwargs)

    registration = (ToolRegistration().set_issuer(config.issuer).set_client_id(config.client_id)
                    .set_auth_token_url(config.token_url).set_tool_private_key(private_pem))
    if config.audience:
        registration.set_auth_audience(config.audience)
    session = TimeoutSession()
    session.headers["User-Agent"] = "autograd-lab-lti (pylti1p3)"
    return ServiceConnector(registration, requests_session=session)


def list_line_items(config: PlatformConfig, private_pem: str, line_items_url: str,
                    timeout_s: float = 30.0) -> list[dict[str, Any]]:
    """The course's line items (gradebook columns) the tool may see, to find the one to post to."""
    import requests
    from pylti1p3.assignments_grades import AssignmentsGradesService
    from pylti1p3.exception import LtiException, LtiServiceException

    connector = _service_connector(config, private_pem, timeout_s)
    service = AssignmentsGradesService(connector, {"scope": [LINE_ITEM_READ_SCOPE], "lineitems": line_items_url})
    try:
        return service.get_lineitems()
    except LtiServiceException as exc:
        raise LmsError(str(_http_error("line items request", exc.response))) from None
    except (LtiException, requests.RequestException, ValueError) as exc:
        raise LmsError(f"line items request failed: {exc}") from None


def make_score_poster(config: PlatformConfig, private_pem: str, line_item_url: str,
                      timeout_s: float = 30.0) -> Callable[[dict[str, Any]], None]:
    """A function that posts one score body with pylti1p3, raising PostError on failure."""
    import requests
    from pylti1p3.assignments_grades import AssignmentsGradesService
    from pylti1p3.exception import LtiException, LtiServiceException
    from pylti1p3.grade import Grade

    connector = _service_connector(config, private_pem, timeout_s)
    service = AssignmentsGradesService(connector, {"scope": [SCORE_SCOPE], "lineitem": line_item_url})

    def fetch_token() -> None:
        """Get (or reuse: pylti1p3 caches it) the access token, so token errors are told apart."""
        try:
            connector.get_access_token([SCORE_SCOPE])
        except LtiServiceException as exc:
            raise _http_error("token request", exc.response) from None
        except requests.exceptions.JSONDecodeError:
            raise PostError("token request: the platform's answer is not JSON", retryable=False,
                            token_refused=True) from None
        except requests.RequestException as exc:
            raise PostError(f"token request: network error: {exc.__class__.__name__}: {exc}", retryable=True) from None
        except (KeyError, ValueError, TypeError) as exc:
            raise PostError(f"token request: no access_token in the answer ({exc})", retryable=False,
                            token_refused=True) from None

    def post(body: dict[str, Any]) -> None:
        grade = (Grade().set_user_id(body["userId"]).set_score_given(body["scoreGiven"])
                 .set_score_maximum(body["scoreMaximum"]).set_activity_progress(body["activityProgress"])
                 .set_grading_progress(body["gradingProgress"]).set_timestamp(body["timestamp"]))
        if body.get("comment"):
            grade.set_comment(body["comment"])
        extra = {key: body[key] for key in ("submission", CANVAS_SUBMISSION) if key in body}
        if extra:
            grade.set_extra_claims(extra)  # pylti1p3 merges them into the score's JSON
        fetch_token()
        try:
            service.put_grade(grade)
        except LtiServiceException as exc:
            raise _http_error("score post", exc.response) from None
        except requests.exceptions.JSONDecodeError:
            return  # a 2xx answer whose body is not JSON: the score was accepted all the same
        except requests.RequestException as exc:
            raise PostError(f"score post: network error: {exc.__class__.__name__}: {exc}", retryable=True) from None
        except LtiException as exc:
            raise PostError(f"score post: {exc}", retryable=False) from None

    return post


def _http_error(where: str, response) -> PostError:
    status = response.status_code
    retry_after = None
    if response.headers.get("Retry-After", "").strip().isdigit():
        retry_after = min(float(response.headers["Retry-After"]), MAX_RETRY_AFTER_S)
    text = clean_text(response.text.strip(), 300, one_line=True)
    retryable = status in RETRYABLE_STATUS
    return PostError(f"{where} answered HTTP {status}: {text}{_meaning(status, text)}", retryable=retryable,
                     token_refused=where == "token request" and not retryable, retry_after=retry_after)


def _meaning(status: int, text: str) -> str:
    """What a refusal means for the instructor, for the answers platforms are known to give."""
    if status == 409 or (status == 400 and "timestamp" in text.lower()):
        return (" -- the platform already holds a newer score for this student (posted from elsewhere, or this "
                "computer's clock is behind); not retried: check the student's grade in the LMS, then run again")
    if status == 422 and "attempts" in text.lower():
        return (" -- Canvas refused a new submission attempt (the assignment limits attempts and the student has "
                "used them); allow one more attempt for this student, or pass --no-submitted-at")
    return ""


@dataclass
class PublishOutcome:
    posted: list[PlannedScore] = field(default_factory=list)
    unchanged: list[PlannedScore] = field(default_factory=list)
    failed: list[tuple[PlannedScore, str]] = field(default_factory=list)
    not_attempted: list[PlannedScore] = field(default_factory=list)
    aborted: str = ""
    interrupted: bool = False
    attempts: int = 0

    def as_dict(self) -> dict[str, Any]:
        def who(p: PlannedScore) -> dict[str, Any]:
            return {"user_id": p.user_id, "submission": p.submission, "roster_line": p.row.line,
                    "scoreGiven": p.body["scoreGiven"]}
        return {
            "posted": [who(p) for p in self.posted],
            "unchanged": [who(p) for p in self.unchanged],
            "failed": [{**who(p), "error": reason} for p, reason in self.failed],
            "not_attempted": [who(p) for p in self.not_attempted],
            "aborted": self.aborted,
            "http_attempts": self.attempts,
        }


def publish(planned: list[PlannedScore], line_item_url: str, ledger: Ledger,
            post: Callable[[dict[str, Any]], None], retries: int = 3, backoff_s: float = 1.0,
            sleep: Callable[[float], None] = time.sleep, clock: PostClock | None = None,
            log: Callable[[str], None] = lambda message: None) -> PublishOutcome:
    """Post every planned score not already in the ledger; record each one as it is accepted.

    Never stops half way without saying so: a refused token or Ctrl-C ends the run with the
    rest in `not_attempted` (and `aborted` saying why); any other error costs one student only.
    """
    clock = clock or PostClock(sleep=sleep)
    outcome = PublishOutcome()
    for index, item in enumerate(planned):
        try:
            if ledger.already_posted(line_item_url, item.user_id, item.digest):
                outcome.unchanged.append(item)
                continue
            body = _post_with_retries(item, line_item_url, ledger, post, retries, backoff_s, sleep, clock,
                                      outcome, log)
        except KeyboardInterrupt:
            outcome.interrupted = True
            outcome.aborted = "interrupted (Ctrl-C)"
            outcome.not_attempted = planned[index:]
            break
        except PostError as exc:
            outcome.failed.append((item, str(exc)))
            log(f"FAILED {item.user_id} ({item.row.label()}): {exc}")
            if exc.token_refused:
                outcome.aborted = f"the platform refused the access token request: {exc}"
                outcome.not_attempted = planned[index + 1:]
                break
            continue
        ledger.record(line_item_url, item.user_id, body, item.submission, item.digest)
        outcome.posted.append(item)
        log(f"posted {item.user_id}: {format_points(body['scoreGiven'])}/{format_points(body['scoreMaximum'])}")
    return outcome


def _post_with_retries(item: PlannedScore, line_item_url: str, ledger: Ledger, post, retries: int,
                       backoff_s: float, sleep, clock: PostClock, outcome: PublishOutcome,
                       log) -> dict[str, Any]:
    first_post = ledger.entry(line_item_url, item.user_id) is None
    for attempt in range(retries + 1):
        try:
            timestamp = clock.next(item.user_id, after=ledger.last_timestamp(line_item_url, item.user_id))
        except ClockBehind as exc:
            raise PostError(str(exc), retryable=False) from None
        body = post_body(item, timestamp, first_post)
        outcome.attempts += 1
        try:
            post(body)
            return body
        except PostError as exc:
            if not exc.retryable or attempt == retries:
                raise
            delay = exc.retry_after if exc.retry_after is not None else backoff_s * 2 ** attempt
            log(f"retrying {item.user_id} in {delay:g} s ({exc})")
            sleep(delay)
        except Exception as exc:  # pylti1p3 or requests failing in a way we did not foresee: this student only
            raise PostError(f"score post failed: {type(exc).__name__}: {clean_text(str(exc), 300, one_line=True)}",
                            retryable=False) from None
    raise AssertionError("unreachable")
