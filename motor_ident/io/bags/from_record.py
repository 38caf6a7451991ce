"""A recording read through a data spec (CSV, NPZ) written as a rosbag2, so ``motor-ident play`` feeds it
to the nodes as a robot would.

The topics are the identifier node's inputs (`motor_ident.ros.nodes.identifier_node`), with the recorded
stamps as both header stamp and receive time (``play`` publishes /clock from the receive times):

- ``/joint_states`` (sensor_msgs/JointState): position, velocity, and effort = the joint torque
  (``joint_effort``; empty otherwise);
- ``/motor_states`` (sensor_msgs/JointState, the motors' names): ``motor_current`` /
  ``motor_pwm``: effort = current [A] or duty [-];
- ``/ft_sensor/wrench`` (geometry_msgs/WrenchStamped): ``ft_sensor``: force [N] and torque [N m]
  in the sensor frame.

Velocities are the recording's own when it has them, else those its preparation derived (the data
spec's differentiation): the node takes velocity from the message, as from a drive.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from motor_ident.core.actuators.torque_sources import TORQUE_SOURCES
from motor_ident.errors import DataError
from motor_ident.io.bags.series import BagTopics
from motor_ident.io.bags.write import BagWriter
from motor_ident.io.data import JointRecord


@dataclass(frozen=True)
class RecordBag:
    """What `write_record_bag` wrote: the bag, its samples, span [s] and topics."""

    path: Path
    samples: int
    duration: float
    topics: tuple[str, ...]


def write_record_bag(
    out: str | Path,
    record: JointRecord,
    *,
    torque_source: str = "joint_effort",
    ft_frame: str = "",
    storage: str = "mcap",
    topics: BagTopics = BagTopics(),
) -> RecordBag:
    """Write ``record`` (stamps as recorded, ``qd`` set) into the bag ``out`` (module docstring).

    Args:
        out: the bag directory to create; must not exist.
        record: positions, velocities and the measurement ``torque_source`` reads.
        torque_source: one of `TORQUE_SOURCES`: which measurement goes into the bag.
        ft_frame: ``ft_sensor``: the frame id of the wrench messages.
        storage: ``mcap`` or ``sqlite3``.
        topics: the topic names (``joint_states``, ``motor_states``, ``wrench``).

    Raises:
        DataError: the record lacks velocities or the measurement, or holds non-finite values.
        BagError: ``out`` exists already.
    """
    if torque_source not in TORQUE_SOURCES:
        raise DataError(f"torque source {torque_source!r}: expected one of {list(TORQUE_SOURCES)}")
    if record.qd is None:
        raise DataError("the record has no velocities: prepare it first (derivatives)")
    measured = {
        "joint_effort": record.tau,
        "motor_current": record.current,
        "motor_pwm": record.pwm,
        "ft_sensor": record.wrench,
    }[torque_source]
    if measured is None:
        raise DataError(f"torque source {torque_source}: the record has no {_MEASUREMENT[torque_source]}")
    for name, values in (("positions", record.q), ("velocities", record.qd), (_MEASUREMENT[torque_source], measured)):
        bad = np.flatnonzero(~np.all(np.isfinite(values), axis=1))
        if bad.size:
            raise DataError(f"{name} hold NaN or Inf in {bad.size} samples (first at {record.t[bad[0]]:.6g} s)")
    names = list(record.joint_names)
    effort = record.tau if torque_source == "joint_effort" else None
    written = [topics.joint_states]
    with BagWriter(out, storage=storage) as bag:
        for k, t in enumerate(record.t):
            bag.joint_state(
                topics.joint_states, float(t), names, record.q[k], record.qd[k], None if effort is None else effort[k]
            )
            if torque_source in ("motor_current", "motor_pwm"):
                bag.joint_state(topics.motor_states, float(t), record.motor_names, effort=measured[k])
            elif torque_source == "ft_sensor":
                bag.wrench(topics.wrench, float(t), measured[k, :3], measured[k, 3:], ft_frame)
    if torque_source in ("motor_current", "motor_pwm"):
        written.append(topics.motor_states)
    elif torque_source == "ft_sensor":
        written.append(topics.wrench)
    return RecordBag(Path(out), int(record.t.size), float(record.t[-1] - record.t[0]), tuple(written))


_MEASUREMENT = {
    "joint_effort": "joint torques",
    "motor_current": "motor currents",
    "motor_pwm": "duty cycles",
    "ft_sensor": "wrench",
}
