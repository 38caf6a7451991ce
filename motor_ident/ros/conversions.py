"""Messages <-> arrays, by joint name, with validation. The nodes' only message handling code.

Every conversion that reads a message returns None (and says why) instead of raising, so a bad
message is counted and reported in /diagnostics rather than crashing a node.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from numpy.typing import NDArray
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

FloatArray = NDArray[np.float64]

OK = DiagnosticStatus.OK
WARN = DiagnosticStatus.WARN
ERROR = DiagnosticStatus.ERROR


def stamp_to_seconds(stamp: Time) -> float:
    """A builtin_interfaces/Time as seconds."""
    return float(stamp.sec) + 1e-9 * float(stamp.nanosec)


def seconds_to_stamp(t: float) -> Time:
    """Seconds as a builtin_interfaces/Time (non-negative)."""
    t = max(float(t), 0.0)
    sec = int(t)
    return Time(sec=sec, nanosec=min(int(round((t - sec) * 1e9)), 999_999_999))


class JointIndex:
    """Maps the joint order of incoming messages to ours; caches the map per name order."""

    def __init__(self, joint_names: Sequence[str]) -> None:
        self.joint_names = tuple(joint_names)
        self._cache: dict[tuple[str, ...], NDArray[np.int64] | None] = {}

    def order(self, names: Sequence[str]) -> NDArray[np.int64] | None:
        """Indices into a message's arrays giving our joint order, or None if a joint is missing."""
        key = tuple(names)
        if key not in self._cache:
            if len(self._cache) > 64:
                self._cache.clear()
            lookup = {name: i for i, name in enumerate(key)}
            if len(lookup) != len(key) or any(j not in lookup for j in self.joint_names):
                self._cache[key] = None
            else:
                self._cache[key] = np.array([lookup[j] for j in self.joint_names], dtype=np.int64)
        return self._cache[key]

    def missing(self, names: Sequence[str]) -> list[str]:
        """Our joints absent from ``names``."""
        present = set(names)
        return [j for j in self.joint_names if j not in present]


def joint_state_arrays(
    msg: JointState, index: JointIndex, fields: Sequence[str] = ("position", "velocity", "effort")
) -> tuple[list[FloatArray], str]:
    """Arrays of the requested JointState fields in our joint order.

    Returns:
        (arrays, "") on success, or ([], reason) when the message is unusable: a joint missing or
        duplicated, a field shorter than the name list, or a non-finite value.
    """
    order = index.order(msg.name)
    if order is None:
        missing = index.missing(msg.name)
        return [], f"joints {missing} missing" if missing else "duplicate joint names"
    out = []
    for field in fields:
        values = getattr(msg, field)
        if len(values) != len(msg.name):
            return [], f"{field} has {len(values)} values for {len(msg.name)} names"
        arr = np.asarray(values, dtype=float)[order]
        if not np.all(np.isfinite(arr)):
            return [], f"non-finite {field}"
        out.append(arr)
    return out, ""


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
    """The data of a command array if it has ``size`` finite values, else (None, reason)."""
    if len(msg.data) != size:
        return None, f"{len(msg.data)} values, expected {size}"
    values = np.asarray(msg.data, dtype=float)
    if not np.all(np.isfinite(values)):
        return None, "non-finite value"
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
