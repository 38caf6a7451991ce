"""Transmission: coupling validation, joint <-> motor maps, power conservation, reflected inertia."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from motor_ident.core.actuators.transmission import TransmissionGroup, build_transmission
from motor_ident.errors import ConfigError
from motor_ident.io.robot_config import load_robot_config

# iCub waist differential of config/icub_torso.yaml
T_WAIST = ((0.0, 0.55, 0.55), (0.0, 0.55, -0.55), (1.0, -0.25, 0.25))


def _waist(**kwargs: object) -> TransmissionGroup:
    values: dict[str, object] = {
        "name": "waist",
        "joints": ("pitch", "roll", "yaw"),
        "motors": ("a", "b", "c"),
        "coupling": T_WAIST,
        "gear_ratio": (100.0, 80.0, 120.0),
        "rotor_inertia": (1e-5, 2e-5, 3e-5),
    }
    values.update(kwargs)
    return TransmissionGroup(**values)  # type: ignore[arg-type]


def test_torques_are_inverse_transpose_of_velocities(rng: np.random.Generator) -> None:
    """tau_joint = T^-T tau_motor, tau_motor = T' tau_joint, qd_joint = T qd_motor, and round trips."""
    group = _waist()
    T = np.array(T_WAIST)
    tau_motor = rng.normal(size=(50, 3))
    qd_motor = rng.normal(size=(50, 3))
    assert_allclose(group.joint_torque(tau_motor), np.linalg.solve(T.T, tau_motor.T).T, atol=1e-12)
    assert_allclose(group.motor_torque(group.joint_torque(tau_motor)), tau_motor, atol=1e-12)
    assert_allclose(group.joint_velocity(qd_motor), qd_motor @ T.T, atol=1e-12)
    assert_allclose(group.motor_velocity(group.joint_velocity(qd_motor)), qd_motor, atol=1e-12)
    assert_allclose(group.motor_position(group.joint_position(qd_motor[0])), qd_motor[0], atol=1e-12)
    assert_allclose(group.motor_velocity_from_rotor(group.rotor_velocity(qd_motor)), qd_motor, atol=1e-12)


def test_power_is_conserved(rng: np.random.Generator) -> None:
    """tau_joint' qd_joint equals tau_motor' qd_motor for random motions and torques (Axiom 0.1)."""
    group = _waist()
    tau_joint = rng.normal(size=(200, 3))
    qd_joint = rng.normal(size=(200, 3))
    power_joint = np.sum(tau_joint * qd_joint, axis=1)
    power_motor = np.sum(group.motor_torque(tau_joint) * group.motor_velocity(qd_joint), axis=1)
    assert_allclose(power_motor, power_joint, atol=1e-12)


def test_reflected_inertia_matrix_matches_kinetic_energy(rng: np.random.Generator) -> None:
    """1/2 qd_joint' J qd_joint equals the rotors' kinetic energy 1/2 sum I (rho qd_motor)^2."""
    group = _waist()
    J = group.joint_inertia()
    assert_allclose(J, J.T, atol=1e-15)
    assert_allclose(group.reflected_inertia, [0.1, 0.128, 0.432], rtol=1e-12)
    for qd_joint in rng.normal(size=(20, 3)):
        rotor = group.rotor_velocity(group.motor_velocity(qd_joint))
        energy_rotors = 0.5 * np.sum(np.array(group.rotor_inertia) * rotor**2)
        assert_allclose(0.5 * qd_joint @ J @ qd_joint, energy_rotors, rtol=1e-12)
    # a coupled group's armature is a full matrix, not a diagonal
    assert abs(J[0, 1]) > 1e-3


