"""Command line: `grader check`, `grader grade`, `grader export ...`, `grader publish ...`.

Only argument parsing and printing live here; the work is done by the modules it calls.
Commands contributed by other modules register through `register(commands, exports)`.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# Modules that add commands: each defines register(commands, exports), where `commands`
# is the top-level subparsers object and `exports` the subparsers of `grader export`.
EXTENSIONS: list[str] = ["grader.lms.cli"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="grader", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    export = commands.add_parser("export", help="write a bundle or a gradebook file")
    exports = export.add_subparsers(dest="export_kind", required=True)
    for name in EXTENSIONS:
        importlib.import_module(name).register(commands, exports)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
