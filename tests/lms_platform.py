"""A real LTI 1.3 platform on 127.0.0.1 for the passback tests: lti1p3platform 0.1.8 behind http.server.

lti1p3platform does the platform's own work: it verifies the tool's client assertion against
the tool's registered key set and issues a signed access token (`get_access_token`), and its
AssignmentsGradesService checks the Bearer token on the score endpoint (`handle_update_score`)
and hands the score to our in-memory store.

lti1p3platform 0.1.8 skips several checks (docs/lms.md, "How each integration is verified"), so this server adds
them and records every breach in `violations` (the tests require it to stay empty):
- token request: form-encoded; `client_assertion_type` is jwt-bearer; the assertion has
  `iss = sub = client_id`, `aud` = token URL, `exp > iat`, a `jti` never seen before, and the
  configured `kid`; every requested scope is granted (the scopes requested are recorded);
- score post: path is the line item's path + `/scores` with the line item's query string kept;
  `Content-Type: application/vnd.ims.lis.v1.score+json`; the body validates against the AGS
  score schema (tests/data/lti_ags_score.schema.json, with date-time formats);
  `timestamp` has sub-second precision; `Completed` / `FullyGraded`; the Bearer token grants
  `score` (lti1p3platform accepts a token with any AGS scope on any AGS endpoint).

And it learns the rules of the platforms the passback is for (not violations: answers):
- Moodle (`mod/lti/service/gradebookservices/classes/local/resources/scores.php`): the grade
  keeps `strtotime($score->timestamp)`, whole seconds, and a post whose timestamp is not in a
  later second than the last accepted one gets 409 "Refusing score with an earlier timestamp";
- Canvas (`app/controllers/lti/ims/scores_controller.rb`): a post is a new submission attempt
  unless the extension `https://canvas.instructure.com/lti/submission` says
  `new_submission: false` (or `submission_type: none`); the attempt is submitted at
  `submission.submittedAt`, else the top-level `submittedAt`, else the extension's
  `submitted_at`, else now; a submittedAt more than a minute ahead gets 400; with
  `allowed_attempts` used up a new attempt gets 422; a score with a comment adds a submission
  comment; the submission is late when its last attempt was submitted after `due_at`.
  `canvas[user]` holds what Canvas would show: attempts, late, comments, score.

The line items container (GET, scope lineitem.readonly) is lti1p3platform's own handler.

Failure injection: `fail_first_score_for` answers 503 to the first post for those users,
`fail_always_for` answers 503 every time, `reject_for` answers 404 (a user not in the course),
and `text_responses` answers 200 with a plain-text body.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jsonschema
import jwt
from jwcrypto.jwk import JWK
from lti1p3platform.exceptions import LineItemNotFoundException
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.registration import Registration
from lti1p3platform.request import Request
from lti1p3platform.score import UpdateScoreStatus
from lti1p3platform.service_connector import AssignmentsGradesService

SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
CANVAS_SUBMISSION = "https://canvas.instructure.com/lti/submission"
JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
SCORE_SCHEMA = json.loads((Path(__file__).parent / "data" / "lti_ags_score.schema.json").read_text())
SCORE_VALIDATOR = jsonschema.Draft202012Validator(SCORE_SCHEMA, format_checker=jsonschema.FormatChecker())
LINE_ITEMS_PATH = "/mod/lti/services.php/course/2/lineitems"
LINE_ITEM_PATH = LINE_ITEMS_PATH + "/7/lineitem"
LINE_ITEM_QUERY = "type_id=3"


def rsa_key() -> JWK:
    return JWK.generate(kty="RSA", size=2048)


def private_pem(key: JWK) -> str:
    return key.export_to_pem(private_key=True, password=None).decode()


def public_pem(key: JWK) -> str:
    return key.export_to_pem().decode()


class PlatformConf(LTI1P3PlatformConfAbstract):
    """lti1p3platform's platform configuration: our registration of the tool."""

    def init_platform_config(self, **kwargs: Any) -> None:
        self.registration = (
            Registration().set_iss(kwargs["issuer"]).set_client_id(kwargs["client_id"])
            .set_deployment_id(kwargs["deployment_id"]).set_tool_key_set(kwargs["tool_jwks"])
            .set_platform_public_key(kwargs["platform_public"]).set_platform_private_key(kwargs["platform_private"])
        )

    def get_registration_by_params(self, **kwargs: Any) -> Registration:
        return self.registration


class PlainRequest(Request):
    def build_metadata(self, request: dict) -> dict:
        return request


