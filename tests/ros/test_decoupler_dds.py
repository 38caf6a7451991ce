"""decoupler and pwm_feedforward over real DDS: joint-space torques come out right in motor space."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose
from rclpy.serialization import serialize_message

pytestmark = pytest.mark.ros

T_WAIST = np.array([[0.0, 0.55, 0.55], [0.0, 0.55, -0.55], [1.0, -0.25, 0.25]])  # config/icub_torso.yaml


@pytest.fixture
def dds(ros):
    """decoupler + pwm_feedforward (icub_torso) and a probe node in one context and executor."""
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    from motor_ident.ros.nodes.decoupler_node import DecouplerNode
    from motor_ident.ros.nodes.pwm_feedforward_node import PwmFeedforwardNode
    from motor_ident.ros.runtime.common import COMMAND_QOS, STATE_QOS

    decoupler = ros.add(DecouplerNode, robot="icub_torso")
    pwm = ros.add(PwmFeedforwardNode, robot="icub_torso", duty_limit=0.5)
    probe = ros.probe()
    received: dict[str, list] = {"motor_states": [], "joint_states": [], "motor_commands": [], "pwm": []}
    probe.create_subscription(JointState, "decoupler/motor_states", received["motor_states"].append, STATE_QOS)
    probe.create_subscription(JointState, "decoupler/joint_states", received["joint_states"].append, STATE_QOS)
    probe.create_subscription(
        Float64MultiArray, "decoupler/motor_commands", received["motor_commands"].append, COMMAND_QOS
    )
    probe.create_subscription(Float64MultiArray, "pwm_controller/commands", received["pwm"].append, COMMAND_QOS)
    publishers = {
        "joint_states": probe.create_publisher(JointState, "joint_states", STATE_QOS),
        "motor_states": probe.create_publisher(JointState, "motor_states", STATE_QOS),
        "joint_commands": probe.create_publisher(Float64MultiArray, "decoupler/joint_commands", COMMAND_QOS),
        "desired": probe.create_publisher(Float64MultiArray, "effort_controller/commands", COMMAND_QOS),
    }

    def exchange(publish, key: str, timeout: float = 10.0):
        """Publish until ``key`` receives a message (discovery takes a moment); return that message."""
        assert ros.spin_until(lambda: received[key], timeout, each=publish), f"nothing received on {key}"
        return received[key][-1]

    return {"exchange": exchange, "pub": publishers, "pwm": pwm, "decoupler": decoupler}


def test_joint_torque_comes_out_as_motor_torque(dds) -> None:
    """A joint-space JointState (shuffled names) becomes motor-space: T^-1 q, T^-1 qd, T' tau."""
    from motor_ident.ros.wire.conversions import make_joint_state

    names = ["torso_yaw", "torso_pitch", "torso_roll"]  # not the config order
    q, qd, tau = np.array([0.1, 0.2, -0.1]), np.array([0.3, -0.2, 0.1]), np.array([2.0, 10.0, -4.0])
    order = [1, 2, 0]  # config order [pitch, roll, yaw] from the message order
    msg = make_joint_state(names, 1.0, q, qd, tau)
    out = dds["exchange"](lambda: dds["pub"]["joint_states"].publish(msg), "motor_states")
    assert list(out.name) == ["m_0B4M0", "m_0B3M0", "m_0B3M1"]
    assert_allclose(out.effort, T_WAIST.T @ tau[order], atol=1e-12)
    assert_allclose(out.velocity, np.linalg.solve(T_WAIST, qd[order]), atol=1e-12)
    assert_allclose(out.position, np.linalg.solve(T_WAIST, q[order]), atol=1e-12)
    # power is the same on both sides
    assert np.dot(out.effort, out.velocity) == pytest.approx(np.dot(tau, qd), rel=1e-12)


def test_motor_states_and_commands_convert_both_ways(dds) -> None:
    """motor_states -> joint space with T^-T for torques; joint torque commands -> T' tau in motor order."""
    from std_msgs.msg import Float64MultiArray

    from motor_ident.ros.wire.conversions import make_joint_state

    tau_m = np.array([1.0, -2.0, 3.0])
    msg = make_joint_state(["m_0B4M0", "m_0B3M0", "m_0B3M1"], 1.0, np.zeros(3), np.array([0.1, 0.2, 0.3]), tau_m)
    out = dds["exchange"](lambda: dds["pub"]["motor_states"].publish(msg), "joint_states")
    assert list(out.name) == ["torso_pitch", "torso_roll", "torso_yaw"]
    assert_allclose(out.effort, np.linalg.solve(T_WAIST.T, tau_m), atol=1e-12)
    assert_allclose(out.velocity, T_WAIST @ [0.1, 0.2, 0.3], atol=1e-12)
    command = Float64MultiArray(data=[5.0, -1.0, 2.0])
    out = dds["exchange"](lambda: dds["pub"]["joint_commands"].publish(command), "motor_commands")
    assert_allclose(out.data, T_WAIST.T @ [5.0, -1.0, 2.0], atol=1e-12)


