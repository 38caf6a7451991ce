"""Which command answers which state in a lockstep loop whose commands carry no stamp.

A lockstep simulator publishes a state, waits for the controller's command (a
Float64MultiArray: no header, nothing names the state it answers) and steps on it; when none
comes within ``timeout`` of wall time it steps with the command it holds. The controller answers
every state it receives, in order, so after a timeout step the late answer to the older state is
still on its way: taking it as the answer to the newer state would apply every later command one
state late for the rest of the run. `CommandLedger` counts instead:

- every published state owes one command (``owed``);
- a command that arrives while more than one is owed answers an older, superseded state (a
  *stale* command): the simulator keeps it as the held command but does not step on it;
- the command that arrives when exactly one is owed answers the newest state: step on it;
- a command when nothing is owed (before the first state, after the last) is an *extra*: held,
  no step;
- a lost command cannot be told from a late one when the wait times out. The wait restarts on
  every command that arrives (the controller answers in order, so the next answer follows the
  stale one); when it times out although a stale command came in it, the answers counted as
  owed before that one were lost and the held command (the last to arrive) answers the newest
  state: the loop steps on it and is in step again. A lost command thus costs at most one extra
  ``timeout``.

Left alone: a second publisher on the command topic. Its commands are counted as answers
like the controller's and the loop runs one command ahead; nothing in the counts shows it (the
node can count the topic's publishers).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LockstepCounts:
    """A lockstep loop's accounting so far.

    Attributes:
        states: states published (each owes a command).
        answered: commands stepped on (each answered the newest state).
        timeout_steps: steps with the held command because none came within the timeout, once a
            command has been stepped on (those before wait for the controller to start).
        start_timeout_steps: timeout steps before the first command was stepped on.
        stale_commands: commands that answered a superseded state (held, not stepped on).
        lost_commands: states whose command never came (concluded at a timeout; not counted for the
            states published before the first command was stepped on, which the controller may not
            have heard).
        extra_commands: commands that came when no state was owed (held, not stepped on).
        owed: states published whose command has not arrived yet.
        last_wait: wall time the last timeout step waited since its state was published [s]
            (0 before any).
    """

    states: int
    answered: int
    timeout_steps: int
    start_timeout_steps: int
    stale_commands: int
    lost_commands: int
    extra_commands: int
    owed: int
    last_wait: float

    def sentence(self) -> str:
        """One line for a log: states, commands stepped on, timeout steps and what the ledger held."""
        return (
            f"{self.states} states published, {self.answered} stepped on their command, "
            f"{self.timeout_steps} timeout steps (last waited {self.last_wait:.3f} s), "
            f"{self.stale_commands} stale commands held, {self.lost_commands} lost, {self.extra_commands} extra, "
            f"{self.start_timeout_steps} timeout steps while the controller started"
        )


class CommandLedger:
    """Counts the commands a lockstep simulator is owed and says when to step (ROS-free).

    The simulator calls `published` after each state it publishes, `command` for each valid
    command it receives (after holding it) and `due` from a timer; it steps when either returns
    True. Times are wall-clock seconds from any monotonic clock.
    """

    def __init__(self, timeout: float) -> None:
        """``timeout``: wall time to wait for a command before stepping with the held one [s], > 0."""
        if not timeout > 0.0:
            raise ValueError(f"lockstep timeout = {timeout!r}: expected > 0 s")
        self.timeout = timeout
        self.owed = 0
        self.received = 0  # valid commands so far
        self._states = 0
        self._answered = 0
        self._timeout_steps = 0
        self._start_timeout_steps = 0
        self._stale = 0
        self._lost = 0
        self._extra = 0
        self._published_at = 0.0
        self._waiting_since = 0.0  # the last state published or the last command that arrived, later of the two
        self._stale_in_wait = False  # a stale command arrived since the last state was published
        self._last_wait = 0.0

    def published(self, now: float) -> None:
        """A state went out at wall time ``now`` [s]: its command is owed."""
        self.owed += 1
        self._states += 1
        self._published_at = self._waiting_since = now
        self._stale_in_wait = False

    def command(self, now: float) -> bool:
        """A valid command arrived at ``now`` [s] (the caller holds it). True: it answers the newest
        state, step on it; False: it answers a superseded state, or none is owed."""
        self.received += 1
        if self.owed == 0:
            self._extra += 1
            return False
        if self.owed > 1:
            self.owed -= 1
            self._stale += 1
            self._waiting_since = now
            self._stale_in_wait = True
            return False
        self.owed = 0
        self._answered += 1
        return True

    def due(self, now: float) -> bool:
        """True when the wait for the newest state's command timed out at ``now`` [s]: step with the
        held command (then call `published` for the new state)."""
        if self.owed == 0 or now - self._waiting_since < self.timeout:
            return False
        self._last_wait = now - self._published_at
        starting = self._answered == 0  # the first states go out before the controller listens
        if starting:
            self._start_timeout_steps += 1
        else:
            self._timeout_steps += 1
        if self._stale_in_wait:
            # the controller answered, then fell silent: the last command answers the newest state, so
            # the states counted before it were never answered (unheard, while starting)
            self._stale -= 1
            self._lost += 0 if starting else self.owed
            self._answered += 1
            self.owed = 0
        return True

    def counts(self) -> LockstepCounts:
        """The accounting so far."""
        return LockstepCounts(
            states=self._states,
            answered=self._answered,
            timeout_steps=self._timeout_steps,
            start_timeout_steps=self._start_timeout_steps,
            stale_commands=self._stale,
            lost_commands=self._lost,
            extra_commands=self._extra,
            owed=self.owed,
            last_wait=self._last_wait,
        )
