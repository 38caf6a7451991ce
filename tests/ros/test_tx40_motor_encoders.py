"""A robot that publishes its motor encoders: the decoupler turns the TX40's motor states into joint states.

The Staubli TX40 example (examples/staubli_tx40/robot.yaml): motor 4 reversed (ratio -48), motor 6
turning at 32 (q5 + q6). Over real DDS, rotor-side motor states become the joint states that
FIGAROH's matrices give, written out here.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from tests.conftest import REPO

pytestmark = pytest.mark.ros

ROBOT = str(REPO / "examples" / "staubli_tx40" / "robot.yaml")
MOTORS = ["joint_1", "joint_2", "joint_3", "motor_4", "motor_5", "motor_6"]


def test_rotor_encoders_become_tx40_joint_states(ros) -> None:
    """Rotor angles, speeds and torques -> q = R^-1 q_m, tau = R' tau_m (R: ratios, R[5, 4] = 32)."""
    from sensor_msgs.msg import JointState

    from motor_ident.ros.nodes.decoupler_node import DecouplerNode
    from motor_ident.ros.runtime.common import STATE_QOS
    from motor_ident.ros.wire.conversions import make_joint_state

    ros.add(DecouplerNode, robot=ROBOT, motor_states_at_rotor=True)
    probe = ros.probe()
    received: list = []
    probe.create_subscription(JointState, "decoupler/joint_states", received.append, STATE_QOS)
    publisher = probe.create_publisher(JointState, "motor_states", STATE_QOS)
    R = np.diag([32.0, 32.0, 45.0, -48.0, 45.0, 32.0])
    R[5, 4] = 32.0
    q_joint = np.array([0.1, -0.2, 0.3, 0.4, -0.5, 0.6])
    qd_joint = np.array([1.0, 0.5, -0.5, 2.0, 1.5, -1.0])
    tau_motor = np.array([0.2, -0.1, 0.05, 0.03, -0.02, 0.01])
    msg = make_joint_state(MOTORS, 1.0, R @ q_joint, R @ qd_joint, tau_motor)
    assert ros.spin_until(lambda: received, 10.0, each=lambda: publisher.publish(msg)), "no decoupler/joint_states"
    out = received[-1]
    assert list(out.name) == [f"joint_{k}" for k in range(1, 7)]
    assert_allclose(out.position, q_joint, atol=1e-12)
    assert_allclose(out.velocity, qd_joint, atol=1e-12)
    assert_allclose(out.effort, R.T @ tau_motor, atol=1e-12)
