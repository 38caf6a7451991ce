"""A second publisher on ``joint_states`` and ``motor_states`` sending malformed messages.

Run as a program next to a scenario (the tests start it as a subprocess)::

    python tests/ros/hostile_publisher.py --robot valkyrie_arm --rate 150 --out hostile.json

It prints ``ready`` once its node is up, waits for the robot's first state, then publishes at
``--rate`` [Hz] (wall time) on both topics one message of each kind in `KINDS` in turn. The
malformed ones are stamped just after the robot's latest state, so that only the malformation is
wrong (each breaks a field every node reads); the well-formed ones carry the robot's own latest
values, stamped 0 or 0.3 s back. It also listens to /diagnostics. On SIGINT / SIGTERM it writes
``--out``: the messages sent per kind and the last status of every node on /diagnostics (with
its header stamp), then exits 0.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node
from sensor_msgs.msg import JointState

from motor_ident.ros.runtime.common import STATE_QOS
from motor_ident.ros.wire.conversions import make_joint_state, stamp_to_seconds

MARK = "hostile"  # frame_id of our own messages, so that we do not track ourselves

# kind -> the reason kind the nodes must count it under (motor_ident.ros.wire.conversions).
KINDS = {
    "nan position": "non-finite value",
    "inf velocity": "non-finite value",
    "short velocity": "wrong field length",
    "missing joint": "missing joints",
    "duplicate name": "duplicate names",
    "empty arrays": "empty field",
    "no names": "missing joints",
    "stamp 0 with extra names": "stamp 0",
    "stamp 0": "stamp 0",
    "stamp 0.3 s back": "stamp went backwards",
}


def malformed(kind: str, names: list[str], t: float, q: np.ndarray, qd: np.ndarray, tau: np.ndarray) -> JointState:
    """One message of ``kind`` for joints ``names`` whose latest state is (t, q, qd, tau)."""
    n = len(names)
    later = t + 0.0005  # plausible: between the robot's samples
    if kind == "nan position":
        msg = make_joint_state(names, later, np.where(np.arange(n) == 0, np.nan, q), qd, tau)
    elif kind == "inf velocity":
        msg = make_joint_state(names, later, q, np.where(np.arange(n) == n - 1, np.inf, qd), tau)
    elif kind == "short velocity":
        msg = make_joint_state(names, later, q, qd[:-1], tau)
    elif kind == "missing joint":
        msg = make_joint_state(names[:-1], later, q[:-1], qd[:-1], tau[:-1])
    elif kind == "duplicate name":
        msg = make_joint_state([*names, names[0]], later, [*q, 0.0], [*qd, 0.0], [*tau, 0.0])
    elif kind == "empty arrays":
        msg = make_joint_state(names, later)
    elif kind == "no names":
        msg = make_joint_state([], later)
    elif kind == "stamp 0 with extra names":
        msg = make_joint_state([*names, "hostile_extra"], 0.0, [*q, 9.0], [*qd, 9.0], [*tau, 9.0])
    elif kind == "stamp 0":
        msg = make_joint_state(names, 0.0, q, qd, tau)
    elif kind == "stamp 0.3 s back":
        msg = make_joint_state(names, t - 0.3, q, qd, tau)
    else:
        raise ValueError(f"unknown kind {kind!r}: expected one of {sorted(KINDS)}")
    msg.header.frame_id = MARK
    return msg


class HostilePublisher(Node):
    """Publishes `KINDS` in turn on joint_states and motor_states; records /diagnostics."""

    def __init__(self, joints: list[str], rate: float) -> None:
        super().__init__("hostile_publisher")
        self.topics = {"joint_states": joints, "motor_states": [f"{j}_motor" for j in joints]}
        self.latest: dict[str, tuple[float, np.ndarray, np.ndarray, np.ndarray]] = {}
        self.publishers_ = {topic: self.create_publisher(JointState, topic, STATE_QOS) for topic in self.topics}
        for topic in self.topics:
            self.create_subscription(JointState, topic, lambda msg, topic=topic: self._on_state(topic, msg), STATE_QOS)
        self.create_subscription(DiagnosticArray, "/diagnostics", self._on_diagnostics, 50)
        self.sent = dict.fromkeys(KINDS, 0)
        self.diagnostics: dict[str, dict[str, object]] = {}
        self._next = 0
        self.create_timer(1.0 / rate, self._publish)

    def _on_state(self, topic: str, msg: JointState) -> None:
        names = self.topics[topic]
        if msg.header.frame_id == MARK or list(msg.name) != names or len(msg.effort) != len(names):
            return  # ours, or a robot publishing in another order: keep to the plain case
        self.latest[topic] = (
            stamp_to_seconds(msg.header.stamp),
            np.asarray(msg.position),
            np.asarray(msg.velocity),
            np.asarray(msg.effort),
        )

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        for status in msg.status:
            self.diagnostics[status.name] = {
                "stamp": stamp_to_seconds(msg.header.stamp),
                "level": int.from_bytes(status.level, "little") if isinstance(status.level, bytes) else status.level,
                "message": status.message,
                "values": {kv.key: kv.value for kv in status.values},
            }

    def _publish(self) -> None:
        kind = list(KINDS)[self._next % len(KINDS)]
        published = False
        for topic, names in self.topics.items():
            if topic in self.latest:
                self.publishers_[topic].publish(malformed(kind, names, *self.latest[topic]))
                published = True
        if published:
            self.sent[kind] += 1
            self._next += 1


def main() -> None:
    """Publish until SIGINT / SIGTERM, then write the report."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.signals import SignalHandlerOptions

    from motor_ident.io.robot_config import load_robot_config
    from motor_ident.ros.runtime.shutdown import ProcessStop

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robot", default="valkyrie_arm", help="robot config whose joints to use")
    parser.add_argument("--rate", type=float, default=150.0, help="messages per second per topic [Hz]")
    parser.add_argument("--out", required=True, help="JSON report written at exit")
    args = parser.parse_args()
    if not (math.isfinite(args.rate) and args.rate > 0.0):
        parser.error(f"--rate {args.rate}: expected a positive rate in Hz")
    stop = ProcessStop().install()
    stop.running()  # a signal is only recorded: the report is written at exit
    stop_requested = stop.requests
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    node = HostilePublisher(list(load_robot_config(args.robot).joints), args.rate)
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    print("ready", flush=True)  # the caller may start the robot now
    try:
        while not stop_requested:
            executor.spin_once(timeout_sec=0.05)
    finally:
        Path(args.out).write_text(json.dumps({"sent": node.sent, "diagnostics": node.diagnostics}, indent=1))
        executor.shutdown()
        node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()


if __name__ == "__main__":
    main()
