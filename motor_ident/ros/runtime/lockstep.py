"""A lockstep simulator node's side of `motor_ident.sim.lockstep.CommandLedger`.

`LockstepWait` feeds the ledger the wall clock and turns its counts into the node's
/diagnostics status and stop log line, so ``sim_robot`` and ``elastic_sim`` only say when they
publish, when a command arrives and when their timer fires.
"""

from __future__ import annotations

import time
from dataclasses import asdict, fields
from typing import Any

from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy

from motor_ident.ros.wire.conversions import OK, WARN, publisher_warning
from motor_ident.sim.lockstep import CommandLedger, LockstepCounts

PREFIX = "lockstep_"  # of the ledger's counts among a simulator's /diagnostics values

# A lockstep simulator's command subscription: RELIABLE (as COMMAND_QOS) with a queue deep enough
# that a late command and the next one, arriving together, are both counted (a queue of one keeps
# only the newer, and the ledger then takes it for the late one).
LOCKSTEP_COMMAND_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)


class LockstepWait:
    """Wall-clock lockstep accounting for a simulator node whose commands arrive on ``command_topic``."""

    def __init__(self, node: Node, timeout: float, command_topic: str) -> None:
        """``timeout``: ``lockstep_timeout`` [s]; ``command_topic``: the resolved command topic."""
        self.node = node
        self.ledger = CommandLedger(timeout)
        self.command_topic = command_topic
        self._reported_timeouts = 0

    def published(self) -> None:
        """A state went out."""
        self.ledger.published(time.monotonic())

    def command(self) -> bool:
        """A valid command arrived (held by the node); True: step on it."""
        return self.ledger.command(time.monotonic())

    def due(self) -> bool:
        """True when the wait for a command timed out: step with the held command."""
        return self.ledger.due(time.monotonic())

    def counts(self) -> LockstepCounts:
        """The ledger's counts."""
        return self.ledger.counts()

    def merge_status(self, level: bytes, message: str, values: dict[str, object]) -> tuple[bytes, str]:
        """The node's /diagnostics level and message with the lockstep's merged in (its values added
        to ``values``): the lockstep's WARN, or its OK message when the node has nothing to say."""
        lockstep_level, lockstep_message = self._status(values)
        if lockstep_level == WARN or level == OK:
            return lockstep_level, lockstep_message
        return level, message

    def _status(self, values: dict[str, object]) -> tuple[bytes, str]:
        """Level and message, values added to ``values``: WARN when timeout steps happened since the
        last status (a slow or lost command), or when the command topic has more than one publisher."""
        counts = self.ledger.counts()
        values.update({f"{PREFIX}{k}": v for k, v in asdict(counts).items()})
        values["command_publishers"], crowded = publisher_warning(self.node, self.command_topic)
        new = counts.timeout_steps - self._reported_timeouts
        self._reported_timeouts = counts.timeout_steps
        if new > 0:
            message = (
                f"lockstep: {new} timeout steps since the last report (last waited {counts.last_wait:.3f} s, "
                f"lockstep_timeout {self.ledger.timeout:g} s); {counts.stale_commands} stale commands held so far"
            )
            return WARN, message
        if crowded:
            return WARN, f"lockstep counts answers, so the loop runs out of step: {crowded}"
        return OK, "lockstep: in step"

    def stop_line(self) -> str:
        """The node's stop log line."""
        return f"lockstep: {self.ledger.counts().sentence()}"


def node_counts(node: Node) -> dict[str, Any] | None:
    """A simulator node's lockstep counts (`LockstepCounts` as a dict; None when not in lockstep)."""
    wait = getattr(node, "wait", None)
    return asdict(wait.counts()) if isinstance(wait, LockstepWait) else None


def status_counts(values: dict[str, str]) -> dict[str, Any] | None:
    """The lockstep counts in a simulator's /diagnostics values (as `node_counts`; None without them)."""
    if f"{PREFIX}states" not in values:
        return None
    return {
        f.name: float(values[PREFIX + f.name]) if f.type in (float, "float") else int(values[PREFIX + f.name])
        for f in fields(LockstepCounts)
    }
