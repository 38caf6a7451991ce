"""vrec_controller over real DDS: the core VREC torque comes out saturated, dual-encoder signals are published."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

pytestmark = pytest.mark.ros

JOINTS = ["j1", "j2"]
MOTORS = ["m1", "m2"]


@pytest.fixture
def dds(ros):
    """vrec_controller (two Xin et al. 2020 bench joints, motor side) and a probe node in one context and executor."""
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    from motor_ident.ros.nodes.vrec_controller_node import VrecControllerNode
    from motor_ident.ros.runtime.common import COMMAND_QOS, STATE_QOS

    node = ros.add(
        VrecControllerNode,
        joints=JOINTS,
        motor_names=MOTORS,
        motor_states_at_rotor=True,
        gear_ratio=[160.0],
        stale_timeout=5.0,
        torque_limit=[272.0, 50.0],
    )
    probe = ros.probe()
    received: dict[str, list] = {"command": [], "deformation": [], "rigid": []}
    probe.create_subscription(Float64MultiArray, "effort_controller/commands", received["command"].append, COMMAND_QOS)
    probe.create_subscription(JointState, "vrec_controller/deformation", received["deformation"].append, STATE_QOS)
    probe.create_subscription(JointState, "vrec_controller/rigid_velocity", received["rigid"].append, STATE_QOS)
    pubs = {
        "joint_states": probe.create_publisher(JointState, "joint_states", STATE_QOS),
        "motor_states": probe.create_publisher(JointState, "motor_states", STATE_QOS),
        "reference": probe.create_publisher(Float64MultiArray, "vrec_controller/velocity_reference", COMMAND_QOS),
    }

    def exchange(publish, key: str, timeout: float = 10.0):
        """Publish until ``key`` receives a message (discovery takes a moment); return that message.

        One callback per spin: up to 8 spins drain what a publish caused before publishing again."""
        received[key].clear()
        arrived = ros.spin_until(lambda: received[key], timeout, each=publish, spins=8, period=0.01)
        assert arrived, f"nothing received on {key}; node counts {node.counts}, {node.last_problem!r}"
        return received[key][-1]

    return {"node": node, "pubs": pubs, "exchange": exchange, "received": received}


def test_vrec_command_and_dual_encoder_signals(ros, dds) -> None:
    """One update equals the core VREC law; deformation, its rate and v_r are published; the limit holds."""
    from std_msgs.msg import Float64MultiArray

    from motor_ident.core.control.vrec import VrecConfig, VrecController, design_gain
    from motor_ident.papers.xin.bench import XIN_MOTOR_KI, XIN_MOTOR_KP, xin_bench_parameters
    from motor_ident.ros.wire.conversions import make_joint_state

    node = dds["node"]
    plant = xin_bench_parameters()
    k = design_gain(plant, "motor", XIN_MOTOR_KP, XIN_MOTOR_KI, 0.707)
    assert_allclose(node.gains, [k, k], rtol=1e-9)
    reference = Float64MultiArray(data=[0.2, 5.0])
    # let the reference arrive before the first command
    ros.spin_until(lambda: node.reference[1] == 5.0, 10.0, each=lambda: dds["pubs"]["reference"].publish(reference))
    assert_allclose(node.reference, [0.2, 5.0])
    q_l, v_l = np.array([0.10, -0.20]), np.array([0.05, 0.01])
    theta_m, v_m = np.array([0.1002, -0.2001]), np.array([0.06, 0.02])  # link-side referred
    link = make_joint_state(JOINTS[::-1], 1.0, q_l[::-1], v_l[::-1], np.zeros(2))  # shuffled names
    motor = make_joint_state(MOTORS, 1.0, 160.0 * theta_m, 160.0 * v_m, np.zeros(2))  # rotor side

    def publish() -> None:
        dds["pubs"]["joint_states"].publish(link)
        ros.executor.spin_once(timeout_sec=0.01)
        for c in node.controllers:  # compare the first update only
            c.reset()
        dds["pubs"]["motor_states"].publish(motor)

    command = dds["exchange"](publish, "command")
    reference_law = VrecController(plant, VrecConfig("motor", XIN_MOTOR_KP, XIN_MOTOR_KI, k, 272.0), 1000.0)
    expected0 = reference_law.update(0.2, v_m[0], v_l[0])
    assert command.data[0] == pytest.approx(expected0, rel=1e-9)
    assert command.data[1] == pytest.approx(50.0)  # 5 rad/s step saturates at joint 2's 50 N m limit
    deformation = dds["exchange"](publish, "deformation")
    assert list(deformation.name) == JOINTS
    assert_allclose(deformation.position, theta_m - q_l, atol=1e-12)
    assert_allclose(deformation.velocity, v_m - v_l, atol=1e-12)
    assert_allclose(deformation.effort, 34000.0 * (theta_m - q_l) + 10.0 * (v_m - v_l), atol=1e-9)
    rigid = dds["exchange"](publish, "rigid")
    a, b = plant.motor_inertia / plant.total_inertia, plant.load_inertia / plant.total_inertia
    assert_allclose(rigid.velocity, a * v_m + b * v_l, atol=1e-12)  # first sample: the filter state is zero


def test_bad_messages_are_dropped_never_a_nan_command(dds) -> None:
    """NaN motor states, a missing joint and a short reference are dropped and counted; commands stay finite."""
    from std_msgs.msg import Float64MultiArray

    from motor_ident.ros.wire.conversions import make_joint_state

    node = dds["node"]
    link = make_joint_state(JOINTS, 1.0, np.zeros(2), np.zeros(2), np.zeros(2))
    node._on_joint_states(link)
    node._on_motor_states(make_joint_state(MOTORS, 1.0, np.zeros(2), np.array([np.nan, 0.0]), np.zeros(2)))
    node._on_motor_states(make_joint_state(["m1"], 1.0, np.zeros(1), np.zeros(1), np.zeros(1)))
    node._on_reference(Float64MultiArray(data=[1.0]))
    assert node.drops.total == 3 and node.counts["commands"] == 0
    assert node.drops.diagnostic_values() == {
        "dropped": 3,
        "velocity_reference dropped: wrong size": 1,
        "motor_states dropped: missing joints": 1,
        "motor_states dropped: non-finite value": 1,
    }
    node._on_motor_states(make_joint_state(MOTORS, 1.0, np.zeros(2), np.array([1e9, -1e9]), np.zeros(2)))
    assert node.counts["commands"] == 1
    assert np.all(np.isfinite(node.last_command)) and np.all(np.abs(node.last_command) <= [272.0, 50.0])


def test_refuses_bad_parameters(ros) -> None:
    """A wrong number of per-joint values or an impossible gain stops the node with the parameter named."""
    from motor_ident.errors import ConfigError
    from motor_ident.ros.nodes.vrec_controller_node import VrecControllerNode

    with pytest.raises(ConfigError, match="stiffness"):
        ros.add(VrecControllerNode, joints=JOINTS, stiffness=[1.0, 2.0, 3.0])
    with pytest.raises(ConfigError, match="side"):
        ros.add(VrecControllerNode, side="middle")