def test_pwm_feedforward_publishes_saturated_duty(dds) -> None:
    """Desired joint torques become duties (T' tau - tau_0) / K_pwm* at rest; a huge one saturates at 0.5."""
    from std_msgs.msg import Float64MultiArray

    node = dds["pwm"]
    tau = np.array([3.0, -2.0, 1.0])
    out = dds["exchange"](lambda: dds["pub"]["desired"].publish(Float64MultiArray(data=tau.tolist())), "pwm")
    k_pwm = np.array([c.motor.k_pwm for c in node.chains])
    tau_0 = np.array([c.motor.tau_0 for c in node.chains])
    assert_allclose(out.data, (T_WAIST.T @ tau - tau_0) / k_pwm, atol=1e-12)  # no joint_states: no velocity terms
    node._on_desired(serialize_message(Float64MultiArray(data=[500.0, 0.0, float("nan")])))  # NaN: dropped
    assert node.dropped == 1
    node._on_desired(serialize_message(Float64MultiArray(data=[500.0, 0.0, 0.0])))
    assert np.max(np.abs(node.last_duty)) == pytest.approx(0.5) and np.all(np.isfinite(node.last_duty))


def test_joint_torques_reach_the_duty_cycles_through_the_decoupler_along_the_reference(ros) -> None:
    """The icub_torso scenario's wiring, in a namespace: joint torques on effort_controller/commands ->
    decoupler (joint_commands_topic) -> decoupler/motor_commands -> pwm_feedforward (command_space motor,
    reference_topic) -> duty = (T' tau + fc sign(v) + fv v + D a - tau_0 + back_emf v) / K_pwm* with v, a
    the reference's motor velocity and acceleration, not the measured (zero) velocity."""
    from builtin_interfaces.msg import Duration
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from motor_ident.ros.nodes.decoupler_node import DecouplerNode
    from motor_ident.ros.nodes.pwm_feedforward_node import PwmFeedforwardNode
    from motor_ident.ros.runtime.common import COMMAND_QOS, STATE_QOS
    from motor_ident.ros.wire.conversions import make_joint_state

    decoupler = ros.add(
        DecouplerNode, namespace="wired", robot="icub_torso", joint_commands_topic="effort_controller/commands"
    )
    pwm = ros.add(
        PwmFeedforwardNode,
        namespace="wired",
        robot="icub_torso",
        command_topic="decoupler/motor_commands",
        command_space="motor",
        reference_topic="feedforward/reference",
    )
    probe = ros.probe(namespace="wired")
    duties: list = []
    probe.create_subscription(Float64MultiArray, "pwm_controller/commands", duties.append, COMMAND_QOS)
    state_pub = probe.create_publisher(JointState, "joint_states", STATE_QOS)
    reference_pub = probe.create_publisher(JointTrajectory, "feedforward/reference", 10)
    command_pub = probe.create_publisher(Float64MultiArray, "effort_controller/commands", COMMAND_QOS)
    qd_ref, qdd_ref = np.array([0.4, -0.1, 0.4]), np.array([2.0, 1.0, -3.0])  # joint space; motors > 0.27 rad/s
    tau = np.array([3.0, -2.0, 1.0])

    def publish() -> None:
        """A reference, then a state, then (once both have arrived) the joint torques."""
        now = probe.get_clock().now()
        t = now.nanoseconds * 1e-9
        reference = JointTrajectory(joint_names=["torso_pitch", "torso_roll", "torso_yaw"])
        reference.header.stamp = now.to_msg()
        reference.points = [
            JointTrajectoryPoint(
                positions=[0.5, 0.0, 0.0],
                velocities=qd_ref.tolist(),
                accelerations=qdd_ref.tolist(),
                time_from_start=Duration(sec=s),
            )
            for s in range(3)
        ]
        reference_pub.publish(reference)
        ros.executor.spin_once(timeout_sec=0.02)
        state_pub.publish(
            make_joint_state(["torso_pitch", "torso_roll", "torso_yaw"], t + 0.5, np.zeros(3), np.zeros(3), np.zeros(3))
        )
        ros.executor.spin_once(timeout_sec=0.02)
        if pwm.reference_time.size and pwm.last_state_time is not None:
            command_pub.publish(Float64MultiArray(data=tau.tolist()))

    assert ros.spin_until(lambda: duties, 10.0, each=publish, spins=5, period=0.02), (
        "no duty cycles on wired/pwm_controller/commands"
    )
    assert int(decoupler.counts["joint_commands"]) >= 1 and decoupler.dropped == 0 and pwm.dropped == 0
    v, a = np.linalg.solve(T_WAIST, qd_ref), np.linalg.solve(T_WAIST, qdd_ref)
    expected = []
    for k, chain in enumerate(pwm.chains):
        fc, fv = chain.friction_values[:2]
        needed = (T_WAIST.T @ tau)[k] + fc * np.sign(v[k]) + fv * v[k] + chain.reflected_inertia * a[k]
        expected.append((needed - chain.motor.tau_0 + chain.motor.back_emf * v[k]) / chain.motor.k_pwm)
    assert_allclose(duties[-1].data, expected, rtol=1e-6)
