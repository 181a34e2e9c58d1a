"""`grader export canvas|moodle|prairielearn|github-classroom`, `grader publish lti|lti-line-items|lti-jwks`.

Argument parsing and messages only; the work is done by the other modules of grader.lms.

Exit status of every command:
  0  everything was exported / posted;
  1  the output was written (or the posting ran) but something was left out: a score file that is
     invalid or has no roster row, or a score the LMS did not accept; all are listed on stderr
     and in --report;
  2  bad input (missing file, bad roster or config, ...): nothing was written or posted.
Roster students without a submission are listed but do not change the exit status.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

from grader.errors import usage_errors
from grader.lms import LmsError
from grader.safetext import replace_lone_surrogates

EXIT_OK, EXIT_INCOMPLETE, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


def ascii_number(text: str) -> float:
    """A number on the command line, in ASCII digits (Python's float() also reads '１０')."""
    if not re.fullmatch(r"[0-9]+(\.[0-9]+)?|\.[0-9]+", text.strip()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number written with the ASCII digits 0-9 and '.'")
    return float(text)


def ascii_count(text: str) -> int:
    if not re.fullmatch(r"[0-9]+", text.strip()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number written with the ASCII digits 0-9")
    return int(text)


def register(commands, exports) -> None:
    _add_canvas(exports)
    _add_moodle(exports)
    _add_prairielearn(exports)
    _add_github_classroom(exports)
    publish = commands.add_parser("publish", help="send scores to an LMS over the network (LTI 1.3)")
    targets = publish.add_subparsers(dest="publish_kind", required=True)
    _add_lti(targets)
    _add_lti_line_items(targets)
    _add_lti_jwks(targets)


def _guarded(command):
    """The commands' one wrapper (`grader.errors.usage_errors`): an LmsError is bad input already; an
    output file that cannot be written, a full disk, joins it. `grader.cli.main` prints it and exits 2
    (EXIT_BAD_INPUT)."""
    return usage_errors(command)


def _scores_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scores", metavar="SCORES_DIR", type=Path,
                        help="the --out directory of `grader grade` (one <submission>.json per submission)")


def _roster_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--roster", required=True, type=Path, metavar="CSV",
                        help="CSV mapping submissions to students (see docs/lms.md for the columns)")
    parser.add_argument("--missing-as-zero", action="store_true",
                        help="give 0 to roster students without a submission (default: no grade)")
    parser.add_argument("--report", type=Path, metavar="JSON",
                        help="also write what was exported and what was not, as JSON")


def _load_roster_and_scores(args):
    from grader.lms.matching import Report, reconcile
    from grader.lms.roster import read_roster
    from grader.lms.scores import load_score_dir

    roster = read_roster(args.roster)
    scores = load_score_dir(args.scores)
    rec = reconcile(roster, scores)
    if not rec.matched:
        # An empty export would only blank the gradebook (and a Canvas 'Points Possible' of 0 would
        # change the assignment): say why there is nothing to export instead.
        Report("").print_summary(rec)
        raise LmsError(f"none of the {len(scores.scores) + len(scores.problems)} score file(s) is both valid "
                       f"and in the roster ({len(roster.rows)} rows): nothing to export")
    return roster, rec


def _finish(report, rec, args, summary: str) -> int:
    report.print_summary(rec)
    report.write(getattr(args, "report", None))
    print(summary, file=sys.stderr)
    incomplete = bool(report.data.get("invalid_score_files")) or bool(
        report.data.get("submissions_without_roster_row"))
    return EXIT_INCOMPLETE if incomplete else EXIT_OK


def _student_counts(rec, missing_as_zero: bool, no_grade: str = "no grade") -> str:
    given = "0" if missing_as_zero else no_grade
    return (f"{len(rec.matched)} student(s) with a score, {len(rec.without_submission)} without a submission "
            f"({given}), {len(rec.unmatched_submissions) + len(rec.invalid)} score file(s) not exported")


# ----------------------------------------------------------------------------- Canvas


def _add_canvas(exports) -> None:
    p = exports.add_parser("canvas", help="Canvas gradebook CSV (Grades > Import)",
                           description="Write a CSV for Canvas's gradebook import: Student, ID, SIS User ID, "
                                       "SIS Login ID, Section, then '<Title> (<assignment id>)'.")
    _scores_argument(p)
    _roster_arguments(p)
    p.add_argument("--out", required=True, type=Path, metavar="CSV", help="the file to write")
    p.add_argument("--title", required=True, help="the assignment's title in Canvas, e.g. 'Autograd HW1'")
    p.add_argument("--assignment-id", metavar="ID",
                   help="Canvas's assignment id (the number in its URL); without it Canvas matches the exact "
                        "title, or creates a new assignment")
    p.add_argument("--per-exercise", action="store_true",
                   help="add one column per exercise, '<Title>: <exercise>' (Canvas creates these assignments "
                        "on the first import)")
    p.add_argument("--points-possible", type=ascii_number, metavar="POINTS",
                   help="the Canvas assignment's points: scores are rescaled to it (default: the score files' "
                        "max_score). Canvas's Points Possible row does not change an existing assignment's points")
    p.add_argument("--no-points-possible", action="store_true", help="leave out the 'Points Possible' row")
    p.set_defaults(func=_guarded(run_canvas))


def run_canvas(args) -> int:
    """Canvas gradebook CSV."""
    from grader.lms import canvas
    from grader.lms.matching import Report

    roster, rec = _load_roster_and_scores(args)
    table = canvas.build_rows(roster, rec, args.title, args.assignment_id, per_exercise=args.per_exercise,
                              points_possible_row=not args.no_points_possible, missing_as_zero=args.missing_as_zero,
                              points_possible=args.points_possible)
    canvas.write_gradebook(args.out, table)
    report = Report("export canvas")
    left_out = "left out of the file: Canvas keeps the grade it has"
    report.add_reconciliation(rec, args.missing_as_zero, no_grade=left_out)
    report.data["output"] = str(args.out)
    return _finish(report, rec, args, f"canvas: wrote {args.out}: "
                                      f"{_student_counts(rec, args.missing_as_zero, no_grade=left_out)}")


# ----------------------------------------------------------------------------- Moodle


def _add_moodle(exports) -> None:
    p = exports.add_parser("moodle", help="Moodle grade import CSV (Grades > Import > CSV file)",
                           description="Write '<user field>,<item>,<item> feedback' for Moodle's CSV grade import.")
    _scores_argument(p)
    _roster_arguments(p)
    p.add_argument("--out", required=True, type=Path, metavar="CSV", help="the file to write")
    p.add_argument("--item", required=True, help="the grade item's name, e.g. 'Autograd HW1'")
    p.add_argument("--user-field", choices=["email", "idnumber", "userid", "username"], default="email",
                   help="how Moodle finds the student: email (roster column email, the default), username "
                        "(login), idnumber (sis_user_id) or userid (lms_user_id)")
    p.add_argument("--grade-max", type=ascii_number, metavar="POINTS",
                   help="rescale scores to this maximum (the grade item's maximum grade in Moodle)")
    p.add_argument("--unlimited-grades", action="store_true",
                   help="allow grades above 100 (only if the site enables 'Unlimited grades')")
    p.set_defaults(func=_guarded(run_moodle))


def run_moodle(args) -> int:
    """Moodle grade import CSV."""
    from grader.lms import moodle
    from grader.lms.matching import Report

    roster, rec = _load_roster_and_scores(args)
    table = moodle.build_rows(roster, rec, args.item, args.user_field, grade_max=args.grade_max,
                              unlimited_grades=args.unlimited_grades, missing_as_zero=args.missing_as_zero)
    moodle.write_import_file(args.out, table, unlimited_grades=args.unlimited_grades)
    report = Report("export moodle")
    report.add_reconciliation(rec, args.missing_as_zero)
    report.data["output"] = str(args.out)
    field = moodle.USER_FIELDS[args.user_field]
    print(f"In Moodle, map '{field.header}' to '{field.moodle_choice}', '{table[0][1]}' to the grade item and "
          f"'{table[0][2]}' to its feedback.", file=sys.stderr)
    return _finish(report, rec, args, f"moodle: wrote {args.out}: {_student_counts(rec, args.missing_as_zero)}")


# ----------------------------------------------------------------------------- PrairieLearn


def _add_prairielearn(exports) -> None:
    p = exports.add_parser("prairielearn", help="PrairieLearn external-grader results.json per submission")
    p.add_argument("scores", metavar="SCORES", type=Path, help="a score file, or a directory of them")
    p.add_argument("--out", required=True, type=Path, metavar="DIR|FILE.json",
                   help="DIR/<submission>/results.json for each; or one FILE.json (e.g. "
                        "/grade/results/results.json) when there is one score file")
    p.add_argument("--show-hidden-messages", action="store_true",
                   help="include hidden tests' messages (students see this page; default: status only)")
    p.add_argument("--report", type=Path, metavar="JSON", help="also write what was exported, as JSON")
    p.set_defaults(func=_guarded(run_prairielearn))


def run_prairielearn(args) -> int:
    """PrairieLearn results.json."""
    from grader.lms import prairielearn
    from grader.lms.matching import Report
    from grader.lms.scores import load_score_path

    scores = load_score_path(args.scores)
    written = scores.scores + scores.ungradable  # an ungradable file becomes `gradable: false` (no attempt used)
    paths = prairielearn.output_paths(written, args.out) if written else {}
    for score in written:
        prairielearn.write_results(score, paths[score.submission], args.show_hidden_messages)
    report = Report("export prairielearn")
    report.add_invalid_files(scores.problems, scores.scores)
    report.data["written"] = {name: str(path) for name, path in paths.items()}
    return _finish(report, None, args, f"prairielearn: wrote {len(paths)} results.json, "
                                       f"{len(scores.problems)} score file(s) not exported")


# ----------------------------------------------------------------------------- GitHub Classroom


def _add_github_classroom(exports) -> None:
    p = exports.add_parser("github-classroom", help="GitHub Classroom reporter outputs (one runner per exercise)")
    p.add_argument("scores", metavar="SCORES", type=Path,
                   help="the score file of this repository's submission, or a directory holding only it")
    p.add_argument("--github-output", type=Path, metavar="FILE",
                   help="append '<runner>=<base64>' lines here (default: $GITHUB_OUTPUT, else print them)")
    p.add_argument("--print-workflow", action="store_true",
                   help="print the workflow steps (grading + reporter) for these exercises and exit")
    p.add_argument("--show-hidden-messages", action="store_true",
                   help="include hidden tests' messages (default: status only)")
    p.set_defaults(func=_guarded(run_github_classroom))


def run_github_classroom(args) -> int:
    """GitHub Classroom runner results."""
    from grader.lms import github_classroom as ghc
    from grader.lms.scores import load_score_path

    scores = load_score_path(args.scores)
    for problem in scores.problems:
        print(replace_lone_surrogates(f"NOT EXPORTED: {problem.path.name}: {problem.reason}"), file=sys.stderr)
    if len(scores.scores) != 1:
        raise LmsError(f"{args.scores}: expected exactly one valid score file (this repository's submission), "
                       f"found {len(scores.scores)}")
    score = scores.scores[0]
    runners = ghc.build_runners(score, args.show_hidden_messages)
    if args.print_workflow:
        print(ghc.workflow_steps_yaml(list(runners)), end="")
        return EXIT_OK
    lines = ghc.output_lines(runners)
    problems = ghc.validate_output_lines(lines)
    if problems:
        raise LmsError("the runner results would be invalid: " + "; ".join(problems))
    target = args.github_output or (Path(os.environ["GITHUB_OUTPUT"]) if os.environ.get("GITHUB_OUTPUT") else None)
    if target is None:
        print("\n".join(lines))
    else:
        with open(target, "a", encoding="utf-8") as out:
            out.write("".join(line + "\n" for line in lines))
    for warning in score.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"github-classroom: {len(runners)} runners for {score.submission}: the reporter will record "
          f"{ghc.reporter_points(runners)}" + (f" -> {target}" if target else ""), file=sys.stderr)
    return EXIT_INCOMPLETE if scores.problems else EXIT_OK