class MemoryScores(AssignmentsGradesService):
    """lti1p3platform's AGS with the line item and scores kept in memory."""

    store: dict[str, list[dict]]

    def update_score(self, line_item_id: str, score: dict) -> UpdateScoreStatus:
        if line_item_id != "7":
            raise LineItemNotFoundException()
        self.store.setdefault(score["userId"], []).append(score)
        return UpdateScoreStatus.SUCCESS

    def find_lineitem(self, line_item_id):
        return {"id": line_item_id, "label": "Autograd HW1", "scoreMaximum": 95}

    def find_lineitems(self, *args, **kwargs):
        return {"content": [self.find_lineitem("7")], "has_next": False, "next": None}

    def create_lineitem(self, creation_data):
        raise NotImplementedError

    def update_lineitem(self, update_data):
        raise NotImplementedError

    def delete_lineitem(self, line_item_id):
        raise NotImplementedError

    def get_results(self, *args, **kwargs):
        return {"content": [], "has_next": False, "next": None}


class LoopbackPlatform:
    def __init__(self, tool_jwks: dict, client_id: str = "autograd-lab-tool", key_id: str = "",
                 platform_key: JWK | None = None) -> None:
        self.client_id = client_id
        self.key_id = key_id
        self.issuer = "https://lms.example.edu"
        self.platform_key = platform_key or rsa_key()
        self.conf = PlatformConf(issuer=self.issuer, client_id=client_id, deployment_id="deployment-1",
                                 tool_jwks=tool_jwks, platform_public=public_pem(self.platform_key),
                                 platform_private=private_pem(self.platform_key))
        self.conf.get_registration()
        self.lock = threading.Lock()
        self.violations: list[str] = []
        self.assertions: list[dict] = []
        self.score_attempts: list[dict] = []
        self.store: dict[str, list[dict]] = {}  # what lti1p3platform accepted, per user
        self.seen_jti: set[str] = set()
        self.last_timestamp: dict[str, datetime] = {}
        self.due_at: datetime | None = None  # Canvas: the assignment's due date
        self.allowed_attempts: int | None = None  # Canvas: None = unlimited
        self.canvas: dict[str, CanvasSubmission] = {}
        self.fail_first_score_for: set[str] = set()
        self.fail_always_for: set[str] = set()
        self.reject_for: set[str] = set()
        self.text_responses = False
        self._failed_once: set[str] = set()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.token_url = f"{self.base_url}/token"
        self.line_item_url = f"{self.base_url}{LINE_ITEM_PATH}?{LINE_ITEM_QUERY}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def __enter__(self) -> "LoopbackPlatform":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def config(self) -> dict:
        """The platform config file the LMS admin would hand to the instructor."""
        return {"issuer": self.issuer, "client_id": self.client_id, "deployment_id": "deployment-1",
                "token_url": self.token_url, "line_item_url": self.line_item_url,
                "line_items_url": f"{self.base_url}{LINE_ITEMS_PATH}", "key_id": self.key_id}

    def accepted(self) -> dict[str, list[dict]]:
        return {user: list(scores) for user, scores in self.store.items()}

    def violate(self, message: str) -> None:
        self.violations.append(message)

    # ------------------------------------------------------------------ token endpoint

    def token(self, headers, body: bytes) -> tuple[int, dict]:
        if headers.get("Content-Type", "").split(";")[0].strip() != "application/x-www-form-urlencoded":
            self.violate(f"token: Content-Type {headers.get('Content-Type')!r}")
            return 400, {"error": "invalid_request"}
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        try:  # lti1p3platform: required fields, grant type, signature against the tool's key set
            response = self.conf.get_access_token(form)
        except Exception as exc:  # what the real platform refuses: a 400 like Moodle's token.php
            return 400, {"error": "invalid_client", "error_description": f"{type(exc).__name__}: {exc}"}
        problems = self._assertion_problems(form) + self._scope_problems(form, response)
        if problems:
            for problem in problems:
                self.violate(f"token: {problem}")
            return 400, {"error": "invalid_client", "error_description": "; ".join(problems)}
        return 200, dict(response)

    def _assertion_problems(self, form: dict) -> list[str]:
        problems = []
        if form.get("client_assertion_type") != JWT_BEARER:
            problems.append(f"client_assertion_type {form.get('client_assertion_type')!r}")
        assertion = form["client_assertion"]
        header = jwt.get_unverified_header(assertion)
        key = next((k for k in self.conf.registration.get_tool_key_set()["keys"] if k["kid"] == header.get("kid")), None)
        if key is None or (self.key_id and header.get("kid") != self.key_id):
            return problems + [f"kid {header.get('kid')!r} is not the registered key id"]
        try:
            claims = jwt.decode(assertion, JWK(**key).export_to_pem(), algorithms=["RS256"], audience=self.token_url,
                                options={"require": ["iss", "sub", "aud", "iat", "exp", "jti"]})
        except jwt.PyJWTError as exc:  # includes a wrong audience (lti1p3platform 0.1.8 skips it)
            return problems + [f"client assertion: {type(exc).__name__}: {exc}"]
        self.assertions.append(claims)
        if not claims["iss"] == claims["sub"] == self.client_id:
            problems.append(f"iss/sub {claims['iss']!r}/{claims['sub']!r} are not the client id")
        if not claims["exp"] > claims["iat"]:
            problems.append("exp is not after iat")
        with self.lock:
            if claims["jti"] in self.seen_jti:
                problems.append(f"jti {claims['jti']!r} replayed")
            self.seen_jti.add(claims["jti"])
        return problems

    def _scope_problems(self, form: dict, response: dict) -> list[str]:
        """Every requested scope must be granted (the score endpoint then checks for `score`)."""
        requested, granted = form.get("scope", "").split(), response["scope"].split()
        if self.assertions:
            self.assertions[-1]["requested_scope"] = requested
        if not requested:
            return ["no scope requested"]
        missing = [scope for scope in requested if scope not in granted]
        return [f"scope(s) {missing} requested but not granted"] if missing else []

    # ------------------------------------------------------------------ score endpoint

    def score(self, method: str, path: str, query: str, headers, body: bytes) -> tuple[int, Any]:
        attempt = {"path": path, "query": query, "content_type": headers.get("Content-Type"), "body": None}
        self.score_attempts.append(attempt)
        try:
            score = json.loads(body)
            attempt["body"] = score
        except ValueError:
            self.violate("score: body is not JSON")
            return 400, {"error": "body is not JSON"}
        user = score.get("userId")
        if user in self.fail_always_for or (user in self.fail_first_score_for and user not in self._failed_once):
            self._failed_once.add(user)
            return 503, {"error": "temporarily unavailable"}
        if user in self.reject_for:
            return 404, {"error": f"user {user} is not in this course"}
        problems = self._score_problems(path, query, headers, score)
        if problems:
            for problem in problems:
                self.violate(f"score for {user}: {problem}")
            return 400, {"error": "; ".join(problems)}
        refusal = self._moodle_refusal(score) or self._canvas_refusal(score)
        if refusal:
            return refusal
        service = MemoryScores(PlainRequest({"method": method, "headers": headers, "json": score, "get_data": {},
                                             "form_data": {}, "content_type": headers.get("Content-Type"),
                                             "path": path}),
                               self.conf, lineitems_url=f"{self.base_url}{LINE_ITEMS_PATH}")
        service.store = self.store
        response = service.handle_resp(service.handle_update_score, line_item_id="7")
        if response.code < 300:
            self.last_timestamp[user] = _parse_time(score["timestamp"])
            self._canvas_record(score)
        if self.text_responses and response.code < 300:
            return response.code, "ok"
        return response.code, {"status": response.message}

    def _score_problems(self, path: str, query: str, headers, score: dict) -> list[str]:
        problems = []
        if path != LINE_ITEM_PATH + "/scores" or query != LINE_ITEM_QUERY:
            problems.append(f"posted to {path}?{query}, not the line item's /scores with its query kept")
        if headers.get("Content-Type") != "application/vnd.ims.lis.v1.score+json":
            problems.append(f"Content-Type {headers.get('Content-Type')!r}")
        problems += [f"schema: {e.message}" for e in SCORE_VALIDATOR.iter_errors(score)]
        stamp = score.get("timestamp", "")
        if not re.search(r"T\d\d:\d\d:\d\d\.\d+", stamp):
            problems.append(f"timestamp {stamp!r} has no sub-second precision")
        if score.get("activityProgress") != "Completed" or score.get("gradingProgress") != "FullyGraded":
            problems.append("a final score must be Completed and FullyGraded")
        auth = headers.get("Authorization", "").split()
        if len(auth) == 2 and auth[0].lower() == "bearer":
            try:
                granted = jwt.decode(auth[1], public_pem(self.platform_key), algorithms=["RS256"])["scopes"]
                if SCORE_SCOPE not in granted.split():
                    problems.append("the access token does not grant the score scope")
            except jwt.PyJWTError:
                pass  # lti1p3platform answers 401 for a bad token
        return problems

    # ------------------------------------------------------------------ the platforms' rules

    def _moodle_refusal(self, score: dict) -> tuple[int, dict] | None:
        """scores.php: `$grade->timemodified >= strtotime($score->timestamp)` -> 409 (whole seconds)."""
        last = self.last_timestamp.get(score["userId"])
        if last is not None and int(last.timestamp()) >= int(_parse_time(score["timestamp"]).timestamp()):
            return 409, {"error": f"Refusing score with an earlier timestamp for item 7 and user {score['userId']}"}
        return None

    @staticmethod
    def _canvas_new_submission(score: dict) -> bool:
        extension = score.get(CANVAS_SUBMISSION) or {}
        flag = extension.get("new_submission")
        if isinstance(flag, str):  # ActiveRecord::Type::Boolean casts "false", "0", "f", "off"...
            flag = flag.strip().lower() not in ("false", "0", "f", "off", "")
        return (flag is None or bool(flag)) and extension.get("submission_type") != "none"

    @staticmethod
    def _canvas_submitted_at(score: dict) -> str | None:
        return ((score.get("submission") or {}).get("submittedAt") or score.get("submittedAt")
                or (score.get(CANVAS_SUBMISSION) or {}).get("submitted_at"))

    def _canvas_refusal(self, score: dict) -> tuple[int, dict] | None:
        submitted = self._canvas_submitted_at(score)
        if submitted is not None:
            try:
                moment = _parse_time(submitted)
            except ValueError:
                return 400, {"errors": [{"message": f"Provided submitted_at timestamp of {submitted} not a valid timestamp"}]}
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=timezone.utc)
            if moment > datetime.now(timezone.utc) + timedelta(minutes=1):
                return 400, {"errors": [{"message": f"Provided submitted_at timestamp of {submitted} in the future"}]}
        state = self.canvas.get(score["userId"])
        used = len(state.attempts) if state else 0
        if self._canvas_new_submission(score) and self.allowed_attempts is not None and used >= self.allowed_attempts:
            return 422, {"errors": [{"message": "The maximum number of allowed attempts has been reached for "
                                                "this submission"}]}
        return None

    def _canvas_record(self, score: dict) -> None:
        state = self.canvas.setdefault(score["userId"], CanvasSubmission())
        if self._canvas_new_submission(score):
            submitted = self._canvas_submitted_at(score)
            state.attempts.append(_parse_time(submitted) if submitted else datetime.now(timezone.utc))
        state.score = score.get("scoreGiven")
        if score.get("comment"):
            state.comments.append(score["comment"])

    def late(self, user: str) -> bool:
        """Canvas: the submission was handed in after the due date (its last attempt)."""
        state = self.canvas.get(user)
        return bool(state and state.attempts and self.due_at and state.attempts[-1] > self.due_at)

    # ------------------------------------------------------------------ line items container

    def line_items(self, path: str, headers) -> tuple[int, Any]:
        service = MemoryScores(PlainRequest({"method": "GET", "headers": headers, "json": None, "get_data": {},
                                             "form_data": {}, "content_type": None, "path": path}),
                               self.conf, lineitems_url=f"{self.base_url}{LINE_ITEMS_PATH}",
                               allow_creating_lineitems=False)
        response = service.handle_resp(service.handle_get_lineitems)
        if response.code >= 300:
            return response.code, {"error": response.message}
        return 200, [{**item, "id": self.line_item_url} for item in response.result["content"]]

    # ------------------------------------------------------------------ HTTP

    def _handler_class(self):
        platform = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                parts = urlsplit(self.path)
                if parts.path == LINE_ITEMS_PATH:
                    self._answer(*platform.line_items(parts.path, self.headers))
                else:
                    self._answer(404, {"error": "not found"})

            def do_POST(self):
                parts = urlsplit(self.path)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if parts.path == "/token":
                    code, payload = platform.token(self.headers, body)
                elif parts.path.startswith("/mod/lti/services.php/"):
                    code, payload = platform.score("POST", parts.path, parts.query, self.headers, body)
                else:
                    code, payload = 404, {"error": "not found"}
                self._answer(code, payload)

            def _answer(self, code, payload):
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "text/plain" if isinstance(payload, str) else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        return Handler


@dataclass
class CanvasSubmission:
    attempts: list[datetime] = field(default_factory=list)  # when each attempt was submitted
    comments: list[str] = field(default_factory=list)
    score: float | None = None


def _parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