def test_full_transmission_places_groups_and_singles() -> None:
    """build_transmission puts a group's block where its joints are and 1/rho elsewhere on the diagonal."""
    tr = build_transmission(
        ["hip", "pitch", "roll", "yaw", "knee"], [_waist()], gear_ratio=[50.0, 1, 1, 1, 70.0], rotor_inertia=1e-5
    )
    assert tr.motors == ("hip", "a", "b", "c", "knee")
    assert_allclose(tr.T[1:4, 1:4], T_WAIST)
    assert tr.T[0, 0] == 1.0 and tr.T[4, 4] == 1.0 and tr.T[0, 1:].sum() == 0.0
    assert_allclose(tr.gear_ratio, [50.0, 100.0, 80.0, 120.0, 70.0])
    tau = np.arange(5.0)
    assert_allclose(tr.joint_torque(tr.motor_torque(tau)), tau, atol=1e-12)
    assert tr.group_of("b").name == "waist" and tr.group_of("knee").name == "knee"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"coupling": ((1.0, 1.0, 0.0), (1.0, 1.0, 0.0), (0.0, 0.0, 1.0))}, "singular or ill-conditioned"),
        ({"coupling": ((1.0, 0.0, 0.0), (0.0, 1e-4, 0.0), (0.0, 0.0, 1.0))}, "condition number 1e\\+04"),
        ({"coupling": ((1.0, 0.0), (0.0, 1.0))}, "coupling has shape \\(2, 2\\): expected \\(3, 3\\)"),
        ({"coupling": ((1.0, 0.0, np.nan), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))}, "finite"),
        ({"motors": ("a", "b")}, "3 joints .* but 2 motors"),
        ({"joints": ("pitch", "pitch", "yaw")}, "joints = .*appear more than once"),
        ({"gear_ratio": (100.0, 0.0, 1.0)}, "gear_ratio"),
        ({"gear_ratio": (100.0, 1.0)}, "gear_ratio = .*expected 3 finite numbers"),
        ({"rotor_inertia": (1e-5, -1e-5, 0.0)}, "rotor_inertia"),
        ({"max_condition": 0.5}, "max_condition"),
    ],
)
def test_bad_groups_name_the_parameter(kwargs: dict[str, object], message: str) -> None:
    """A singular, ill-conditioned or mis-sized coupling raises ConfigError naming the group and key."""
    with pytest.raises(ConfigError, match=message) as info:
        _waist(**kwargs)
    assert "waist" in str(info.value)


def test_conversion_of_wrong_shape_is_refused() -> None:
    """An array of the wrong width raises ConfigError naming the quantity."""
    with pytest.raises(ConfigError, match="tau_joint has shape \\(2,\\)"):
        _waist().motor_torque([1.0, 2.0])
    tr = build_transmission(["j1", "j2"])
    with pytest.raises(ConfigError, match="qd_motor"):
        tr.joint_velocity(np.zeros((4, 3)))


def test_joint_in_two_groups_is_refused() -> None:
    """A joint may belong to one coupling group only."""
    other = _waist(name="other", motors=("d", "e", "f"))
    with pytest.raises(ConfigError, match="pitch"):
        build_transmission(["pitch", "roll", "yaw"], [_waist(), other])


def test_icub_torso_config_builds_the_documented_differential() -> None:
    """config/icub_torso.yaml: T as documented, cond(T) = 1.60, motors named after the iCub boards."""
    config = load_robot_config("icub_torso")
    tr = config.build_transmission()
    assert tr.motors == ("m_0B4M0", "m_0B3M0", "m_0B3M1")
    assert_allclose(tr.T, T_WAIST)
    assert_allclose(tr.groups[0].condition_number, 1.60, atol=0.01)
    assert_allclose(tr.T_inv, [[0, 0.4545, 1], [0.9091, 0.9091, 0], [0.9091, -0.9091, 0]], atol=1e-4)
    assert_allclose(tr.reflected_inertia, [0.1, 0.1, 0.1], rtol=1e-12)
    assert len(config.motor_drives()) == 3 and config.motor_drives()[1].motor.k_pwm == 60.0
    leg = load_robot_config("icub_right_leg").build_transmission()
    assert_allclose(leg.T, np.eye(6))
    assert leg.motors == leg.joints
