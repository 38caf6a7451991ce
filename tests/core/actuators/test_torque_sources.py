"""Torque sources: currents, PWM and F/T wrenches to joint torques, against independent computations."""

from __future__ import annotations

import numpy as np
import pytest

from motor_ident.core.actuators.torque_sources import TorqueSource, observable_joints
from motor_ident.core.rigid_body.ft_sensor import sensor_wrench
from motor_ident.core.rigid_body.model import inverse_dynamics, random_states
from motor_ident.errors import ConfigError, DataError
from motor_ident.io.robot_config import load_robot_config, robot_config_from_dict


def test_currents_through_a_coupling_round_trip(rng: np.random.Generator) -> None:
    """Coupled waist: motor currents made from joint torques convert back to them, through T^-T and the gains."""
    config = load_robot_config("icub_torso")
    gains = np.array([8.0, 9.0, 10.0])
    converter = config.torque_converter("motor_current").with_drive_gains(gains)
    tau_joint = rng.normal(0.0, 5.0, (50, 3))
    qd = rng.normal(0.0, 1.0, (50, 3))
    current = converter.motor_measurement(tau_joint=tau_joint, qd=qd)
    T = converter.transmission.T
    np.testing.assert_allclose(current, (tau_joint @ T) / gains, err_msg="i = T' tau_joint / k")
    back = converter.joint_torque(q=np.zeros((50, 3)), qd=qd, current=current)
    np.testing.assert_allclose(back, tau_joint, atol=1e-12)
    np.testing.assert_allclose(back, (current * gains) @ np.linalg.inv(T), atol=1e-12, err_msg="T^-T (k i)")


def test_motor_side_gains_are_multiplied_by_the_gear_ratio() -> None:
    """A torque constant on the motor side reaches the joint times rho; the config names gains by motor."""
    config = load_robot_config("ur5_currents")
    converter = config.torque_converter()
    assert converter.kind == "motor_current"
    np.testing.assert_allclose(converter.drive_gains, 101.0 * np.array([0.125] * 3 + [0.092] * 3))
    tau = converter.joint_torque(q=np.zeros((1, 6)), qd=np.zeros((1, 6)), current=np.ones((1, 6)))
    np.testing.assert_allclose(tau[0], converter.drive_gains)


def test_pwm_uses_the_motor_model_and_the_coupling(rng: np.random.Generator) -> None:
    """Duty cycles -> K_pwm* PWM + tau_0 - back_emf qd_motor per motor -> T^-T, as Guedelha et al. 2021 eq. 18."""
    config = load_robot_config("icub_torso")
    converter = config.torque_converter("motor_pwm")
    motors = [d.motor for d in config.motor_drives()]
    pwm = rng.uniform(-0.5, 0.5, (20, 3))
    qd = rng.normal(0.0, 0.5, (20, 3))
    T = converter.transmission.T
    qd_motor = qd @ np.linalg.inv(T).T
    tau_motor = np.column_stack(
        [m.k_pwm * pwm[:, k] + m.tau_0 - m.back_emf * qd_motor[:, k] for k, m in enumerate(motors)]  # type: ignore[union-attr]
    )
    expected = tau_motor @ np.linalg.inv(T)
    np.testing.assert_allclose(converter.joint_torque(q=np.zeros((20, 3)), qd=qd, pwm=pwm), expected, atol=1e-9)
    duty = converter.motor_measurement(tau_joint=expected, qd=qd)
    np.testing.assert_allclose(duty, pwm, atol=1e-9, err_msg="the inverse gives the duty back (inside the limits)")


def test_ft_sensor_torques_equal_link_side_inverse_dynamics(rng: np.random.Generator) -> None:
    """The wrench of a sensor on the last link gives every joint's link-side torque (RNEA without rotors)."""
    config = load_robot_config("valkyrie_arm")
    converter = config.torque_converter("ft_sensor")
    robot = converter.robot
    assert robot is not None and converter.sensor is not None
    assert observable_joints(converter).all()
    links = robot.with_rotor_inertia(np.zeros(robot.n))
    data = links.create_data()
    q, qd, qdd = random_states(links, rng, 5)
    wrench = np.array([sensor_wrench(links, data, q[k], qd[k], qdd[k], converter.sensor) for k in range(5)])
    expected = np.array([inverse_dynamics(links, data, q[k], qd[k], qdd[k]) for k in range(5)])
    np.testing.assert_allclose(converter.joint_torque(q=q, qd=qd, qdd=qdd, wrench=wrench), expected, atol=1e-8)


def test_a_missing_measurement_or_constant_is_named() -> None:
    """The error says which measurement or which config key is missing."""
    config = load_robot_config("valkyrie_arm")
    converter = config.torque_converter("motor_current")
    with pytest.raises(DataError, match="needs the current measurement"):
        converter.joint_torque(q=np.zeros((1, 4)), qd=np.zeros((1, 4)), tau=np.zeros((1, 4)))
    with pytest.raises(DataError, match=r"expected \(N, 4\)"):
        converter.joint_torque(q=np.zeros((1, 4)), qd=np.zeros((1, 4)), current=np.zeros((1, 3)))
    with pytest.raises(ConfigError, match="'motor:' block"):
        config.torque_converter("motor_pwm")
    with pytest.raises(ConfigError, match="expected one of"):
        TorqueSource(kind="strain_gauge")


def test_config_block_is_validated() -> None:
    """``torque_source`` names every motor's gain, a known side, and defaults to joint_effort."""
    raw = load_robot_config("valkyrie_arm")
    assert raw.torque_source.kind == "joint_effort"
    base = {
        "name": "arm",
        "urdf": str(raw.urdf),
        "joints": list(raw.joints),
    }
    with pytest.raises(ConfigError, match="expected every motor"):
        robot_config_from_dict({**base, "torque_source": {"kind": "motor_current", "drive_gains": {"elbow": 2.0}}})
    with pytest.raises(ConfigError, match="gain_side"):
        robot_config_from_dict({**base, "torque_source": {"kind": "motor_current", "gain_side": "rotor"}})
    gains = {j: 2.0 for j in raw.joints}
    config = robot_config_from_dict({**base, "torque_source": {"kind": "motor_current", "drive_gains": gains}})
    assert config.torque_source.drive_gains == (2.0,) * 4
