"""CommandLedger: which command a lockstep simulator steps on. All tests are ROS-free.

A small loop stands in for the simulator: ``steps`` records, per step, the index of the state
whose answer was held when stepping (None: no command held yet), so a test can assert that every
step applied the answer to the state it stepped from.
"""

from __future__ import annotations

import pytest

from motor_ident.sim.lockstep import CommandLedger

TIMEOUT = 0.25  # s; times in these tests are exact binary fractions


class Loop:
    """A lockstep simulator around a ledger: state k is answered by command k (the controller's)."""

    def __init__(self) -> None:
        self.ledger = CommandLedger(TIMEOUT)
        self.now = 0.0
        self.state = 0  # index of the newest published state
        self.held: int | None = None
        self.steps: list[tuple[int, int | None]] = []  # (state stepped from, command applied)
        self.ledger.published(self.now)

    def _step(self) -> None:
        self.steps.append((self.state, self.held))
        self.state += 1
        self.ledger.published(self.now)

    def answer(self, k: int, after: float = 1.0 / 64) -> None:
        """Command k arrives ``after`` seconds from now."""
        self.now += after
        self.held = k
        if self.ledger.command(self.now):
            self._step()

    def wait(self, seconds: float) -> bool:
        """Let ``seconds`` of wall time pass (the timer checks at the end); True if it stepped."""
        self.now += seconds
        if self.ledger.due(self.now):
            self._step()
            return True
        return False


def test_answers_in_time_step_once_each() -> None:
    """Each command answers the newest state and steps on arrival; no timeout, nothing stale."""
    loop = Loop()
    for k in range(5):
        loop.answer(k)
    assert loop.steps == [(k, k) for k in range(5)]
    counts = loop.ledger.counts()
    assert (counts.states, counts.answered, counts.timeout_steps, counts.stale_commands) == (6, 5, 0, 0)
    assert counts.owed == 1


def test_late_command_is_held_not_stepped_and_the_loop_stays_in_step() -> None:
    """After a timeout step the late answer to the older state is stale; the next answer steps on time."""
    loop = Loop()
    loop.answer(0)
    assert not loop.wait(0.5 * TIMEOUT)
    assert loop.wait(0.75 * TIMEOUT)  # state 1 timed out: step with command 0 held
    loop.answer(1)  # the late answer to state 1: stale
    assert loop.state == 2 and loop.held == 1
    for k in (2, 3, 4):
        loop.answer(k)
    assert loop.steps == [(0, 0), (1, 0), (2, 2), (3, 3), (4, 4)]  # never a command one state late
    counts = loop.ledger.counts()
    assert (counts.timeout_steps, counts.stale_commands, counts.lost_commands) == (1, 1, 0)
    assert counts.last_wait == 1.25 * TIMEOUT


def test_lost_command_costs_one_extra_timeout_then_the_loop_is_in_step() -> None:
    """A command that never comes: the next one looks stale; one timeout later the loop steps on it."""
    loop = Loop()
    loop.answer(0)
    assert loop.wait(TIMEOUT)  # command 1 is lost: step from state 1 with command 0
    loop.answer(2)  # answers state 2, counted as the late one for state 1
    assert loop.state == 2
    assert not loop.wait(0.75 * TIMEOUT)
    assert loop.wait(0.25 * TIMEOUT)  # one more timeout: command 2 answers state 2
    for k in (3, 4):
        loop.answer(k)
    assert loop.steps == [(0, 0), (1, 0), (2, 2), (3, 3), (4, 4)]
    counts = loop.ledger.counts()
    assert (counts.timeout_steps, counts.stale_commands, counts.lost_commands, counts.answered) == (2, 0, 1, 4)


def test_the_wait_restarts_on_a_stale_command() -> None:
    """A stale command shows the controller is answering: the timeout counts from its arrival."""
    loop = Loop()
    loop.answer(0)
    assert loop.wait(TIMEOUT)
    loop.answer(1, after=0.75 * TIMEOUT)  # late answer to state 1 arrives near the end of the next wait
    assert not loop.wait(0.5 * TIMEOUT)  # 1.25 timeouts since state 2 went out, 0.5 since command 1
    loop.answer(2)
    assert loop.steps == [(0, 0), (1, 0), (2, 2)]


def test_burst_after_several_timeouts_steps_only_on_the_newest_answer() -> None:
    """Three timeout steps, then the four owed answers arrive together: three stale, the last steps."""
    loop = Loop()
    loop.answer(0)
    for _ in range(3):
        assert loop.wait(TIMEOUT)
    assert loop.ledger.owed == 4
    for k in (1, 2, 3, 4):
        loop.answer(k, after=0.0)
    assert loop.steps == [(0, 0), (1, 0), (2, 0), (3, 0), (4, 4)]
    counts = loop.ledger.counts()
    assert (counts.timeout_steps, counts.stale_commands, counts.owed) == (3, 3, 1)


def test_controller_silent_for_a_while_then_back_costs_one_timeout() -> None:
    """Answers lost for several states: once the controller answers the newest state, one timeout later
    the loop steps on that answer and is in step again."""
    loop = Loop()
    loop.answer(0)
    for _ in range(4):
        assert loop.wait(TIMEOUT)
    loop.answer(5)  # commands 1-4 lost
    assert loop.wait(TIMEOUT)
    loop.answer(6)
    assert loop.steps[-2:] == [(5, 5), (6, 6)]
    counts = loop.ledger.counts()
    assert (counts.lost_commands, counts.stale_commands, counts.owed) == (4, 0, 1)


def test_extra_command_when_none_is_owed_is_held_without_a_step() -> None:
    """A second publisher's command when the loop owes nothing (the run ended) is held and counted, not stepped on."""
    ledger = CommandLedger(TIMEOUT)
    ledger.published(0.0)
    assert ledger.command(1.0 / 64)  # the final answer: the simulator is finished and publishes no more
    assert not ledger.command(1.0 / 32)
    assert not ledger.due(10.0)
    counts = ledger.counts()
    assert (counts.answered, counts.extra_commands, counts.owed) == (1, 1, 0)


def test_duplicate_answer_during_a_late_wait_is_stale() -> None:
    """Two copies of the late answer (a second publisher repeating it) while two are owed: the
    first settles the older state, the copy is taken as the newest's answer and steps."""
    loop = Loop()
    loop.answer(0)
    assert loop.wait(TIMEOUT)
    loop.answer(1)
    loop.answer(1)  # copy: indistinguishable from the answer to state 2 (no stamp)
    counts = loop.ledger.counts()
    assert (counts.stale_commands, counts.answered) == (1, 2)
    assert loop.steps[-1] == (2, 1)  # what a second publisher costs: documented, not hidden


def test_timeouts_before_the_first_command_count_as_start() -> None:
    """Timeout steps while the controller has not answered yet (discovery) are start-up, not lockstep trouble."""
    loop = Loop()
    assert loop.wait(TIMEOUT)
    loop.answer(1)  # the first state went unheard: the answer to state 1 looks stale
    assert loop.wait(TIMEOUT)
    loop.answer(2)
    assert loop.steps == [(0, None), (1, 1), (2, 2)]
    counts = loop.ledger.counts()
    assert (counts.start_timeout_steps, counts.timeout_steps, counts.lost_commands) == (2, 0, 0)


def test_timeout_must_be_positive() -> None:
    """A zero timeout is refused with its value."""
    with pytest.raises(ValueError, match="timeout = 0.0"):
        CommandLedger(0.0)
