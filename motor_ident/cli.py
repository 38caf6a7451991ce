"""The ``motor-ident`` command: thin over core, sim and io.

Each subcommand lives in its own module under `motor_ident.commands` and registers itself with
``register(subparsers)``. Every subcommand with ``--json FILE`` writes the keys listed in the
project's design brief, so scripts can rely on them. Errors of motor_ident print one line saying
what to fix and exit with status 2, as do bad options (`motor_ident.commands.arguments`) and files
that cannot be read or written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from motor_ident.commands import (
    base_params,
    bench,
    demo,
    excite,
    experiment,
    fleet,
    identify,
    monitor,
    play,
    record,
    reproduce,
    soak,
    synth,
    to_bag,
    validate,
)
from motor_ident.commands.arguments import CommandParser
from motor_ident.commands.common import limit_blas_threads
from motor_ident.commands.option_checks import refuse_idle_options
from motor_ident.errors import MotorIdentError

# the subcommands, in the order ``motor-ident --help`` lists them
COMMANDS = (
    identify,
    validate,
    base_params,
    synth,
    demo,
    bench,
    soak,
    excite,
    reproduce,
    experiment,
    record,
    to_bag,
    play,
    monitor,
    fleet,
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``motor-ident``."""
    parser = CommandParser(prog="motor-ident", description="Identify joint and actuator dynamics.")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``motor-ident``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    refuse_idle_options(parser, args)  # contradicting options, or one the others leave without effect: exit 2
    limit_blas_threads()  # one BLAS thread: small factorizations, cores shared with nodes (commands.common)
    try:
        return int(args.func(args))
    except (MotorIdentError, OSError) as exc:  # OSError: a file that cannot be read or written, a full disk
        print(f"motor-ident {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
