"""How a node process stops: always, within a bound, and saying what blocked it.

``ros2 launch`` stops a node with SIGINT, then SIGTERM 5 s later, then SIGKILL 10 s after that;
``motor-ident run --processes`` with SIGINT, SIGTERM and SIGKILL 5 s apart. A SIGKILLed Fast DDS
participant leaves its shared-memory files in /dev/shm. `ProcessStop` makes every stop end the
process before either escalates:

- while the process starts (imports, robot model, the node's constructor) the first SIGINT,
  SIGTERM or SIGHUP raises `StopRequested` in the main thread: start-up is abandoned, what exists
  is torn down and the process exits 0 (no KeyboardInterrupt traceback);
- while it runs, the first SIGINT, SIGTERM or SIGHUP (a closed terminal) is recorded: the spin
  loop sees it and tears down in order. A repeated SIGINT or SIGHUP changes nothing: Ctrl-C in a
  terminal running ``ros2 launch`` reaches every process of the foreground group, so each node
  gets the terminal's SIGINT and then launch's, 0-300 ms apart (``motor-ident run --processes``
  forwards its own too). A SIGTERM after the first request raises `StopRequested`, which abandons
  the step that blocks (a callback, ``destroy_node``) and teardown goes on with the next; between
  teardown steps a signal is only recorded (it would otherwise end the teardown code itself);
- once teardown is over (`ProcessStop.finished`) SIGINT and SIGHUP are ignored: the interpreter's
  exit still takes a few hundred milliseconds, and Python gives the default handlers back while
  it exits, so a repeated Ctrl-C then killed a node that had stopped cleanly (exit status -2,
  "process has died" in launch's output, 130 in a shell). SIGTERM keeps its handler, then its
  default: launch's escalation still ends an exit that hangs;
- a watchdog thread starts with the first request: after `DUMP_AFTER_S` it writes the stack of
  every thread to stderr (`faulthandler`) and sends the main thread SIGTERM itself (as launch
  would at 5 s), again every `NUDGE_EVERY_S` while teardown goes on; after `EXIT_AFTER_S` a
  process still alive (blocked in C code that signals cannot interrupt) exits at once with
  `EXIT_BLOCKED`.

Python runs a signal handler only when the main thread is back in the interpreter: a main thread
held in C code (a callback blocked in the middle layer, a library call that never returns) would
never see the request. So the request does not depend on the handler: the signal itself wakes a
listener thread (`signal.set_wakeup_fd`), which starts the watchdog at once. The watchdog is a
Python thread too, and a main thread held in C *with the interpreter lock* stops every Python
thread: the first request therefore also arms `faulthandler`'s C timer, which needs no lock and
writes every thread's stack and exits the process (code 1) `BACKSTOP_AFTER_S` after the request
(or a second after ``exit_after``, when that is later).
A main thread that holds the lock from before the signal arrives stops the listener as well; only
launch's SIGKILL ends it (what remains: a deadlock inside a library while the node runs).

A node started by a supervisor that must not outlive it (``motor-ident run --processes``,
`motor_ident.ros.runtime.processes.NodeProcess`) finds the supervisor's process id in `PARENT_ENV`: at
installation it asks the kernel for SIGTERM when that process ends (Linux ``prctl(PR_SET_PDEATHSIG)``,
so even a SIGKILLed supervisor stops its nodes, each with its safe output), then checks that the
supervisor is still its parent: one that died before the request would send no signal, and the
node stops at once instead. ``ros2 launch`` sets nothing: launch's nodes keep its behaviour.

Only the standard library is imported here: the entry points (`motor_ident.ros.runtime.entry_points`)
install it before the node's heavy imports.
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import itertools
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, MutableMapping
from typing import Literal, TextIO

DUMP_AFTER_S = 3.0
"""[s] after the first stop request: stack dump and SIGTERM to the main thread (launch sends its own at 5 s)."""
EXIT_AFTER_S = 6.0
"""[s] after the first stop request: immediate exit (launch's SIGKILL comes at 15 s, the runner's at 10 s)."""
NUDGE_EVERY_S = 0.5
"""[s] between the watchdog's SIGTERMs to the main thread (each abandons one blocked step)."""
BACKSTOP_AFTER_S = 7.5
"""[s] after the first stop request: `faulthandler`'s C timer writes the stacks and exits (code 1)
when not even the watchdog thread could run (the runner's SIGKILL comes at 10 s)."""
EXIT_BLOCKED = 124
"""Exit code of a process the watchdog ended (as timeout(1) reports a command it stopped)."""
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""The signals that ask a node to stop (SIGHUP: its terminal closed)."""
PARENT_ENV = "MOTOR_IDENT_PARENT_PID"
"""Environment variable naming the process id of the supervisor a node must not outlive."""
PR_SET_PDEATHSIG = 1  # linux/prctl.h
LISTENER_NAME = "motor_ident stop listener"

Phase = Literal["starting", "running", "stopping", "exiting"]


class StopRequested(BaseException):  # noqa: N818 -- not an error: a request, like KeyboardInterrupt
    """SIGINT or SIGTERM ended start-up or interrupted a blocked step (a BaseException, as
    KeyboardInterrupt is: ``except Exception`` in library code does not swallow it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class ProcessStop:
    """The stop requests of one node process and the watchdog that bounds its teardown.

    Args:
        dump_after: [s] from the first request to the stack dump and the SIGTERM to the main thread.
        exit_after: [s] from the first request to the immediate exit.
        stream: where the watchdog writes (stderr: the node's log under launch and the runner).
    """

    def __init__(
        self, dump_after: float = DUMP_AFTER_S, exit_after: float = EXIT_AFTER_S, stream: TextIO | None = None
    ) -> None:
        self.requests: list[int] = []
        self.phase: Phase = "starting"
        self.dump_after, self.exit_after = dump_after, exit_after
        self.stream = stream if stream is not None else sys.stderr
        self.interrupted: list[str] = []  # teardown steps a signal abandoned
        self._first: float | None = None
        self._claims = itertools.count()  # the first caller of _start_watchdog starts it (thread-safe)
        self._main = threading.main_thread().ident
        self._step: str | None = None  # the teardown step running, if any
        self.watchdog_priority = 0
        """> 0: SCHED_FIFO priority of the watchdog and its C timer, above a real-time loop's
        (`motor_ident.ros.runtime.realtime`): a thread of the loop's own priority never runs while it spins."""

    def install(self) -> ProcessStop:
        """Handle `STOP_SIGNALS` with this object (main thread only); a SIGHUP ignored from the
        start (``nohup``) stays ignored."""
        for signum in STOP_SIGNALS:
            if signum != signal.SIGHUP or signal.getsignal(signum) != signal.SIG_IGN:
                signal.signal(signum, self._on_signal)
        read, write = os.pipe()
        os.set_blocking(write, False)  # the C handler must never block on it
        signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        threading.Thread(target=self._listen, args=(read,), name=LISTENER_NAME, daemon=True).start()
        return self

    def running(self) -> None:
        """Start-up is over: from now on a first signal is only recorded."""
        self.phase = "running"

    def stopping(self) -> None:
        """Teardown begins: the watchdog runs from now (if no signal started it already)."""
        self.phase = "stopping"
        self._start_watchdog()

    def finished(self) -> None:
        """Teardown is over: signals change nothing more (SIGINT and SIGHUP ignored from now, also
        while the interpreter exits); the watchdog still bounds the interpreter's exit."""
        self.phase = "exiting"
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGHUP):
                signal.signal(signum, signal.SIG_IGN)

    def step(self, name: str, action: Callable[[], object]) -> None:
        """Run one teardown step; a `StopRequested` abandons it (recorded) and teardown goes on."""
        try:
            self._step = name
            action()
            self._step = None
        except StopRequested as stop:
            self._step = None
            self.interrupted.append(f"{name} ({stop})")

    def _may_interrupt(self) -> bool:
        """Whether a repeated SIGTERM may raise now: while running, or inside a teardown step."""
        return self.phase == "running" or (self.phase == "stopping" and self._step is not None)

    def _on_signal(self, signum: int, _frame: object) -> None:
        again = bool(self.requests)
        self.requests.append(signum)
        self._start_watchdog()
        if self.phase == "starting" and not again:
            raise StopRequested(signum)
        if again and signum == signal.SIGTERM and (self.phase == "starting" or self._may_interrupt()):
            raise StopRequested(signum)

    def follow_parent(self, environ: MutableMapping[str, str] | None = None) -> None:
        """SIGTERM from the kernel when the process `PARENT_ENV` names ends (removed from the
        environment, so nothing this process starts inherits it); does nothing without it.

        Raises:
            StopRequested: that process ended already (no signal would come).
        """
        value = (os.environ if environ is None else environ).pop(PARENT_ENV, None)
        if value is None:
            return
        if not value.isdigit():
            self._write(f"{PARENT_ENV}={value!r} is not a process id: this node does not stop with its parent")
            return
        if not set_parent_death_signal(signal.SIGTERM):
            self._write("no parent-death signal on this system: this node does not stop with its parent")
            return
        if os.getppid() != int(value):  # the parent ended before the request: no signal will come
            self._write(f"parent process {value} ended before this node started: stopping")
            self._on_signal(signal.SIGTERM, None)

    def _listen(self, fd: int) -> None:
        """Daemon thread: starts the watchdog when a stop signal arrives, whatever the main thread does."""
        while True:
            try:
                received = os.read(fd, 64)
            except InterruptedError:
                continue
            except OSError:
                return
            if not received:
                return
            if any(signum in received for signum in STOP_SIGNALS):
                self._start_watchdog()

    def _start_watchdog(self) -> None:
        if next(self._claims):
            return
        self._first = time.monotonic()
        fileno = _fileno(self.stream)
        with _scheduled_at(self.watchdog_priority):  # a new thread has its starter's scheduling
            if fileno is not None:  # C timer: runs even while the main thread holds the interpreter lock
                faulthandler.dump_traceback_later(max(BACKSTOP_AFTER_S, self.exit_after + 1.0), exit=True, file=fileno)
            threading.Thread(target=self._watch, name="motor_ident stop watchdog", daemon=True).start()

    def _watch(self) -> None:
        """Daemon thread: stack dump, SIGTERMs to the main thread, immediate exit (if the process lives on)."""
        assert self._first is not None
        time.sleep(self.dump_after)
        self._write(f"still running {self.dump_after:g} s after the stop request (phase: {self.phase}); stacks:")
        faulthandler.dump_traceback(file=self.stream, all_threads=True)
        deadline = self._first + self.exit_after
        while time.monotonic() < deadline:
            if self._main is not None and (
                self.phase == "starting" or self._may_interrupt()
            ):  # abandons a blocked step
                signal.pthread_kill(self._main, signal.SIGTERM)
            time.sleep(min(NUDGE_EVERY_S, max(deadline - time.monotonic(), 0.0)))
        self._write(f"still running {self.exit_after:g} s after the stop request: exiting now ({EXIT_BLOCKED})")
        os._exit(EXIT_BLOCKED)

    def _write(self, text: str) -> None:
        try:
            self.stream.write(f"[motor_ident stop watchdog] {text}\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass


@contextlib.contextmanager
def _scheduled_at(priority: int) -> Iterator[None]:
    """The calling thread at SCHED_FIFO ``priority`` for the block (0, or not permitted: as it is),
    so that the threads it starts there inherit it; its own scheduling back afterwards."""
    if priority <= 0 or not hasattr(os, "sched_setscheduler"):
        yield
        return
    try:
        policy, param = os.sched_getscheduler(0), os.sched_getparam(0)
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
    except OSError:
        yield
        return
    try:
        yield
    finally:
        try:
            os.sched_setscheduler(0, policy, param)
        except OSError:
            pass


def _fileno(stream: TextIO) -> int | None:
    """The file descriptor behind ``stream`` (None for an in-memory stream)."""
    try:
        return stream.fileno()
    except (OSError, ValueError, AttributeError):
        return None


def set_parent_death_signal(signum: int) -> bool:
    """Ask the kernel to send ``signum`` to this process when its parent ends (Linux
    ``prctl(PR_SET_PDEATHSIG)``, through ctypes); whether it took.

    The kernel sends it when the parent's *thread* that started this process ends: a supervisor
    starts its nodes from its main thread."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


_installed: list[ProcessStop] = []


def installed() -> ProcessStop | None:
    """This process's `ProcessStop` if `install` made one (a node process), else None."""
    return _installed[0] if _installed else None


def install() -> ProcessStop:
    """This process's `ProcessStop`, installed on first use (the entry point's, when it made one),
    following the parent `PARENT_ENV` names.

    Raises:
        StopRequested: that parent ended already.
    """
    if not _installed:
        _installed.append(ProcessStop().install())
        _installed[0].follow_parent()
    return _installed[0]