# ----------------------------------------------------------------------------- LTI 1.3


def _add_lti(targets) -> None:
    p = targets.add_parser("lti", help="post scores to an LMS line item (LTI 1.3 Assignment and Grade Services)",
                           description="Post one score per student to the line item's /scores endpoint. Keys and "
                                       "platform settings are read from files, never from the command line.")
    _scores_argument(p)
    _roster_arguments(p)
    p.add_argument("--platform-config", required=True, type=Path, metavar="JSON",
                   help="issuer, client_id, token_url, deployment_id, line_item_url, key_id (docs/lms.md)")
    p.add_argument("--private-key", required=True, type=Path, metavar="PEM", help="the tool's RSA private key")
    p.add_argument("--line-item", metavar="URL", help="the line item URL (default: line_item_url of the config)")
    p.add_argument("--user-id-column", default="lti_user_id", choices=["lti_user_id", "lms_user_id"],
                   help="roster column holding the LTI userId (Canvas also accepts its user id)")
    p.add_argument("--ledger", type=Path, metavar="JSON",
                   help="record of accepted scores (default: SCORES_DIR/.lti-ledger.json)")
    p.add_argument("--no-submitted-at", action="store_true",
                   help="do not tell the LMS when students handed in (the score files' submitted_at): no submission "
                        "attempt is made, so an LMS late policy never applies; for files that already carry "
                        "`grader gradebook`'s late penalty")
    p.add_argument("--retries", type=ascii_count, default=3, help="retries after a 5xx/429/network error (default 3)")
    p.add_argument("--backoff", type=ascii_number, default=1.0, metavar="SECONDS",
                   help="first retry delay, doubled each time (default 1)")
    p.add_argument("--timeout", type=ascii_number, default=30.0, metavar="SECONDS",
                   help="per HTTP request (default 30)")
    p.add_argument("--dry-run", action="store_true", help="print the scores that would be posted; send nothing")
    p.set_defaults(func=_guarded(run_publish_lti))


