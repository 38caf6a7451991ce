"""The QoS a bag records per topic (rosbag2's ``offered_qos_profiles``), without ROS.

rosbag2 keeps, per topic, the QoS profiles its publishers offered, so that ``ros2 bag play``
can offer the same: a latched topic (TRANSIENT_LOCAL durability) replayed by a volatile
publisher would be incompatible with a latched subscription and deliver nothing to it. Bags
that motor_ident simulates carry the profiles its nodes publish with (`STANDARD_QOS`, the same
as ``motor_ident.ros.runtime.common``'s profiles, checked by a test); the live recorder stores what the
graph reports for each publisher.
"""

from __future__ import annotations

from pathlib import Path

from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime

from motor_ident.io.bags.storage import _resolve_storage, open_reader

INFINITE = QosTime(sec=2147483647, nsec=4294967295)
"""rmw's "infinite" duration, as ``ros2 bag record`` writes it for deadline, lifespan and lease."""


def qos(*, depth: int, reliable: bool, latched: bool = False, history: QosHistory = QosHistory.KEEP_LAST) -> Qos:
    """A publisher's profile as rosbag2 stores it: ``depth`` deep, RELIABLE or BEST_EFFORT, latched or volatile."""
    return Qos(
        history=history,
        depth=int(depth),
        reliability=QosReliability.RELIABLE if reliable else QosReliability.BEST_EFFORT,
        durability=QosDurability.TRANSIENT_LOCAL if latched else QosDurability.VOLATILE,
        deadline=INFINITE,
        lifespan=INFINITE,
        liveliness=QosLiveliness.AUTOMATIC,
        liveliness_lease_duration=INFINITE,
        avoid_ros_namespace_conventions=False,
    )


SENSOR_QOS = qos(depth=5, reliable=False)
"""``qos_profile_sensor_data``: joint and motor states, F/T wrench, IMU."""
COMMAND_QOS = qos(depth=1, reliable=True)
"""The controllers' command topics (a ros2_controllers ``~/commands`` subscription is RELIABLE)."""
LATCHED_QOS = qos(depth=1, reliable=True, latched=True)
"""The identifier's state topics: the last message reaches late subscribers."""
DEFAULT_QOS = qos(depth=10, reliable=True)
"""rclpy's default profile, for a topic motor_ident does not publish itself."""

STANDARD_QOS: dict[str, Qos] = {
    "/joint_states": SENSOR_QOS,
    "/motor_states": SENSOR_QOS,
    "/ft_sensor/wrench": SENSOR_QOS,
    "/effort_controller/commands": COMMAND_QOS,
    "/identifier/gate_open": LATCHED_QOS,
    "/identifier/r2": DEFAULT_QOS,
}
"""The profile each standard topic's publisher offers in motor_ident's nodes."""


def standard_qos(topic: str, default: Qos = DEFAULT_QOS) -> Qos:
    """The profile motor_ident's nodes publish ``topic`` with (``default`` for any other topic)."""
    return STANDARD_QOS.get("/" + topic.lstrip("/"), default)


def recorded_qos(path: str | Path) -> dict[str, list[Qos]]:
    """Per topic of a bag, the QoS profiles its publishers offered (empty for a bag that kept none).

    Raises:
        BagError: not a rosbag2 bag; ReaderError: rosbags cannot open it.
    """
    target, _, _, _ = _resolve_storage(Path(path))
    with open_reader(target) as reader:
        found: dict[str, list[Qos]] = {}
        for connection in reader.connections:
            profiles = getattr(connection.ext, "offered_qos_profiles", None) or []
            found.setdefault(connection.topic, []).extend(profiles)
        return found
