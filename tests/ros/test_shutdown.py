"""ProcessStop's signal rules, in this process: a repeated SIGTERM abandons the teardown step that
blocks, never the teardown code between steps; a repeated SIGINT never raises; once teardown is
over SIGINT and SIGHUP are ignored; a node whose supervisor has ended stops at once."""

from __future__ import annotations

import io
import os
import signal

import pytest

from motor_ident.ros.runtime.shutdown import PARENT_ENV, ProcessStop, StopRequested, set_parent_death_signal


@pytest.fixture
def stop():
    """A ProcessStop installed for the test (the watchdog's delays out of reach), handlers, wakeup
    fd and parent-death signal (none) restored after."""
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    wakeup_fd = signal.set_wakeup_fd(-1)
    handler = ProcessStop(dump_after=1e6, exit_after=1e6, stream=io.StringIO()).install()
    yield handler
    for sig, old in previous.items():
        signal.signal(sig, old)
    signal.set_wakeup_fd(wakeup_fd)
    set_parent_death_signal(0)  # pytest itself must not die with its parent


def test_repeated_sigterm_abandons_the_step_not_the_teardown(stop: ProcessStop) -> None:
    stop.running()
    os.kill(os.getpid(), signal.SIGINT)  # the first request is recorded
    stop.stopping()

    def blocked() -> None:
        os.kill(os.getpid(), signal.SIGTERM)  # raises here: the step is abandoned

    stop.step("destroy_node", blocked)
    os.kill(os.getpid(), signal.SIGTERM)  # between steps: recorded, nothing raised
    stop.step("rclpy shutdown", lambda: None)
    assert stop.interrupted == ["destroy_node (SIGTERM)"]
    assert stop.requests == [signal.SIGINT, signal.SIGTERM, signal.SIGTERM]


def test_signal_while_starting_raises_anywhere(stop: ProcessStop) -> None:
    with pytest.raises(StopRequested, match="SIGTERM"):
        os.kill(os.getpid(), signal.SIGTERM)


def test_repeated_sigint_while_starting_is_only_recorded(stop: ProcessStop) -> None:
    """The terminal's Ctrl-C abandons start-up; launch's SIGINT a moment later must not raise
    inside the code that handles the first."""
    with pytest.raises(StopRequested, match="SIGINT"):
        os.kill(os.getpid(), signal.SIGINT)
    os.kill(os.getpid(), signal.SIGINT)
    os.kill(os.getpid(), signal.SIGHUP)
    assert stop.requests == [signal.SIGINT, signal.SIGINT, signal.SIGHUP]


def test_sighup_stops_and_sigint_sighup_are_ignored_once_teardown_is_over(stop: ProcessStop) -> None:
    """A closed terminal's SIGHUP is a stop request; after `finished` SIGINT and SIGHUP are ignored
    at the C level (Python's exit gives default handlers back only to the signals it handles)."""
    stop.running()
    os.kill(os.getpid(), signal.SIGHUP)
    assert stop.requests == [signal.SIGHUP]
    stop.stopping()
    stop.finished()
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    os.kill(os.getpid(), signal.SIGINT)  # the process lives on: ignored
    assert signal.getsignal(signal.SIGTERM) == stop._on_signal  # launch's escalation still reaches it


def test_a_node_whose_parent_has_ended_stops_while_starting(stop: ProcessStop) -> None:
    """`PARENT_ENV` naming a process that is not this one's parent (it ended, and this process was
    handed on): the parent-death signal would never come, so the node stops at once; the variable
    is not passed on to what the node starts."""
    environ = {PARENT_ENV: str(os.getppid() + 1)}
    with pytest.raises(StopRequested, match="SIGTERM"):
        stop.follow_parent(environ)
    assert PARENT_ENV not in environ
    assert stop.requests == [signal.SIGTERM]


def test_a_node_follows_its_living_parent(stop: ProcessStop) -> None:
    """Its parent alive: the request is made (Linux) and start-up goes on."""
    import sys

    environ = {PARENT_ENV: str(os.getppid())}
    stop.follow_parent(environ)
    assert PARENT_ENV not in environ and not stop.requests
    if sys.platform.startswith("linux"):
        import ctypes

        got = ctypes.c_int()
        ctypes.CDLL(None).prctl(2, ctypes.byref(got), 0, 0, 0)  # PR_GET_PDEATHSIG
        assert got.value == signal.SIGTERM
