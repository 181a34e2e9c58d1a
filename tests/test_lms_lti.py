"""`grader publish lti`, end to end against a real LTI 1.3 platform (lti1p3platform) on 127.0.0.1.

The tool side is the real command (pylti1p3 underneath); the platform side is lti1p3platform
0.1.8 plus the checks it skips (tests/lms_platform.py). Every test requires the platform's
`violations` list to stay empty: token audience and claims, unique jti, score scope, body
schema, media type, '/scores' before the query string, increasing sub-second timestamps.
"""

from __future__ import annotations

import json
import os
import re
from datetime import datetime, timedelta, timezone

import pytest

from lms_factory import (AFTER_WRONG, EXERCISES, FIRST, MAX_SCORE, MODULE, NAMES, PER_EXERCISE, SECOND, THREE_WRONG, WRONG,
                         adjusted, make_score, run_grader, write_roster, write_scores)

# The LMS extra is instructor-only: skip where it is not installed, but never in CI, where a
# skipped loopback test would pass for a working passback.
if not os.environ.get("CI"):
    pytest.importorskip("pylti1p3", reason="install the lms-test extra: pip install -e '.[lms-test]'")
    pytest.importorskip("lti1p3platform", reason="install the lms-test extra: pip install -e '.[lms-test]'")

from grader.lms.lti import PostClock, public_jwk  # noqa: E402
from lms_platform import LoopbackPlatform, private_pem, rsa_key  # noqa: E402

KEY_ID = "autograd-lab-test-key"
LTI_USERS = {"ada": "lti-ada-6f1c", "bob": "lti-bob-77aa", "chen": "lti-chen-1b2c", "dara": "lti-dara-9e8d"}