def run_publish_lti(args) -> int:
    """LTI 1.3 AGS score passback."""
    from grader.lms import lti
    from grader.lms.ledger import LEDGER_NAME, Ledger
    from grader.lms.matching import Report

    lti.require_lms_extra()
    if args.timeout <= 0:
        raise LmsError("--timeout must be > 0")
    config = lti.load_platform_config(args.platform_config)
    private_key = lti.load_private_key(args.private_key)
    if not lti.key_is_private_to_owner(args.private_key):
        print(f"warning: {args.private_key} can be read by other users; chmod 600 it", file=sys.stderr)
    line_item = args.line_item or config.line_item_url
    if not line_item:
        raise LmsError("no line item: pass --line-item URL or set line_item_url in the platform config")
    lti.check_service_url(line_item, "--line-item")
    roster, rec = _load_roster_and_scores(args)
    planned = lti.plan_scores(roster, rec, args.user_id_column, args.missing_as_zero,
                              send_submitted_at=not args.no_submitted_at)
    ledger = Ledger.load(args.ledger or args.scores / LEDGER_NAME)
    report = Report("publish lti")
    report.add_reconciliation(rec, args.missing_as_zero)
    report.data["line_item"] = line_item
    late_warning = lti.late_penalty_warning(planned)
    if late_warning:  # docs/scoring.md, "Grades after scores": said before anything is posted
        print(f"warning: {late_warning}", file=sys.stderr)
        report.warn(late_warning)
    if args.dry_run:
        for item in planned:
            first = ledger.entry(line_item, item.user_id) is None
            state = "unchanged" if ledger.already_posted(line_item, item.user_id, item.digest) else "would post"
            body = lti.post_body(item, "(set when posted)", first)
            print(json.dumps({"state": state, **body}, ensure_ascii=False))
        report.data["dry_run"] = True
        return _finish(report, rec, args, f"lti (dry run): {len(planned)} score(s) planned, nothing sent")
    post = lti.make_score_poster(config, private_key, line_item, args.timeout)
    outcome = lti.publish(planned, line_item, ledger, post, retries=args.retries, backoff_s=args.backoff,
                          log=lambda message: print(message, file=sys.stderr))
    report.data.update(outcome.as_dict())
    if outcome.aborted:
        posted = ", ".join(p.user_id for p in outcome.posted) or "none"
        report.warn(f"stopped: {outcome.aborted}; posted before stopping: {posted}; "
                    f"{len(outcome.not_attempted)} score(s) not attempted, posted by the next run: "
                    + ", ".join(p.user_id for p in outcome.not_attempted))
    status = _finish(report, rec, args, f"lti: {len(outcome.posted)} posted, {len(outcome.unchanged)} unchanged "
                                        f"(already posted), {len(outcome.failed)} failed, "
                                        f"{len(outcome.not_attempted)} not attempted; ledger {ledger.path}")
    if outcome.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_INCOMPLETE if outcome.failed or outcome.not_attempted else status


