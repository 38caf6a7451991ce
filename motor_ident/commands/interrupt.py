"""How every ``motor-ident`` command stops on Ctrl-C (SIGINT) and SIGTERM: one line, exit 130 / 143.

`stoppable` wraps a command (``cli.main`` runs every subcommand inside it, from before the
subcommands are imported): SIGTERM (systemd, a container stop, ``kill``) is raised as `Terminated`
like Ctrl-C raises `KeyboardInterrupt`, so both unwind through the ``finally`` blocks and
`motor_ident.io.data.atomic_write`'s clean-up (a temporary file removed, the old output kept), and
the command prints one line instead of a traceback. Exit status 130 (128 + SIGINT) or 143
(128 + SIGTERM), as a shell reports a process the signal ended.

Rejected: letting Python die by the signal (exit -2 / -15 seen by the caller, a traceback for
SIGINT, temporary files left by SIGTERM), and a handler per command (one forgotten command is one
traceback).
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

EXIT_INTERRUPTED = 130
"""128 + SIGINT: the command was stopped by Ctrl-C."""
EXIT_TERMINATED = 143
"""128 + SIGTERM: the command was stopped by SIGTERM."""


class Terminated(BaseException):  # noqa: N818 - named like KeyboardInterrupt, which it mirrors
    """SIGTERM arrived: raised in the main thread like `KeyboardInterrupt` is for SIGINT."""


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated


@contextmanager
def interrupts_held_from_children() -> Iterator[None]:
    """Start processes and threads that never see SIGINT (a Dask cluster's workers and its event loop).

    A terminal's Ctrl-C reaches every process of its foreground group: each worker would print a
    KeyboardInterrupt traceback of its own while this process stops the run. SIGINT is blocked in
    this thread meanwhile: the threads and processes started inherit the mask (SIGTERM, with which
    a cluster stops its workers, is left alone); a Ctrl-C in the meantime arrives when it ends.
    """
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def stoppable(name: str, run: Callable[[], int], *, exits: bool = False) -> int:
    """Run ``run()`` with SIGTERM raised as `Terminated`; Ctrl-C / SIGTERM print one line and give 130 / 143.

    ``name`` heads the line (``motor-ident identify: interrupted``). A signal that arrives while
    the line is printed is ignored: the command is already stopping. ``exits``: the process exits
    when this returns, so SIGINT and SIGTERM stay ignored from the command's end on (a signal in
    Python's own shutdown would only turn a finished command's status into -2 / -15); else the
    previous SIGTERM handler is put back.
    """
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        return run()
    except KeyboardInterrupt:
        return _stopped(name, "interrupted", EXIT_INTERRUPTED)
    except Terminated:
        return _stopped(name, "terminated", EXIT_TERMINATED)
    finally:
        if exits:  # held back while the handlers change: a signal now is dropped, not raised here
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
        else:
            signal.signal(signal.SIGTERM, previous)


def _clear_unhandled_interrupt_flag() -> None:
    """Undo CPython's note that Ctrl-C went unhandled, which a handled one can leave behind.

    A KeyboardInterrupt raised while CPython runs source text (a dataclass's methods or a
    namedtuple being made as a module imports) sets that note, and ``python -m motor_ident.cli``
    would then end by SIGINT (status -2) in place of ours. Running any text to its end clears it:
    here the constant ``pass``, through the C API.
    """
    import ctypes

    ctypes.pythonapi.PyRun_SimpleString(b"pass")


def _stopped(name: str, what: str, code: int) -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _clear_unhandled_interrupt_flag()
    try:
        print(f"{name}: {what}", file=sys.stderr, flush=True)
    except OSError:  # stderr closed with the terminal
        pass
    return code
