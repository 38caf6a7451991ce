"""The feedforward node's ``joint_trajectory`` output: points for a joint_trajectory_controller."""

from __future__ import annotations

import numpy as np
import pytest
from rclpy.serialization import serialize_message

pytestmark = pytest.mark.ros


def _reference(n: int, start: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A smooth 6 s reference from ``start`` [s]: times (K,), q, qd, qdd (K, n)."""
    t = start + np.linspace(0.0, 6.0, 601)
    phase = np.arange(n)[None, :]
    w = 2.0 * np.pi * 0.5
    tau = t[:, None] - start
    return t, 0.4 * np.sin(w * tau + phase), 0.4 * w * np.cos(w * tau + phase), -0.4 * w**2 * np.sin(w * tau + phase)


def test_trajectory_efforts_equal_the_forward_command_torques(ros) -> None:
    """Over DDS, a trajectory message holds the reference ahead of now in the controller's joint
    order, and each point's effort equals what the 1 kHz forward_command output sends when the
    robot is exactly on that point (no feedback terms then)."""
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from trajectory_msgs.msg import JointTrajectory

    from motor_ident.ros.nodes.feedforward_node import FeedforwardNode
    from motor_ident.ros.wire.conversions import make_joint_state, stamp_to_seconds

    forward = ros.add(FeedforwardNode, rate_limit=[1e9])
    controller_joints = list(reversed(forward.joints))
    planner = ros.add(
        FeedforwardNode,
        namespace="planner",
        output="joint_trajectory",
        trajectory_rate=50.0,
        trajectory_horizon=0.2,
        trajectory_spacing=0.02,
        controller_joints=controller_joints,
        rate_limit=[1e9],
    )
    n = len(forward.joints)
    now = planner.get_clock().now().nanoseconds * 1e-9
    t, q, qd, qdd = _reference(n, now - 1.0)
    for node in (forward, planner):
        node.reference.set(t, q, qd, qdd)
    received: list[JointTrajectory] = []
    probe = ros.probe()
    probe.create_subscription(
        JointTrajectory,
        "/planner/joint_trajectory_controller/joint_trajectory",
        received.append,
        QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE),
    )
    assert ros.spin_until(lambda: len(received) >= 2, timeout=30.0), "no trajectory within 30 s"
    msg = received[-1]
    assert list(msg.joint_names) == controller_joints
    assert len(msg.points) == 10
    order = np.array([controller_joints.index(name) for name in forward.joints])  # message -> config order
    start = stamp_to_seconds(msg.header.stamp)
    for point in msg.points:
        t_k = start + stamp_to_seconds(point.time_from_start)
        q_k, qd_k, qdd_k = planner.reference.sample(t_k)
        np.testing.assert_allclose(np.asarray(point.positions)[order], q_k, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(point.velocities)[order], qd_k, rtol=1e-12)
        np.testing.assert_allclose(np.asarray(point.accelerations)[order], qdd_k, rtol=1e-12)
        forward._on_state(serialize_message(make_joint_state(forward.joints, t_k, q_k, qd_k, np.zeros(n))))
        assert forward.mode.startswith("tracking")
        np.testing.assert_allclose(np.asarray(point.effort)[order], forward.previous, rtol=1e-9, atol=1e-12)
    assert np.abs(forward.previous).max() > 0.5  # N m: gravity and inertia, not a trivial zero


def test_no_reference_sends_no_trajectory(ros) -> None:
    """Without a reference covering now the planner sends nothing and says why."""
    from motor_ident.ros.nodes.feedforward_node import FeedforwardNode

    planner = ros.add(FeedforwardNode, output="joint_trajectory", trajectory_rate=100.0)
    assert ros.spin_until(lambda: "stale or missing" in planner.mode, timeout=10.0), planner.mode
    assert planner.commands_published == 0 and planner.state_sub is None


def test_controller_joints_must_be_the_robot_joints(ros) -> None:
    """A controller joint list that is not an ordering of the robot's joints is refused, naming them."""
    from motor_ident.errors import ConfigError
    from motor_ident.ros.nodes.feedforward_node import FeedforwardNode

    with pytest.raises(ConfigError, match="controller_joints"):
        ros.add(FeedforwardNode, output="joint_trajectory", controller_joints=["shoulder_pitch", "nope"])