def _add_lti_line_items(targets) -> None:
    p = targets.add_parser("lti-line-items", help="list the course's line items, to find the one to post to",
                           description="List the line items (gradebook columns) of the course that the tool may "
                                       "see (scope lineitem.readonly), with their URLs.")
    p.add_argument("--platform-config", required=True, type=Path, metavar="JSON")
    p.add_argument("--private-key", required=True, type=Path, metavar="PEM")
    p.add_argument("--line-items", metavar="URL", help="the line items URL (default: line_items_url of the config)")
    p.add_argument("--timeout", type=ascii_number, default=30.0, metavar="SECONDS")
    p.set_defaults(func=_guarded(run_lti_line_items))


def run_lti_line_items(args) -> int:
    """List line items."""
    from grader.lms import lti

    lti.require_lms_extra()
    config = lti.load_platform_config(args.platform_config)
    url = args.line_items or config.line_items_url
    if not url:
        raise LmsError("no line items URL: pass --line-items URL or set line_items_url in the platform config")
    lti.check_service_url(url, "--line-items")
    items = lti.list_line_items(config, lti.load_private_key(args.private_key), url, args.timeout)
    for item in items:
        print(json.dumps({k: item.get(k) for k in ("id", "label", "scoreMaximum", "resourceLinkId", "tag")
                          if item.get(k) is not None}, ensure_ascii=False))
    print(f"{len(items)} line item(s); pass the 'id' of the assignment's column as --line-item", file=sys.stderr)
    return EXIT_OK


def _add_lti_jwks(targets) -> None:
    p = targets.add_parser("lti-jwks", help="print the tool's public key set (JWKS) for the LMS admin",
                           description="Print the public half of the tool's key as a JWK Set, for the LMS "
                                       "admin who registers the tool.")
    p.add_argument("--private-key", required=True, type=Path, metavar="PEM", help="the tool's RSA private key")
    p.add_argument("--platform-config", type=Path, metavar="JSON", help="take key_id from this config")
    p.set_defaults(func=_guarded(run_lti_jwks))


def run_lti_jwks(args) -> int:
    """Print the tool's JWKS."""
    from grader.lms import lti

    lti.require_lms_extra()
    key_id = lti.load_platform_config(args.platform_config).key_id if args.platform_config else ""
    print(json.dumps({"keys": [lti.public_jwk(lti.load_private_key(args.private_key), key_id)]}, indent=2))
    return EXIT_OK
