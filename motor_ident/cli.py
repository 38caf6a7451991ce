"""The ``motor-ident`` command: thin over core, sim and io.

Each subcommand lives in its own module under `motor_ident.commands` and registers itself with
``register(subparsers)``. Every subcommand with ``--json FILE`` writes the keys listed in the
project's design brief, so scripts can rely on them. Errors of motor_ident print one line saying
what to fix and exit with status 2, as do bad options (`motor_ident.commands.arguments`) and files
that cannot be read or written. Ctrl-C and SIGTERM end every command with one line and exit
status 130 / 143 (`motor_ident.commands.interrupt`), also while the subcommands are imported.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from motor_ident.commands.interrupt import stoppable
from motor_ident.commands.parser import build_parser as build_parser
from motor_ident.commands.parser import run


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``motor-ident``."""
    given = sys.argv[1:] if argv is None else list(argv)
    name = " ".join(["motor-ident", *given[:1]]) if given and not given[0].startswith("-") else "motor-ident"
    return stoppable(name, lambda: run(argv), exits=argv is None)  # argv None: the process's own command line


if __name__ == "__main__":
    sys.exit(main())
