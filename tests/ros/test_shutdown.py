"""ProcessStop's signal rules, in this process: a repeated SIGTERM abandons the teardown step that
blocks, never the teardown code between steps."""

from __future__ import annotations

import io
import os
import signal

import pytest

from motor_ident.ros.shutdown import ProcessStop, StopRequested


@pytest.fixture
def stop():
    """A ProcessStop installed for the test (the watchdog's delays out of reach), handlers and
    wakeup fd restored after."""
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    wakeup_fd = signal.set_wakeup_fd(-1)
    handler = ProcessStop(dump_after=1e6, exit_after=1e6, stream=io.StringIO()).install()
    yield handler
    for sig, old in previous.items():
        signal.signal(sig, old)
    signal.set_wakeup_fd(wakeup_fd)


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
