"""The ``motor-ident`` command: thin over core, sim and io.

Each subcommand lives in its own module under `motor_ident.commands` and registers itself with
``register(subparsers)``. Every subcommand with ``--json FILE`` writes the keys listed in the
project's design brief, so scripts can rely on them. Errors of motor_ident print one line saying
what to fix and exit with status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from motor_ident.errors import MotorIdentError

COMMAND_MODULES = (
    "motor_ident.commands.identify",
    "motor_ident.commands.base_params",
    "motor_ident.commands.synth",
    "motor_ident.commands.demo",
    "motor_ident.commands.bench",
    "motor_ident.commands.soak",
    "motor_ident.commands.excite",
    "motor_ident.commands.reproduce",
    "motor_ident.commands.experiment",
    "motor_ident.commands.record",
    "motor_ident.commands.play",
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``motor-ident``."""
    parser = argparse.ArgumentParser(prog="motor-ident", description="Identify joint and actuator dynamics.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``motor-ident``."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except MotorIdentError as exc:
        print(f"motor-ident {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
