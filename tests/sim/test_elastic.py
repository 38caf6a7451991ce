"""The elastic_arm6 scenario: config, pinocchio link dynamics behind springs, dual encoders."""

from __future__ import annotations

import numpy as np
import pytest

from motor_ident.core.elastic.dual_encoder import deformation
from motor_ident.core.rigid_body.model import inverse_dynamics
from motor_ident.errors import ConfigError
from motor_ident.io.robot_config import load_robot_config
from motor_ident.sim.elastic import ElasticArm, ElasticJointParameters, EncoderConfig, load_elastic_joints


def _arm(**kwargs: object) -> tuple[ElasticArm, object]:
    config = load_robot_config("elastic_arm6")
    elastic = load_elastic_joints(config.source, config.joints)
    return ElasticArm(config.build_model(), elastic, **kwargs), config  # type: ignore[arg-type]


def test_arm_holds_its_pose_on_wound_springs() -> None:
    """Settled at a pose with the gravity torque commanded, the arm stays put and delta = tau_g / K."""
    arm, _ = _arm(q0=np.array([0.3, -1.0, 1.2, -0.5, 0.8, 0.2]))
    q_start = arm.q.copy()
    gravity = arm.tau_motor.copy()
    for _ in range(250):
        arm.step(gravity)
    np.testing.assert_allclose(arm.q, q_start, atol=1e-6)
    m = arm.measure()
    delta = deformation(m.motor_position, m.q)
    np.testing.assert_allclose(delta, gravity / arm.k, atol=2e-5)
    assert np.abs(gravity[1]) > 10.0  # the shoulder carries real load


def test_spring_torque_drives_the_pinocchio_link_model() -> None:
    """After a motor torque step the link acceleration is ABA of the spring torque (inverse: RNEA)."""
    arm, _ = _arm(q0=np.zeros(6))
    arm.step(arm.tau_motor + np.array([5.0, 0, 0, 0, 0, 1.0]))
    a = (arm.qd - 0.0) / arm.dt  # one-step average acceleration from rest
    tau_j = arm.joint_torque()
    rnea = inverse_dynamics(arm.robot, arm.robot.create_data(), arm.q, arm.qd, a)
    assert np.abs(arm.qd).max() > 0.0
    np.testing.assert_allclose(rnea, tau_j, atol=0.2 * np.abs(tau_j).max())


def test_elastic_block_is_validated(tmp_path) -> None:
    """A missing joint or a negative stiffness is refused with the key named."""
    path = tmp_path / "bad.yaml"
    path.write_text("elastic_joints:\n  j1: {stiffness: -1.0}\n")
    with pytest.raises(ConfigError, match="stiffness"):
        load_elastic_joints(path, ("j1",))
    with pytest.raises(ConfigError, match="j2"):
        load_elastic_joints(path, ("j2",))
    with pytest.raises(ConfigError, match="ripple_amplitude"):
        EncoderConfig(ripple_amplitude=-1.0)
    assert ElasticJointParameters(stiffness=1.0).motor_inertia == 0.0
