"""A floating-base recording from a rosbag2 bag: joint states, a base IMU, a wrench per foot.

Topics: ``sensor_msgs/JointState`` (positions; efforts as joint torques where filled),
``sensor_msgs/Imu`` on the base (orientation, angular velocity, linear acceleration) and one
``geometry_msgs/WrenchStamped`` per contact, in the contact's sensor frame. The IMU and wrenches
are interpolated onto the joint-state stamps (linearly; the quaternion renormalised) and the
record is cut to the span every topic covers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from rosbags.typesys import Stores, get_typestore

from motor_ident.io.bags.read import raw_messages, read_bag
from motor_ident.io.bags.series import BagError, BagTopics, resample
from motor_ident.io.bags.storage import IMU, WRENCH_STAMPED, _stamp
from motor_ident.io.bags.write import BagWriter
from motor_ident.io.floating_record import FloatingBaseRecord


def read_floating_bag(
    path: str | Path,
    *,
    joints: Sequence[str],
    imu_topic: str,
    wrench_topics: Mapping[str, str],
    joint_states_topic: str = "/joint_states",
) -> FloatingBaseRecord:
    """Read a floating-base recording (module docstring).

    Args:
        joints: joint order of the record.
        imu_topic: the base IMU's topic.
        wrench_topics: contact name -> its WrenchStamped topic, in the robot config's contact order.

    Raises:
        BagError (and its subclasses): a topic is missing, of another type, or does not overlap.
    """
    bag = read_bag(
        path,
        joints=joints,
        topics=BagTopics(joint_states=joint_states_topic, motor_states="", wrench="", commands="", gate="", r2=""),
    )
    js = bag.joint_states
    if js.position is None:
        raise BagError(f"{path}: {joint_states_topic} carries no positions")
    topics = [imu_topic, *wrench_topics.values()]
    messages, _ = raw_messages(path, topics=topics)
    store = get_typestore(Stores.LATEST)
    series: dict[str, tuple[list[float], list[np.ndarray]]] = {topic: ([], []) for topic in topics}
    for message in messages:
        topic = "/" + message.topic.lstrip("/")
        key = next(t for t in topics if "/" + t.lstrip("/") == topic)
        expected = IMU if key == imu_topic else WRENCH_STAMPED
        if message.msgtype != expected:
            raise BagError(f"{path}: {message.topic} is {message.msgtype}, expected {expected}")
        msg: Any = store.deserialize_cdr(message.data, message.msgtype)  # rosbags messages are untyped
        if expected == IMU:
            o, w, a = msg.orientation, msg.angular_velocity, msg.linear_acceleration
            values = np.array([o.x, o.y, o.z, o.w, w.x, w.y, w.z, a.x, a.y, a.z])
        else:
            f, m = msg.wrench.force, msg.wrench.torque
            values = np.array([f.x, f.y, f.z, m.x, m.y, m.z])
        series[key][0].append(_stamp(msg))
        series[key][1].append(values)
    t = js.t
    keep = np.ones(t.size, dtype=bool)
    on_joints = {}
    for topic, (stamps, rows) in series.items():
        order = np.argsort(stamps)
        on_joints[topic], inside = resample(np.asarray(stamps)[order], np.asarray(rows)[order], t)
        keep &= inside
    if np.count_nonzero(keep) < 2:
        raise BagError(f"{path}: the joint states, {imu_topic} and the wrench topics do not overlap in time")
    imu = on_joints[imu_topic][keep]
    quaternion = imu[:, :4] / np.linalg.norm(imu[:, :4], axis=1, keepdims=True)
    effort = None if js.effort is None else js.effort[keep]
    return FloatingBaseRecord(
        t=t[keep],
        joint_names=js.names,
        q=js.position[keep],
        contact_names=tuple(wrench_topics),
        wrench=np.stack([on_joints[topic][keep] for topic in wrench_topics.values()], axis=1),
        imu_quaternion=quaternion,
        imu_gyro=imu[:, 4:7],
        imu_accelerometer=imu[:, 7:10],
        tau=effort,
    )


def write_floating_bag(
    path: str | Path,
    record: FloatingBaseRecord,
    *,
    sensor_frames: Sequence[str],
    imu_frame: str = "",
    imu_topic: str = "/imu/data",
    joint_states_topic: str = "/joint_states",
) -> None:
    """Write a floating-base record as a rosbag2 directory (mcap), as the robot's drivers would publish it.

    Per sample (all stamped ``t``): a JointState (positions; ``tau`` as efforts when the record has
    it), an Imu on ``imu_topic`` and a WrenchStamped per contact on ``/<contact>/wrench`` in its
    sensor frame (``sensor_frames``, contact order): the topics `read_floating_bag` and the
    ``floating_identifier`` node read by default.

    Raises:
        BagError: ``path`` exists.
    """
    with BagWriter(path) as bag:
        for k, t in enumerate(record.t):
            t = float(t)
            bag.joint_state(
                joint_states_topic,
                t,
                record.joint_names,
                record.q[k],
                None,
                None if record.tau is None else record.tau[k],
            )
            bag.imu(imu_topic, t, record.imu_quaternion[k], record.imu_gyro[k], record.imu_accelerometer[k], imu_frame)
            for c, (name, frame) in enumerate(zip(record.contact_names, sensor_frames, strict=True)):
                bag.wrench(f"/{name}/wrench", t, record.wrench[k, c, :3], record.wrench[k, c, 3:], frame)
