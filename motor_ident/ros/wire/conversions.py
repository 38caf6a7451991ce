"""Messages <-> arrays, by joint name, with validation. The nodes' only message handling code.

Every conversion that reads a message returns None or [] with a `Reason` instead of raising, so
a bad message is dropped, counted per kind of reason (`DropCounter`) and reported in
/diagnostics rather than crashing a node. What every node that reads ``joint_states`` or
``motor_states`` does with a message, in this order:

1. `joint_state_arrays`: the fields it needs, in its joint order, matched by name. Extra names
   (other joints, other robots on the same topic) are harmless and ignored; a missing joint, one
   of ours named twice, an empty or mismatched field or a non-finite value drops the message.
2. `StampOrder.accept` (each node has its own, `stamp_order`): stamps must increase.
   A stamp that goes back (a second publisher stamping 0, a replayed or delayed message) or jumps
   far ahead is dropped, unless such stamps persist as a timeline of their own (a bag loop, a
   simulator reset): then the clock has restarted.
3. `DropCounter.add` for every drop: counts per kind, one throttled log line, /diagnostics values.
4. `publisher_warning` in the diagnostics timer: two publishers on ``joint_states`` interleave
   two robots' (or a robot's and a tool's) states; /diagnostics says so and names them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from builtin_interfaces.msg import Duration, Time
from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from numpy.typing import NDArray
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension
from trajectory_msgs.msg import JointTrajectory

from motor_ident.io.joint_order import JointIndex, Reason
from motor_ident.scenario.nodes import StampSettings

if TYPE_CHECKING:
    from rclpy.impl.rcutils_logger import RcutilsLogger
    from rclpy.node import Node

FloatArray = NDArray[np.float64]

OK = DiagnosticStatus.OK
WARN = DiagnosticStatus.WARN
ERROR = DiagnosticStatus.ERROR

# Kinds of reason a message is dropped for: the keys messages are counted by (with
# joint_order's MISSING_JOINTS and DUPLICATE_NAMES).
EMPTY_FIELD = "empty field"
WRONG_LENGTH = "wrong field length"
NON_FINITE = "non-finite value"
WRONG_SIZE = "wrong size"
STAMP_ZERO = "stamp 0"
STAMP_BACKWARDS = "stamp went backwards"
STAMP_REPEATED = "stamp repeated"
STAMP_AHEAD = "stamp jumped ahead"


def stamp_to_seconds(stamp: Time) -> float:
    """A builtin_interfaces/Time as seconds."""
    return float(stamp.sec) + 1e-9 * float(stamp.nanosec)


def stamp_to_nanoseconds(stamp: Time | Duration) -> int:
    """A builtin_interfaces/Time or Duration as integer nanoseconds (exact)."""
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def trajectory_times(msg: JointTrajectory) -> FloatArray:
    """Absolute time [s] of each point of a JointTrajectory (K,): header stamp + time_from_start.

    Summed in integer nanoseconds before the one conversion to seconds, so a point written by two
    messages with different stamps (the excitation's overlapping chunks) has the same time to the
    bit, and a reference interpolated between the same two points does not depend on which message
    arrived last.
    """
    start = stamp_to_nanoseconds(msg.header.stamp)
    return np.array([(start + stamp_to_nanoseconds(p.time_from_start)) * 1e-9 for p in msg.points])


def seconds_to_stamp(t: float) -> Time:
    """Seconds as a builtin_interfaces/Time (non-negative)."""
    t = max(float(t), 0.0)
    sec = int(t)
    return Time(sec=sec, nanosec=min(int(round((t - sec) * 1e9)), 999_999_999))


def joint_state_arrays(
    msg: JointState, index: JointIndex, fields: Sequence[str] = ("position", "velocity", "effort")
) -> tuple[list[FloatArray], str]:
    """Arrays of the requested JointState fields in our joint order, (n,) each.

    Names that are not ours are ignored (their values may be anything). Only the requested fields
    are checked: a node that needs no effort takes messages without one.

    Returns:
        (arrays, "") on success, or ([], reason) when the message is unusable, ``reason`` a
        `Reason` whose ``kind`` is one of: a joint missing (`MISSING_JOINTS`), one of ours named
        twice (`DUPLICATE_NAMES`), a requested field empty (`EMPTY_FIELD`) or of another length
        than the name list (`WRONG_LENGTH`), a non-finite value of ours (`NON_FINITE`).
    """
    order = index.lookup(msg.name)
    if isinstance(order, Reason):
        return [], order
    out = []
    for field_name in fields:
        values = getattr(msg, field_name)
        if len(values) != len(msg.name):
            if len(values) == 0:
                return [], Reason(f"{field_name} is empty", EMPTY_FIELD)
            return [], Reason(f"{field_name} has {len(values)} values for {len(msg.name)} names", WRONG_LENGTH)
        arr = np.asarray(values, dtype=float)[order]
        if not np.all(np.isfinite(arr)):
            return [], Reason(f"non-finite {field_name}", NON_FINITE)
        out.append(arr)
    return out, ""


class StampOrder:
    """Accepts a topic's time stamps in increasing order; a jump is believed once it persists.

    A stamp is accepted when it is later than the last accepted one and at most ``max_jump``
    ahead of it. Any other stamp is dropped with a `Reason` (a second publisher stamping 0 or its
    own clock, a replayed or delayed message, a duplicate), unless ``confirm`` stamps in a row,
    with none accepted in between, form a timeline of their own: each later than the one before
    and at most ``max_jump`` after it. Then the clock has restarted (a bag loop, a simulator
    reset, a robot whose clock was set): that stamp is accepted and ``restarted`` is True. A
    publisher that repeats one stamp, or whose messages interleave with the robot's, never gets
    there. The price: after a real restart the first ``confirm - 1`` states are dropped.

    Rejected alternative: restarting on any stamp far enough back (the former rule). One stray
    message stamped 0 then emptied the identifier's buffer and restarted the feedforward's rate
    limiter, for every such message.
    """

    def __init__(self, *, confirm: int = 10, max_jump: float = 1.0) -> None:
        """Args: ``confirm`` stamps in a row make a new timeline (>= 1); ``max_jump`` [s] > 0.

        Raises:
            ValueError: naming the bad argument.
        """
        if int(confirm) < 1:
            raise ValueError(f"confirm = {confirm!r}: expected at least 1 stamp")
        if not max_jump > 0.0:
            raise ValueError(f"max_jump = {max_jump!r}: expected > 0 s")
        self.confirm = int(confirm)
        self.max_jump = float(max_jump)
        self.last: float | None = None
        self.restarted = False
        self.restarts = 0
        self._candidate: float | None = None
        self._candidate_count = 0

    def accept(self, t: float) -> str:
        """``""`` when the stamp ``t`` [s] is taken (``restarted`` says whether it starts a new
        timeline), else the `Reason` it is dropped."""
        self.restarted = False
        if not math.isfinite(t):
            return Reason(f"non-finite stamp {t}", NON_FINITE)
        last = self.last
        if last is None or last < t <= last + self.max_jump:
            self.last, self._candidate, self._candidate_count = t, None, 0
            return ""
        candidate = self._candidate
        if candidate is not None and candidate < t <= candidate + self.max_jump:
            self._candidate_count += 1
        else:
            self._candidate_count = 1
        self._candidate = t
        if self._candidate_count >= self.confirm:
            self.last, self._candidate, self._candidate_count = t, None, 0
            self.restarted = True
            self.restarts += 1
            return ""
        if t == last:
            return Reason(f"stamp {t:.6f} s repeated", STAMP_REPEATED)
        if t > last:
            return Reason(f"stamp jumped ahead from {last:.3f} to {t:.3f} s", STAMP_AHEAD)
        if t == 0.0:
            return Reason(f"stamp 0 after {last:.3f} s (publisher does not stamp its messages?)", STAMP_ZERO)
        return Reason(f"stamp went backwards from {last:.3f} to {t:.3f} s", STAMP_BACKWARDS)


def stamp_order(settings: StampSettings) -> StampOrder:
    """A node's `StampOrder` from its ``clock_restart_samples`` and ``max_stamp_jump`` settings."""
    return StampOrder(confirm=settings.clock_restart_samples, max_jump=settings.max_stamp_jump)


class DropCounter:
    """Messages dropped from one input, counted per kind of reason, with one throttled log line.

    ``counts`` maps a `Reason`'s ``kind`` (a plain string counts as its own kind) to how many
    messages were dropped for it; pass a dict to fill one kept elsewhere.

    The throttle is checked here, before the logger is called: rclpy's own
    ``throttle_duration_sec`` inspects the caller's stack frame on every call, logged or not
    (0.9-4.7 ms per call measured on 2 loaded cores), which at a hostile publisher's 150 Hz
    stalled a whole single-process scenario.
    """

    def __init__(
        self,
        what: str = "joint_states sample",
        logger: RcutilsLogger | None = None,
        *,
        counts: dict[str, int] | None = None,
        throttle_sec: float = 2.0,
    ) -> None:
        """Args: ``what`` names the input in logs; ``logger`` of the node (None: no logging)."""
        self.what = what
        self.logger = logger
        self.counts = counts if counts is not None else {}
        self.throttle_sec = throttle_sec
        self.last = ""
        self._next_log = -math.inf

    @property
    def total(self) -> int:
        """Messages dropped so far."""
        return sum(self.counts.values())

    def add(self, reason: str) -> None:
        """Count one dropped message; log at most once per ``throttle_sec`` [s] of wall time."""
        kind = reason.kind if isinstance(reason, Reason) else str(reason)
        self.counts[kind] = self.counts.get(kind, 0) + 1
        self.last = str(reason)
        if self.logger is not None:
            now = time.monotonic()
            if now >= self._next_log:
                self._next_log = now + self.throttle_sec
                self.logger.warning(f"{self.what} dropped: {reason} ({self.total} so far, by reason {self.counts})")

    def diagnostic_values(self, prefix: str = "") -> dict[str, object]:
        """``dropped_samples``, ``last_drop_reason`` and ``dropped: <kind>`` per kind, each key
        after ``prefix`` (e.g. ``"motor_states "`` for a node's second input)."""
        values: dict[str, object] = {
            f"{prefix}dropped_samples": self.total,
            f"{prefix}last_drop_reason": self.last or "-",
        }
        values.update({f"{prefix}dropped: {kind}": count for kind, count in sorted(self.counts.items())})
        return values


class InputDrops:
    """A node's dropped messages, one `DropCounter` per input (topic), for nodes with several.

    ``total`` counts every input; ``last`` says what was dropped last and why;
    `diagnostic_values` gives each input's counts per kind, prefixed by the input's name.
    """

    def __init__(self, inputs: Sequence[str], logger: RcutilsLogger | None = None) -> None:
        self.counters = {what: DropCounter(what, logger) for what in inputs}
        self.last = ""

    @property
    def total(self) -> int:
        """Messages dropped so far, every input."""
        return sum(counter.total for counter in self.counters.values())

    def add(self, what: str, reason: str) -> None:
        """Count one message of input ``what`` dropped for ``reason`` (throttled log)."""
        self.counters[what].add(reason)
        self.last = f"{what} dropped: {reason}"

    def diagnostic_values(self) -> dict[str, object]:
        """``dropped`` (all inputs), then ``<input> dropped: <kind>`` per input and kind."""
        values: dict[str, object] = {"dropped": self.total}
        for what, counter in self.counters.items():
            values.update({f"{what} dropped: {kind}": count for kind, count in sorted(counter.counts.items())})
        return values


def publisher_warning(node: Node, topic: str) -> tuple[int, str]:
    """Publishers on ``topic`` (a resolved name, e.g. a subscription's ``topic_name``).

    Returns:
        (count, warning): ``warning`` is "" for at most one publisher, else a sentence naming the
        count and the publishing nodes, for a WARN in /diagnostics.
    """
    count = node.count_publishers(topic)
    if count <= 1:
        return count, ""
    names = sorted(
        f"{info.node_namespace.rstrip('/')}/{info.node_name}" for info in node.get_publishers_info_by_topic(topic)
    )
    return count, f"{count} publishers on {topic} ({', '.join(names)}): their messages interleave"


def make_joint_state(
    names: Sequence[str],
    t: float,
    position: FloatArray | None = None,
    velocity: FloatArray | None = None,
    effort: FloatArray | None = None,
) -> JointState:
    """A JointState stamped ``t`` [s] with the given arrays (empty where None)."""
    msg = JointState()
    msg.header.stamp = seconds_to_stamp(t)
    msg.name = list(names)
    if position is not None:
        msg.position = np.asarray(position, dtype=float).tolist()
    if velocity is not None:
        msg.velocity = np.asarray(velocity, dtype=float).tolist()
    if effort is not None:
        msg.effort = np.asarray(effort, dtype=float).tolist()
    return msg


def make_array(values: FloatArray, label: str = "") -> Float64MultiArray:
    """A 1-D Float64MultiArray (the ros2_controllers forward command format)."""
    msg = Float64MultiArray()
    values = np.asarray(values, dtype=float).ravel()
    if label:
        msg.layout.dim = [MultiArrayDimension(label=label, size=values.size, stride=values.size)]
    msg.data = values.tolist()
    return msg


def array_values(msg: Float64MultiArray, size: int) -> tuple[FloatArray | None, str]:
    """The data of a command array if it has ``size`` finite values, else (None, `Reason`) of
    kind `WRONG_SIZE` or `NON_FINITE`."""
    if len(msg.data) != size:
        return None, Reason(f"{len(msg.data)} values, expected {size}", WRONG_SIZE)
    values = np.asarray(msg.data, dtype=float)
    if not np.all(np.isfinite(values)):
        return None, Reason("non-finite value", NON_FINITE)
    return values, ""


def make_status(name: str, hardware_id: str, level: bytes, message: str, values: dict[str, object]) -> DiagnosticStatus:
    """A DiagnosticStatus (level `OK`, `WARN` or `ERROR`) with compactly formatted key/values."""
    status = DiagnosticStatus()
    status.level = level
    status.name = name
    status.hardware_id = hardware_id
    status.message = message
    status.values = [KeyValue(key=k, value=_fmt(v)) for k, v in values.items()]
    return status


def _fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (list, tuple, np.ndarray)):
        return "[" + ", ".join(_fmt(float(v)) if isinstance(v, (float, np.floating)) else str(v) for v in value) + "]"
    return str(value)
