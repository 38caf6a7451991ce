"""Feedforward latency through DDS at 1 kHz, measured in one process (used by ``motor-ident bench``).

A stand-in robot node publishes ``joint_states`` from a 1 kHz wall timer and times the
``effort_controller/commands`` the real `FeedforwardNode` answers with. Latency is from the
state's publish call to the command's arrival callback, over DDS both ways.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any

import numpy as np
from rclpy.node import Node
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from motor_ident.ros.common import COMMAND_QOS, STATE_QOS
from motor_ident.ros.conversions import make_joint_state


class _BenchRobot(Node):
    def __init__(self, joints: tuple[str, ...], q: np.ndarray, **kwargs: Any) -> None:
        super().__init__("bench_robot", **kwargs)
        self.joints, self.q = joints, q
        self.pub = self.create_publisher(JointState, "joint_states", STATE_QOS)
        self.create_subscription(Float64MultiArray, "effort_controller/commands", self._on_command, COMMAND_QOS)
        self.sent: deque[float] = deque()
        self.latencies: list[float] = []
        self.ticks: list[float] = []
        self.timer = self.create_timer(0.001, self._tick)

    def _tick(self) -> None:
        now = time.perf_counter()
        self.ticks.append(now)
        t = self.get_clock().now().nanoseconds * 1e-9
        self.sent.append(now)
        self.pub.publish(make_joint_state(self.joints, t, self.q, np.zeros_like(self.q), np.zeros_like(self.q)))

    def _on_command(self, msg: Float64MultiArray) -> None:
        if self.sent:
            self.latencies.append(time.perf_counter() - self.sent.popleft())


def measure_feedforward_latency(seconds: float, robot: str = "valkyrie_arm") -> dict[str, Any]:
    """Run the feedforward node against a 1 kHz state stream for ``seconds``; return the figures."""
    import rclpy
    from rclpy.experimental import EventsExecutor

    from motor_ident.ros.feedforward_node import FeedforwardNode
    from motor_ident.ros.runner import default_dds_environment

    default_dds_environment()
    context = rclpy.Context()
    rclpy.init(context=context)
    nodes: list[Node] = []
    executor = None
    try:
        ff = FeedforwardNode(context=context, parameter_overrides=[Parameter("robot", value=robot)])
        nodes.append(ff)
        n = len(ff.joints)
        q = np.full(n, 0.1)
        now = ff.get_clock().now().nanoseconds * 1e-9
        t = np.array([now - 1.0, now + seconds + 30.0])
        ff.reference.set(t, np.stack([q, q]), np.zeros((2, n)), np.zeros((2, n)))
        bench = _BenchRobot(ff.joints, q, context=context)
        nodes.append(bench)
        executor = EventsExecutor(context=context)
        for node in nodes:
            executor.add_node(node)
        warmup_end = time.perf_counter() + 1.0
        while time.perf_counter() < warmup_end:
            executor.spin_once(timeout_sec=0.01)
        bench.latencies.clear()
        bench.ticks.clear()
        bench.sent.clear()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        end = wall0 + seconds
        while time.perf_counter() < end:
            executor.spin_once(timeout_sec=0.01)
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
        lat = np.array(bench.latencies) * 1e3
        ticks = np.diff(np.array(bench.ticks))
        late = int(np.sum(ticks > 0.0015))
        unanswered = max(len(bench.ticks) - len(bench.latencies) - 1, 0)
        return {
            "seconds": seconds,
            "cycles": len(bench.ticks),
            "expected_cycles": int(round(wall * 1000.0)),
            "latency_p50_ms": float(np.percentile(lat, 50)) if lat.size else float("nan"),
            "latency_p99_ms": float(np.percentile(lat, 99)) if lat.size else float("nan"),
            "latency_max_ms": float(lat.max()) if lat.size else float("nan"),
            "late_timer_ticks": late,
            "unanswered_states": unanswered,
            "missed_cycles": late + unanswered,
            "cpu_share": cpu / wall,
            "nonfinite_commands": int(ff.nonfinite_commands),
        }
    finally:
        if executor is not None:
            executor.shutdown()
        for node in nodes:
            node.destroy_node()
        rclpy.shutdown(context=context)
