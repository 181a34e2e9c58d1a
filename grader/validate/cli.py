"""`grader validate [--mistakes DIR] [--course PATH] [--exercise NAME]`: the command line of the course audit."""

from __future__ import annotations

import os
from pathlib import Path

from grader import catalog
from grader.errors import UsageError


def register(commands, exports) -> None:
    p = commands.add_parser("validate", help="audit the course: reference, stubs, learner mistakes, lazy answers, "
                                             "docstring examples, the student bundle (instructors)")
    p.add_argument("--mistakes", type=Path, metavar="DIR",
                   help="the folder of learner mistakes, one file each (default: the course file's "
                        "`learner_mistakes`, tests/submissions/wrong/ for this course)")
    p.add_argument("--course", metavar="PATH", default=None,
                   help="the course file (or its folder) to audit instead of the package's own course")
    p.add_argument("--seeds", type=int, nargs="+", default=None, metavar="S",
                   help="the seeds the reference is graded at (default: 0 1 2)")
    p.add_argument("--jobs", "--workers", dest="jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                   help="grading processes run in parallel (default: CPU count; --workers is the old spelling)")
    p.add_argument("--scores", type=Path, metavar="DIR",
                   help="keep the score files graded at the first seed in DIR (reference.json, stubs.json, "
                        "mistake-<name>.json, lazy-<mode>.json)")
    p.add_argument("--exercise", metavar="NAME", default=None,
                   help="audit one exercise only: its tests, its learner mistakes, its lazy answers (the quick "
                        "check while writing it; the full audit before a release)")
    p.set_defaults(func=cmd_validate)


def cmd_validate(args) -> int:
    from grader.validate import audit

    course = catalog.use(args.course)
    folder = args.mistakes or course.place("learner_mistakes")
    if folder is None or not Path(folder).is_dir():
        raise UsageError(f"no folder of learner mistakes: {folder} (give one with --mistakes DIR)")
    result = audit.run(course, Path(folder), seeds=tuple(args.seeds or audit.DEFAULT_SEEDS), workers=args.jobs,
                       scores_dir=args.scores, only=args.exercise)
    print(audit.table(result))
    print()
    print(audit.summary(result))
    return 0 if result.ok else 1
