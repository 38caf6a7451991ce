"""The ``motor-ident`` argument parser and the run of one command line, below `motor_ident.cli`.

The subcommands' modules are imported when the parser is built, not when this module is: the
console script installs its Ctrl-C handling first (`motor_ident.commands.interrupt`), so a Ctrl-C
while they import is answered like one during the work.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``motor-ident``: the subcommands in the order ``--help`` lists them."""
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

    commands = (identify, validate, base_params, synth, demo, bench, soak, excite, reproduce, experiment)
    parser = CommandParser(prog="motor-ident", description="Identify joint and actuator dynamics.")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in (*commands, record, to_bag, play, monitor, fleet):
        command.register(sub)
    return parser


def run(argv: Sequence[str] | None) -> int:
    """Parse ``argv`` (None: the process's) and run its subcommand; errors of motor_ident in one line, exit 2."""
    from motor_ident.commands.common import limit_blas_threads
    from motor_ident.commands.option_checks import refuse_idle_options
    from motor_ident.errors import MotorIdentError

    parser = build_parser()
    args = parser.parse_args(argv)
    refuse_idle_options(parser, args)  # contradicting options, or one the others leave without effect: exit 2
    limit_blas_threads()  # one BLAS thread: small factorizations, cores shared with nodes (commands.common)
    try:
        return int(args.func(args))
    except (MotorIdentError, OSError) as exc:  # OSError: a file that cannot be read or written, a full disk
        print(f"motor-ident {args.command}: error: {exc}", file=sys.stderr)
        return 2
