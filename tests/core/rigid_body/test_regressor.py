"""Regressors: Y @ theta equals RNEA (plus friction); Kolathaya et al. 2016 Algorithm 1 equals pinocchio."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from motor_ident.core.actuators.friction import FrictionShape, friction_torque
from motor_ident.core.rigid_body.model import inverse_dynamics, load_robot_model, random_states
from motor_ident.core.rigid_body.regressor import Regressor, rigid_body_regressor, unit_parameter_regressor
from motor_ident.io.robot_config import load_robot_config
from tests.conftest import example_robot_urdf


def _robots() -> list:
    panda = example_robot_urdf("panda_description/urdf/panda.urdf")
    ur5 = example_robot_urdf("ur_description/urdf/ur5_robot.urdf")
    return [
        ("valkyrie_arm", load_robot_config("valkyrie_arm").build_model()),
        ("szabo_3dof", load_robot_config("szabo_3dof").build_model()),
        (
            "panda",
            load_robot_model(
                panda,
                joint_names=[f"panda_joint{i}" for i in (1, 2, 3, 4, 5, 6, 7)],
                gear_ratio=80.0,
                rotor_inertia=2e-5,
            ),
        ),
        (
            "ur5 shuffled",
            load_robot_model(
                ur5,
                joint_names=["elbow_joint", "shoulder_pan_joint", "wrist_1_joint", "shoulder_lift_joint"],
                gear_ratio=100.0,
                rotor_inertia=1e-5,
            ),
        ),
    ]


@pytest.mark.parametrize("index", range(4))
def test_regressor_times_parameters_equals_rnea(index: int, rng: np.random.Generator) -> None:
    """The full regressor times theta equals RNEA on a separate workspace plus friction."""
    name, robot = _robots()[index]
    shapes = [FrictionShape(kind="stribeck", stribeck_velocity=0.05)] * robot.n
    regressor = Regressor(robot, shapes)
    friction = [rng.uniform(0.2, 2.0, 4) for _ in range(robot.n)]
    theta = regressor.parameters(friction=friction)
    q, v, a = random_states(robot, rng, 25)
    Y = regressor.rows(q, v, a)
    data = robot.create_data()
    for k in range(q.shape[0]):
        expected = inverse_dynamics(robot, data, q[k], v[k], a[k])
        expected += [friction_torque(v[k, j : j + 1], friction[j], shapes[j])[0] for j in range(robot.n)]
        assert_allclose(Y[k] @ theta, expected, rtol=1e-10, atol=1e-10, err_msg=f"{name}, sample {k}")


@pytest.mark.parametrize("index", range(4))
def test_algorithm1_regressor_equals_pinocchio(index: int, rng: np.random.Generator) -> None:
    """Kolathaya et al. 2016 Algorithm 1 (unit parameter at a time) builds pinocchio's regressor."""
    name, robot = _robots()[index]
    data = robot.create_data()
    q, v, a = random_states(robot, rng, 5)
    for k in range(5):
        reference = unit_parameter_regressor(robot, q[k], v[k], a[k])
        assert_allclose(rigid_body_regressor(robot, data, q[k], v[k], a[k]), reference, atol=1e-9, err_msg=name)


def test_regressor_is_linear_in_parameters(rng: np.random.Generator) -> None:
    """Torque is linear in theta: Y(a theta1 + b theta2) = a Y theta1 + b Y theta2."""
    regressor = load_robot_config("valkyrie_arm").build_regressor()
    q, v, a = random_states(regressor.robot, rng, 10)
    Y = regressor.rows(q, v, a)
    t1, t2 = rng.normal(size=(2, regressor.n_parameters))
    assert_allclose(Y @ (2.5 * t1 - 0.7 * t2), 2.5 * (Y @ t1) - 0.7 * (Y @ t2), rtol=1e-10, atol=1e-9)


def test_rows_reject_bad_shapes() -> None:
    """Rows with the wrong number of joints are refused with the expected shape in the message."""
    regressor = load_robot_config("szabo_3dof").build_regressor()
    with pytest.raises(ValueError, match=r"\(N, 3\)"):
        regressor.rows(np.zeros((2, 4)), np.zeros((2, 4)), np.zeros((2, 4)))
