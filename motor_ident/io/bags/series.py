"""Time series read from a bag, their errors, and their alignment on joint_states stamps."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.errors import DataError
from motor_ident.io.data import JointRecord

FloatArray = NDArray[np.float64]


class BagError(DataError):
    """A bag cannot be read or written as asked; the message says what to fix."""


class MissingTopicError(BagError):
    """A topic the caller needs is not in the bag."""


class UnsupportedTypeError(BagError):
    """A topic has a message type motor_ident cannot use for it."""


class EmptyBagError(BagError):
    """The bag (or the topic needed) holds no usable message."""


class CorruptBagError(BagError):
    """The bag is damaged beyond recovery."""


@dataclass(frozen=True)
class BagTopics:
    """Topic names of a recording (leading slash optional; a unique ``.../<name>`` also matches).

    An empty name skips that topic (reading is faster when only the joint states are needed).
    ``gate`` and ``r2`` are the online identifier's outputs, for the report's gate timeline.
    """

    joint_states: str = "/joint_states"
    motor_states: str = "/motor_states"
    wrench: str = "/ft_sensor/wrench"
    commands: str = "/effort_controller/commands"
    gate: str = "/identifier/gate_open"
    r2: str = "/identifier/r2"


@dataclass(frozen=True, eq=False)
class JointStateSeries:
    """JointState messages as arrays, joints in the order ``names``.

    Attributes:
        t: header stamps, strictly increasing, shape (N,) [s].
        names: joint (or motor) names, length n.
        position, velocity, effort: shape (N, n) [rad, rad/s, N m], None when the recording
            leaves the field empty.
    """

    t: FloatArray
    names: tuple[str, ...]
    position: FloatArray | None
    velocity: FloatArray | None
    effort: FloatArray | None


@dataclass(frozen=True, eq=False)
class WrenchSeries:
    """WrenchStamped messages: stamps (N,) [s], force (N, 3) [N], torque (N, 3) [N m], frame."""

    t: FloatArray
    force: FloatArray
    torque: FloatArray
    frame_id: str


@dataclass(frozen=True, eq=False)
class ArraySeries:
    """Float64MultiArray messages: receive times (N,) [s] and values (N, m)."""

    t: FloatArray
    values: FloatArray


@dataclass(frozen=True, eq=False)
class BagData:
    """What `read_bag` found.

    Attributes:
        path: the bag read.
        storage: ``mcap`` or ``sqlite3``.
        topics: every topic in the bag and its message type.
        joint_states: the joint states (always present: `read_bag` raises otherwise).
        motor_states, wrench, commands: None when the topic is not in the bag.
        gate, r2: the online identifier's ``identifier/gate_open`` (values 0 / 1) and
            ``identifier/r2`` when recorded (``motor-ident record`` does), else None.
        warnings: what was dropped or recovered, one line each.
        other_joints: joints of the joint states that were not asked for, and how far each moved
            (its position's range [rad or m]; NaN without positions).
    """

    path: Path
    storage: str
    topics: dict[str, str]
    joint_states: JointStateSeries
    motor_states: JointStateSeries | None = None
    wrench: WrenchSeries | None = None
    commands: ArraySeries | None = None
    gate: ArraySeries | None = None
    r2: ArraySeries | None = None
    warnings: tuple[str, ...] = ()
    other_joints: dict[str, float] = field(default_factory=dict)

    def joint_record(self, joints: Sequence[str] | None = None) -> JointRecord:
        """The joint states as a `JointRecord` (effort = measured joint torque).

        Raises:
            BagError: the joint states carry no position or no effort.
            DataError: a joint of ``joints`` is not in the recording.
        """
        js = self.joint_states
        if js.position is None or js.effort is None:
            empty = [f for f in ("position", "effort") if getattr(js, f) is None]
            raise BagError(f"{self.path}: joint_states has empty {' and '.join(empty)}: cannot identify from it")
        record = JointRecord(t=js.t, joint_names=js.names, q=js.position, tau=js.effort, qd=js.velocity)
        return record if joints is None else record.select(joints)


@dataclass(frozen=True, eq=False)
class AlignedBag:
    """Every topic of a bag on the joint_states stamps (arrays of N rows; None where absent).

    ``valid`` (N,) is False where a present topic does not cover the stamp (before its first or
    after its last message): use ``valid`` to cut the record before fitting.
    """

    t: FloatArray
    joint_names: tuple[str, ...]
    q: FloatArray | None
    qd: FloatArray | None
    tau: FloatArray | None
    motor_names: tuple[str, ...] = ()
    motor_position: FloatArray | None = None
    motor_velocity: FloatArray | None = None
    motor_effort: FloatArray | None = None
    force: FloatArray | None = None
    torque: FloatArray | None = None
    command: FloatArray | None = None
    valid: FloatArray = field(default_factory=lambda: np.zeros(0, dtype=bool))


def resample(
    t_source: ArrayLike, values: ArrayLike, t_target: ArrayLike, *, hold: bool = False
) -> tuple[FloatArray, NDArray[np.bool_]]:
    """Values of a time series at other instants.

    Args:
        t_source: increasing sample times, shape (M,) [s].
        values: samples, shape (M, k).
        t_target: where the values are wanted, shape (N,) [s].
        hold: zero-order hold (the latest sample at or before each target) instead of linear
            interpolation.

    Returns:
        (values at ``t_target`` (N, k), inside (N,)): ``inside`` is False before the first and
        after the last source sample, where the edge value is repeated.
    """
    ts = np.asarray(t_source, dtype=float)
    v = np.asarray(values, dtype=float).reshape(ts.size, -1)
    tt = np.asarray(t_target, dtype=float)
    if ts.size == 0:
        return np.full((tt.size, v.shape[1]), np.nan), np.zeros(tt.size, dtype=bool)
    inside = (tt >= ts[0]) & (tt <= ts[-1])
    if hold:
        # Stamps are integer nanoseconds: a sample within 1 ns of a target counts as at it.
        k = np.clip(np.searchsorted(ts, tt + 1e-9, side="right") - 1, 0, ts.size - 1)
        return v[k].copy(), inside
    return np.column_stack([np.interp(tt, ts, v[:, c]) for c in range(v.shape[1])]), inside


def align(data: BagData) -> AlignedBag:
    """Every topic of ``data`` on its joint_states stamps (see `AlignedBag`)."""
    js = data.joint_states
    t = js.t
    valid = np.ones(t.size, dtype=bool)

    def on_t(ts: FloatArray, values: FloatArray | None, hold: bool = False) -> FloatArray | None:
        nonlocal valid
        if values is None:
            return None
        out, inside = resample(ts, values, t, hold=hold)
        valid &= inside
        return out

    ms, w, c = data.motor_states, data.wrench, data.commands
    return AlignedBag(
        t=t,
        joint_names=js.names,
        q=js.position,
        qd=js.velocity,
        tau=js.effort,
        motor_names=() if ms is None else ms.names,
        motor_position=None if ms is None else on_t(ms.t, ms.position),
        motor_velocity=None if ms is None else on_t(ms.t, ms.velocity),
        motor_effort=None if ms is None else on_t(ms.t, ms.effort),
        force=None if w is None else on_t(w.t, w.force),
        torque=None if w is None else on_t(w.t, w.torque),
        command=None if c is None else on_t(c.t, c.values, hold=True),
        valid=valid,
    )