@pytest.fixture(autouse=True)
def no_proxy_for_loopback(monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


@pytest.fixture(scope="module")
def tool_key():
    return rsa_key()


@pytest.fixture(scope="module")
def platform_key():
    return rsa_key()


@pytest.fixture
def course(tmp_path):
    """Scores for ada, bob, chen, dara (eve has not submitted), the roster, the tool's key file."""
    scores = write_scores(tmp_path / "scores", {"ada": [], "bob": list(THREE_WRONG),
                                                "chen": [f"{SECOND}::test_hidden"], "dara": list(NAMES)})
    return tmp_path, scores, write_roster(tmp_path / "roster.csv")


@pytest.fixture
def platform(tool_key, platform_key):
    tool_jwks = {"keys": [public_jwk(private_pem(tool_key), KEY_ID)]}
    with LoopbackPlatform(tool_jwks, key_id=KEY_ID, platform_key=platform_key) as running:
        yield running
    assert running.violations == [], running.violations


def files_for(tmp_path, platform, tool_key, **overrides):
    key = tmp_path / "tool-private.pem"
    key.write_text(private_pem(tool_key))
    key.chmod(0o600)
    config = tmp_path / "platform.json"
    config.write_text(json.dumps({**platform.config(), **overrides}))
    return config, key


def publish(capsys, course, platform, tool_key, *extra, **config_overrides):
    tmp_path, scores, roster = course
    config, key = files_for(tmp_path, platform, tool_key, **config_overrides)
    return run_grader(capsys, "publish", "lti", scores, "--roster", roster, "--platform-config", config,
                      "--private-key", key, "--backoff", "0.01", *extra)


def test_scores_reach_the_platform_one_per_student(capsys, course, platform, tool_key):
    tmp_path = course[0]
    code, _, err = publish(capsys, course, platform, tool_key, "--report", tmp_path / "report.json")
    assert code == 0, err
    accepted = platform.accepted()
    assert sorted(accepted) == sorted(LTI_USERS.values())  # eve (no submission) gets nothing
    expected = {"ada": MAX_SCORE, "bob": MAX_SCORE - 15, "chen": MAX_SCORE - 3, "dara": 0}
    for submission, user in LTI_USERS.items():
        (score,) = accepted[user]
        assert score["userId"] == user and score["scoreGiven"] == expected[submission]
        assert score["scoreMaximum"] == MAX_SCORE
        assert score["activityProgress"] == "Completed" and score["gradingProgress"] == "FullyGraded"
    assert f"{WRONG} 0/5; {AFTER_WRONG} 5/5" in accepted["lti-bob-77aa"][0]["comment"]
    assert len(platform.assertions) == 1  # one token for the whole run
    assert {a["path"] for a in platform.score_attempts} == {"/mod/lti/services.php/course/2/lineitems/7/lineitem/scores"}
    report = json.loads((tmp_path / "report.json").read_text())
    assert len(report["posted"]) == 4 and report["failed"] == [] and report["http_attempts"] == 4
    assert [s["submission"] for s in report["students_without_submission"]] == ["eve"]


def test_client_assertion_claims(capsys, course, platform, tool_key):
    publish(capsys, course, platform, tool_key)
    (claims,) = platform.assertions
    assert claims["requested_scope"] == ["https://purl.imsglobal.org/spec/lti-ags/scope/score"]
    assert claims["iss"] == claims["sub"] == platform.client_id
    assert claims["aud"] == platform.token_url
    assert claims["exp"] > claims["iat"] and claims["jti"]


def test_timestamps_have_milliseconds_and_increase(capsys, course, platform, tool_key):
    publish(capsys, course, platform, tool_key)
    stamps = [a["body"]["timestamp"] for a in platform.score_attempts]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", s) for s in stamps), stamps
    parsed = [datetime.fromisoformat(s) for s in stamps]
    assert parsed == sorted(parsed) and len(set(parsed)) == len(parsed)


def test_a_5xx_is_retried_with_backoff_and_succeeds(capsys, course, platform, tool_key):
    platform.fail_first_score_for = {"lti-bob-77aa"}
    code, _, err = publish(capsys, course, platform, tool_key)
    assert code == 0, err
    bob_attempts = [a for a in platform.score_attempts if a["body"]["userId"] == "lti-bob-77aa"]
    assert len(bob_attempts) == 2
    assert bob_attempts[1]["body"]["timestamp"] > bob_attempts[0]["body"]["timestamp"]
    assert len(platform.accepted()["lti-bob-77aa"]) == 1
    assert "retrying lti-bob-77aa in 0.01 s (score post answered HTTP 503" in err


def test_a_persistent_5xx_gives_up_reports_and_is_retried_next_run(capsys, course, platform, tool_key):
    platform.fail_always_for = {"lti-chen-1b2c"}
    code, _, err = publish(capsys, course, platform, tool_key, "--retries", "2")
    assert code == 1 and "FAILED lti-chen-1b2c" in err and "1 failed" in err
    assert len([a for a in platform.score_attempts if a["body"]["userId"] == "lti-chen-1b2c"]) == 3
    platform.fail_always_for = set()
    code, _, err = publish(capsys, course, platform, tool_key)
    assert code == 0 and "1 posted, 3 unchanged" in err
    assert len(platform.accepted()["lti-chen-1b2c"]) == 1


def test_a_rerun_posts_nothing_and_a_changed_score_is_posted_again(capsys, course, platform, tool_key):
    tmp_path, scores, _ = course
    publish(capsys, course, platform, tool_key)
    attempts = len(platform.score_attempts)
    code, _, err = publish(capsys, course, platform, tool_key)
    assert code == 0 and len(platform.score_attempts) == attempts  # nothing new posted
    assert "0 posted, 4 unchanged" in err
    (scores / "bob.json").write_text(json.dumps(make_score("bob", [WRONG])))  # regraded
    code, _, err = publish(capsys, course, platform, tool_key)
    assert code == 0 and "1 posted, 3 unchanged" in err
    bob = platform.accepted()["lti-bob-77aa"]
    assert [s["scoreGiven"] for s in bob] == [MAX_SCORE - 15, MAX_SCORE - 5] and bob[1]["timestamp"] > bob[0]["timestamp"]
    ledger = json.loads((scores / ".lti-ledger.json").read_text())
    assert ledger["line_items"][platform.line_item_url]["lti-bob-77aa"]["scoreGiven"] == MAX_SCORE - 5


def test_the_ledger_is_kept_per_line_item(capsys, course, platform, tool_key):
    publish(capsys, course, platform, tool_key)
    other = platform.line_item_url.replace("type_id=3", "type_id=4")
    code, _, err = publish(capsys, course, platform, tool_key, "--line-item", other)
    assert "4 failed" in err and code == 1  # attempted, not skipped as unchanged; this platform has no such item
    assert platform.violations and all("not the line item's /scores" in v for v in platform.violations)
    platform.violations.clear()


def test_a_refused_token_stops_the_run(capsys, course, platform, tool_key):
    stranger = rsa_key()  # a key the admin never registered
    code, _, err = publish(capsys, course, platform, stranger)
    assert code == 1
    assert "token request answered HTTP 400" in err and "stopped" in err and "3 score(s) not attempted" in err
    assert platform.accepted() == {} and not (course[1] / ".lti-ledger.json").exists()


def test_a_rejected_student_is_reported_and_the_others_posted(capsys, course, platform, tool_key):
    platform.reject_for = {"lti-dara-9e8d"}
    code, _, err = publish(capsys, course, platform, tool_key)
    assert code == 1 and "FAILED lti-dara-9e8d (line 5 (O'Neil, Dara; submission dara)): score post answered HTTP 404" in err
    assert sorted(platform.accepted()) == ["lti-ada-6f1c", "lti-bob-77aa", "lti-chen-1b2c"]
    assert len([a for a in platform.score_attempts if a["body"]["userId"] == "lti-dara-9e8d"]) == 1  # no retry


def test_a_plain_text_2xx_answer_counts_as_accepted(capsys, course, platform, tool_key):
    platform.text_responses = True
    code, _, err = publish(capsys, course, platform, tool_key)
    assert code == 0 and "4 posted" in err and len(platform.score_attempts) == 4


def test_missing_as_zero_posts_0_for_students_without_submission(capsys, course, platform, tool_key):
    code, _, _ = publish(capsys, course, platform, tool_key, "--missing-as-zero")
    (eve,) = platform.accepted()["lti-eve-0000"]
    assert eve["scoreGiven"] == 0 and eve["scoreMaximum"] == MAX_SCORE and eve["comment"] == "No submission received."


def test_line_items_are_listed_with_their_urls(capsys, course, platform, tool_key):
    config, key = files_for(course[0], platform, tool_key)
    code, out, err = run_grader(capsys, "publish", "lti-line-items", "--platform-config", config, "--private-key", key)
    assert code == 0, err
    (item,) = [json.loads(line) for line in out.splitlines()]
    assert item == {"id": platform.line_item_url, "label": "Autograd HW1", "scoreMaximum": 95}  # the platform's
    (claims,) = platform.assertions
    assert claims["requested_scope"] == ["https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly"]


def test_dry_run_sends_nothing(capsys, course, platform, tool_key):
    code, out, _ = publish(capsys, course, platform, tool_key, "--dry-run")
    assert code == 0 and platform.score_attempts == [] and platform.assertions == []
    planned = [json.loads(line) for line in out.splitlines()]
    assert [p["userId"] for p in planned] == list(LTI_USERS.values())
    assert all(p["state"] == "would post" for p in planned)


def test_the_real_platform_refuses_a_post_without_token(platform):
    import requests

    response = requests.post(platform.line_item_url.replace("lineitem?", "lineitem/scores?"),
                             data=json.dumps({"userId": "x", "timestamp": "2026-01-01T00:00:00.000+00:00",
                                              "activityProgress": "Completed", "gradingProgress": "FullyGraded"}),
                             headers={"Content-Type": "application/vnd.ims.lis.v1.score+json"}, timeout=5)
    assert response.status_code == 401  # lti1p3platform's own Bearer check
    platform.violations.clear()


# ----------------------------------------------------------------------------- input checks


def test_students_without_lti_user_id_are_refused_naming_rows(capsys, course, platform, tool_key):
    tmp_path, scores, _ = course
    roster = tmp_path / "r.csv"
    roster.write_text("submission,name,lti_user_id\nada,Ada,lti-ada\nbob,Bob,\n")
    config, key = files_for(tmp_path, platform, tool_key)
    code, _, err = run_grader(capsys, "publish", "lti", scores, "--roster", roster, "--platform-config", config,
                              "--private-key", key)
    assert code == 2 and "empty in line 3 (Bob; submission bob)" in err
    assert platform.score_attempts == []


def test_keys_and_secrets_come_from_files_only(capsys, course, platform, tool_key):
    from grader.cli import build_parser

    publish_lti = build_parser()._subparsers._group_actions[0].choices["publish"]
    lti_parser = publish_lti._subparsers._group_actions[0].choices["lti"]
    options = {o for action in lti_parser._actions for o in action.option_strings}
    assert not {o for o in options if any(w in o for w in ("secret", "token", "client-id", "password"))}
    tmp_path, scores, roster = course
    code, _, err = run_grader(capsys, "publish", "lti", scores, "--roster", roster, "--platform-config",
                              tmp_path / "platform.json", "--private-key", private_pem(tool_key)[:40])
    assert code == 2 and "not found" in err


@pytest.mark.parametrize("overrides, message", [
    ({"token_url": "http://lms.example.edu/token"}, "must be an https:// URL"),
    ({"client_id": ""}, "missing setting(s) client_id"),
    ({"client_secret": "x"}, "unknown setting(s) client_secret"),
    ({"line_item_url": ""}, "no line item"),
])
def test_bad_platform_config_is_refused(capsys, course, platform, tool_key, overrides, message):
    code, _, err = publish(capsys, course, platform, tool_key, **overrides)
    assert code == 2 and message in err and platform.score_attempts == []


def test_a_key_readable_by_others_is_warned_about(capsys, course, platform, tool_key):
    tmp_path = course[0]
    config, key = files_for(tmp_path, platform, tool_key)
    key.chmod(0o644)
    code, _, err = run_grader(capsys, "publish", "lti", course[1], "--roster", course[2], "--platform-config",
                              config, "--private-key", key, "--dry-run")
    assert code == 0 and "can be read by other users" in err


def test_jwks_command_prints_the_registered_public_key(capsys, course, platform, tool_key):
    config, key = files_for(course[0], platform, tool_key)
    code, out, _ = run_grader(capsys, "publish", "lti-jwks", "--private-key", key, "--platform-config", config)
    (jwk,) = json.loads(out)["keys"]
    assert code == 0 and jwk["kid"] == KEY_ID and jwk["alg"] == "RS256" and "d" not in jwk
    assert jwk["n"] == json.loads(tool_key.export_public())["n"]


def test_missing_lms_extra_names_it(capsys, course, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def without_pylti1p3(name, *args, **kwargs):
        if name.startswith("pylti1p3"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_pylti1p3)
    tmp_path, scores, roster = course
    code, _, err = run_grader(capsys, "publish", "lti", scores, "--roster", roster, "--platform-config",
                              tmp_path / "c.json", "--private-key", tmp_path / "k.pem")
    assert code == 2 and "pip install 'autograd-lab[lms]'" in err and "pylti1p3" in err


def test_clock_puts_each_post_for_a_user_in_a_later_second_and_waits_for_it():
    frozen = datetime(2026, 6, 1, 12, 0, 0, 123456, tzinfo=timezone.utc)
    waits = []
    clock = PostClock(now=lambda: frozen, sleep=waits.append)
    assert clock.next("ada") == "2026-06-01T12:00:00.123+00:00" and waits == []
    assert clock.next("bob") == "2026-06-01T12:00:00.123+00:00"  # another user: no wait
    assert clock.next("ada") == "2026-06-01T12:00:01.000+00:00"  # Moodle compares whole seconds
    assert waits == [pytest.approx(0.877)]
    later = (frozen + timedelta(seconds=1, milliseconds=500)).isoformat()
    assert clock.next("cy", after=later) == "2026-06-01T12:00:02.000+00:00"  # the ledger's last post
    with pytest.raises(Exception, match="ahead of this computer's clock"):
        clock.next("dee", after=(frozen + timedelta(minutes=5)).isoformat())


def test_the_platform_checks_catch_what_lti1p3platform_alone_accepts(platform, tool_key):
    """The extra checks of the test platform are live: each bad request below is flagged."""
    import time
    import uuid

    import jwt
    import requests

    def assertion(**claims):
        now = int(time.time())
        body = {"iss": platform.client_id, "sub": platform.client_id, "aud": platform.token_url,
                "iat": now, "exp": now + 60, "jti": str(uuid.uuid4()), **claims}
        return jwt.encode(body, private_pem(tool_key), algorithm="RS256", headers={"kid": KEY_ID})

    def token(scope="https://purl.imsglobal.org/spec/lti-ags/scope/score", **claims):
        return requests.post(platform.token_url, timeout=5, data={
            "grant_type": "client_credentials", "client_assertion": assertion(**claims), "scope": scope,
            "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"})

    expected = {
        "aud": token(aud="https://elsewhere.example/token"),
        "iss/sub": token(iss="someone-else"),
        "expired": token(exp=int(time.time()) - 1),  # lti1p3platform's own check (PyJWT verifies exp)
        "unknown scope": token(scope="https://purl.imsglobal.org/spec/lti-ags/scope/everything"),
    }
    replayed = assertion(jti="same-jti")
    for _ in range(2):
        requests.post(platform.token_url, timeout=5, data={
            "grant_type": "client_credentials", "client_assertion": replayed,
            "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            "scope": "https://purl.imsglobal.org/spec/lti-ags/scope/score"})
    for name, response in expected.items():
        assert response.status_code == 400, name
    bearer = {"Authorization": "Bearer " + token().json()["access_token"]}
    scores_url = platform.line_item_url.replace("lineitem?", "lineitem/scores?")
    good = {"userId": "u1", "scoreGiven": 1, "scoreMaximum": 2, "activityProgress": "Completed",
            "gradingProgress": "FullyGraded", "timestamp": "2026-06-01T12:00:00.100+00:00"}
    media = {"Content-Type": "application/vnd.ims.lis.v1.score+json"}
    assert requests.post(scores_url, data=json.dumps(good), headers={**bearer, **media}, timeout=5).status_code == 200
    moodle_409 = requests.post(scores_url, data=json.dumps({**good, "timestamp": "2026-06-01T12:00:00.950+00:00"}),
                               headers={**bearer, **media}, timeout=5)
    assert moodle_409.status_code == 409  # later, but in the same second (Moodle's strtotime)
    bad_posts = [
        (scores_url, {**good, "timestamp": "2026-06-01T12:00:01+00:00"}, media),  # no sub-second precision
        (scores_url, {**good, "timestamp": "2026-06-01T12:00:02.000+00:00", "scoreGiven": -1}, media),  # schema
        (scores_url, {**good, "timestamp": "2026-06-01T12:00:03.000+00:00"}, {"Content-Type": "application/json"}),
        (scores_url.split("?")[0], {**good, "timestamp": "2026-06-01T12:00:04.000+00:00"}, media),  # query lost
        (scores_url, {**good, "timestamp": "2026-06-01T12:00:05.000+00:00", "gradingProgress": "Pending"}, media),
    ]
    read_only = {"Authorization": "Bearer " + token(
        scope="https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly").json()["access_token"]}
    for url, body, headers in bad_posts:
        assert requests.post(url, data=json.dumps(body), headers={**bearer, **headers}, timeout=5).status_code >= 400
    late = {**good, "timestamp": "2026-06-01T12:00:06.000+00:00"}
    assert requests.post(scores_url, data=json.dumps(late), headers={**read_only, **media}, timeout=5).status_code == 400
    text = "\n".join(platform.violations)
    for fragment in ("InvalidAudienceError", "iss/sub", "replayed", "requested but not granted",
                     "does not grant the score scope", "no sub-second precision",
                     "schema: -1 is less than the minimum", "Content-Type 'application/json'",
                     "not the line item's /scores with its query kept", "Completed and FullyGraded"):
        assert fragment in text, fragment
    platform.violations.clear()


# ----------------------------------------------------------------------------- the platforms' rules


def old_style_post(course, platform, tool_key, user: str, score_given: float, comment: str = "regrade"):
    """A post as the export sent it before Canvas's extension and AGS's submittedAt: nothing but the score."""
    from grader.lms import lti

    config, key = files_for(course[0], platform, tool_key)
    post = lti.make_score_poster(lti.load_platform_config(config), lti.load_private_key(key), platform.line_item_url)
    last = platform.last_timestamp.get(user)
    body = {**lti.score_body(user, score_given, MAX_SCORE, comment),
            "timestamp": PostClock().next(user, after=last.isoformat() if last else None)}
    try:
        post(body)
        return 200
    except lti.PostError as exc:
        return int(re.search(r"HTTP (\d+)", str(exc)).group(1))


def hand_in(scores, name: str, failed=(), at: datetime | None = None, *adjustments) -> None:
    """The score file `grader gradebook` writes for a student who handed in at `at`."""
    stamp = at.isoformat(timespec="seconds") if at else None
    (scores / f"{name}.json").write_text(json.dumps(adjusted(make_score(name, failed), *adjustments,
                                                             submitted_at=stamp)))


def test_canvas_marks_nothing_late_for_an_on_time_student_posted_after_the_due_date(capsys, course, platform,
                                                                                   tool_key):
    now = datetime.now(timezone.utc)
    platform.due_at = now - timedelta(days=1)  # the scores are posted a day after the due date
    scores = course[1]
    hand_in(scores, "ada", (), now - timedelta(days=2))  # on time
    hand_in(scores, "bob", (WRONG,), now - timedelta(hours=12))  # 12 h late; no penalty applied by gradebook
    code, _, err = publish(capsys, course, platform, tool_key)
    assert code == 0, err
    ada, bob, chen = (platform.canvas[u] for u in ("lti-ada-6f1c", "lti-bob-77aa", "lti-chen-1b2c"))
    assert [a.isoformat() for a in ada.attempts] == [(now - timedelta(days=2)).replace(microsecond=0).isoformat()]
    assert not platform.late("lti-ada-6f1c")  # judged by when she handed in, not when we posted
    assert platform.late("lti-bob-77aa") and len(bob.attempts) == 1  # Canvas's late policy sees a late hand-in
    assert chen.attempts == [] and not platform.late("lti-chen-1b2c")  # no hand-in time: no attempt, never late
    (ada_post,) = [a["body"] for a in platform.score_attempts if a["body"]["userId"] == "lti-ada-6f1c"]
    assert ada_post["submission"] == {"submittedAt": ada_post["https://canvas.instructure.com/lti/submission"]
                                      ["submitted_at"]}
    # the difference: the same score posted the old way is a new attempt "submitted" now: late
    assert old_style_post(course, platform, tool_key, "lti-ada-6f1c", MAX_SCORE) == 200
    assert platform.late("lti-ada-6f1c") and len(ada.attempts) == 2


def test_a_regrade_makes_no_new_attempt_and_a_rerun_no_duplicate_comment(capsys, course, platform, tool_key):
    platform.allowed_attempts = 1
    scores = course[1]
    hand_in(scores, "ada", (), datetime.now(timezone.utc) - timedelta(hours=1))
    publish(capsys, course, platform, tool_key)
    ada = platform.canvas["lti-ada-6f1c"]
    assert len(ada.attempts) == 1 and len(ada.comments) == 1
    code, _, err = publish(capsys, course, platform, tool_key)  # rerun: nothing new
    assert code == 0 and "0 posted, 4 unchanged" in err and len(ada.comments) == 1
    hand_in(scores, "ada", (WRONG,), datetime.now(timezone.utc) - timedelta(hours=1))  # regraded
    code, _, err = publish(capsys, course, platform, tool_key)
    assert code == 0 and "1 posted, 3 unchanged" in err
    assert len(ada.attempts) == 1 and ada.score == MAX_SCORE - 5 and len(ada.comments) == 2  # the new summary, once
    (regrade,) = [a["body"] for a in platform.score_attempts if a["body"]["userId"] == "lti-ada-6f1c"][1:]
    assert regrade["https://canvas.instructure.com/lti/submission"]["new_submission"] is False
    # the difference: the old export's regrade asked for a new attempt, which Canvas refuses here
    assert old_style_post(course, platform, tool_key, "lti-ada-6f1c", MAX_SCORE - 10) == 422


def test_two_posts_for_a_student_in_one_second_conflict_so_the_clock_waits(capsys, course, platform, tool_key):
    from grader.lms import lti

    config, key = files_for(course[0], platform, tool_key)
    post = lti.make_score_poster(lti.load_platform_config(config), lti.load_private_key(key), platform.line_item_url)
    stamp = datetime.now(timezone.utc).replace(microsecond=100_000)
    body = lti.score_body("lti-ada-6f1c", MAX_SCORE - 5, MAX_SCORE, "first")
    post({**body, "timestamp": stamp.isoformat(timespec="milliseconds")})
    later = (stamp + timedelta(milliseconds=1)).isoformat(timespec="milliseconds")  # the old clock's next stamp
    with pytest.raises(lti.PostError, match="HTTP 409"):  # Moodle: strtotime() of both is the same second
        post({**body, "scoreGiven": MAX_SCORE - 4, "timestamp": later})
    ledger = course[1] / ".lti-ledger.json"
    ledger.write_text(json.dumps({"version": 1, "line_items": {platform.line_item_url: {"lti-ada-6f1c": {
        "score_hash": "earlier", "timestamp": stamp.isoformat(timespec="milliseconds")}}}}))
    code, _, err = publish(capsys, course, platform, tool_key)
    assert code == 0, err  # the clock waited for the next second
    (sent,) = [a["body"]["timestamp"] for a in platform.score_attempts
               if a["body"]["userId"] == "lti-ada-6f1c" and a["body"]["comment"] != "first"][-1:]
    assert datetime.fromisoformat(sent).replace(microsecond=0) > stamp.replace(microsecond=0)


def test_a_409_is_reported_clearly_and_not_retried(capsys, course, platform, tool_key):
    platform.last_timestamp["lti-bob-77aa"] = datetime.now(timezone.utc) + timedelta(hours=1)  # posted elsewhere
    code, _, err = publish(capsys, course, platform, tool_key, "--retries", "3")
    assert code == 1
    assert "FAILED lti-bob-77aa (line 3 (Bob Stone; submission bob)): score post answered HTTP 409" in err
    assert "already holds a newer score for this student" in err and "not retried" in err
    assert len([a for a in platform.score_attempts if a["body"]["userId"] == "lti-bob-77aa"]) == 1
    assert sorted(platform.accepted()) == ["lti-ada-6f1c", "lti-chen-1b2c", "lti-dara-9e8d"]


def test_a_late_penalty_from_gradebook_is_said_before_posting(capsys, course, platform, tool_key):
    scores = course[1]
    hand_in(scores, "bob", (WRONG,), datetime.now(timezone.utc) - timedelta(hours=12),
            ("late", -9.0, "handed in 12 h late"))
    code, _, err = publish(capsys, course, platform, tool_key)
    assert code == 0
    warning = err.index("1 score file(s) already carry a late penalty from `grader gradebook` (e.g. bob: -9 "
                        "(handed in 12 h late)). This passback also tells the LMS when each student handed in")
    assert warning < err.index("posted ")  # before anything is posted
    assert platform.accepted()["lti-bob-77aa"][0]["scoreGiven"] == MAX_SCORE - 14  # the adjusted total
    assert f"late -9 (handed in 12 h late); total {MAX_SCORE - 14:g}/{MAX_SCORE:g}" in platform.accepted()["lti-bob-77aa"][0]["comment"]
    hand_in(scores, "bob", (WRONG,), datetime.now(timezone.utc) - timedelta(hours=12),
            ("late", -4.5, "handed in 12 h late, half"))
    platform.canvas.clear()
    code, _, err = publish(capsys, course, platform, tool_key, "--no-submitted-at")
    assert code == 0 and "1 posted" in err and "also tells the LMS" not in err and "late penalty" in err
    (body,) = [a["body"] for a in platform.score_attempts if a["body"]["userId"] == "lti-bob-77aa"][-1:]
    assert "submission" not in body and body["https://canvas.instructure.com/lti/submission"] == {
        "new_submission": False}
    assert platform.canvas["lti-bob-77aa"].attempts == []  # no attempt: Canvas's late policy never applies


def test_an_interrupted_passback_says_who_was_posted(capsys, course, platform, tool_key, monkeypatch):
    from grader.lms import lti

    real = lti.make_score_poster

    def interrupted_at_the_third(*args, **kwargs):
        post, calls = real(*args, **kwargs), []

        def wrapped(body):
            calls.append(body)
            if len(calls) == 3:
                raise KeyboardInterrupt
            post(body)
        return wrapped

    monkeypatch.setattr(lti, "make_score_poster", interrupted_at_the_third)
    report = course[0] / "report.json"
    code, _, err = publish(capsys, course, platform, tool_key, "--report", report)
    assert code == 130
    assert "stopped: interrupted (Ctrl-C); posted before stopping: lti-ada-6f1c, lti-bob-77aa; 2 score(s) not " \
           "attempted, posted by the next run: lti-chen-1b2c, lti-dara-9e8d" in err
    data = json.loads(report.read_text())
    assert [p["user_id"] for p in data["posted"]] == ["lti-ada-6f1c", "lti-bob-77aa"]
    monkeypatch.setattr(lti, "make_score_poster", real)
    code, _, err = publish(capsys, course, platform, tool_key)
    assert code == 0 and "2 posted, 2 unchanged" in err


def test_lone_surrogates_and_scores_above_maximum_do_not_stop_the_passback(capsys, course, platform, tool_key):
    scores = course[1]
    text = json.dumps(make_score("bob", [WRONG], submission_errors=[f"{MODULE[WRONG]}: SURROGATE C:\\data\\\""]))
    text = text.replace("SURROGATE", "\\ud800 and \\udfff")  # valid JSON, not valid Unicode
    (scores / "bob.json").write_text(text)
    over = make_score("chen")
    over["exercises"][0]["tests"][0]["score"] = 9.5
    over["exercises"][0]["score"] = 12.5
    over["score"] = MAX_SCORE + 7.5
    (scores / "chen.json").write_text(json.dumps(over))
    code, out, err = publish(capsys, course, platform, tool_key, "--dry-run")
    assert code == 0 and "\ufffd and \ufffd" in out
    code, _, err = publish(capsys, course, platform, tool_key)
    assert code == 0, err
    assert "\ufffd and \ufffd C:\\data\\\"" in platform.accepted()["lti-bob-77aa"][0]["comment"]
    assert platform.accepted()["lti-chen-1b2c"][0]["scoreGiven"] == MAX_SCORE  # clamped...
    assert f"chen.json: score above its maximum (test {FIRST}::test_public 9.5/2" in err  # ...and said


def test_hand_in_times_at_the_calendars_edge_are_listed_not_fatal(capsys, course, platform, tool_key):
    """0001-01-01T00:30+01:00 is in year 0 in UTC, 9999-12-31T23:30-01:00 in year 10000: no LMS
    timestamp can say them. The two files are listed and skipped; the others are posted."""
    _, scores, _ = course
    for name, moment in (("bob", "0001-01-01T00:30+01:00"), ("chen", "9999-12-31T23:30-01:00")):
        data = adjusted(make_score(name), submitted_at=moment)
        (scores / f"{name}.json").write_text(json.dumps(data), encoding="utf-8")
    for extra in (("--dry-run",), ()):
        code, _, err = publish(capsys, course, platform, tool_key, *extra)
        assert code == 1 and "Traceback" not in err and "NOT EXPORTED: bob.json" in err and "NOT EXPORTED: chen.json" in err
    assert sorted(platform.accepted()) == sorted([LTI_USERS["ada"], LTI_USERS["dara"]])
