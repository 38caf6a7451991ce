"""Coupled motors' rotor inertia and friction on each motor's own motion (`CoupledMotorDrives`).

All tests are ROS-free. The robot is the shipped Staubli TX40 example: motor 6 turns with q5 + q6
at its gearbox output (T = [[1, 0], [-1, 1]] on joints 5, 6).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from motor_ident.core.actuators.friction import smooth_sign
from motor_ident.core.control.model_torque import ModelTorque
from motor_ident.core.estimation.identification import identify
from motor_ident.io.robot_config import RobotConfig, load_robot_config
from tests.conftest import REPO

SMOOTHING = 0.01  # rad/s, examples/staubli_tx40/robot.yaml
TRUE_MOTOR_6 = {"motor_6.Ia": 0.0100, "motor_6.fc": 2.00, "motor_6.fv": 0.600}


@pytest.fixture(scope="module")
def tx40() -> RobotConfig:
    """The shipped TX40 robot config."""
    return load_robot_config(REPO / "examples" / "staubli_tx40" / "robot.yaml")


def sinusoids(rng: np.random.Generator, n: int, duration: float, rate: float) -> tuple[np.ndarray, ...]:
    """Exact q, qd, qdd (N, n) of a sum of five sinusoids per joint, 0.1-1.2 Hz, about 1 rad."""
    t = np.arange(0.0, duration, 1.0 / rate)[:, None, None]
    w = 2.0 * np.pi * rng.uniform(0.1, 1.2, size=(1, n, 5))
    amplitude, phase = rng.uniform(0.1, 0.3, size=(1, n, 5)), rng.uniform(0.0, 2.0 * np.pi, size=(1, n, 5))
    angle = w * t + phase
    q = (amplitude * np.sin(angle)).sum(-1)
    qd = (amplitude * w * np.cos(angle)).sum(-1)
    qdd = (-amplitude * w**2 * np.sin(angle)).sum(-1)
    return q, qd, qdd


def wrist_torque_by_hand(qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
    """Motor 6's torque at the joints, written out: it turns at qd5 + qd6 and loads joints 5 and 6 alike."""
    v6, a6 = qd[:, 4] + qd[:, 5], qdd[:, 4] + qdd[:, 5]
    tau_motor_6 = (
        TRUE_MOTOR_6["motor_6.Ia"] * a6
        + TRUE_MOTOR_6["motor_6.fc"] * np.tanh(v6 / SMOOTHING)
        + TRUE_MOTOR_6["motor_6.fv"] * v6
    )
    out = np.zeros_like(qd)
    out[:, 4] = out[:, 5] = tau_motor_6  # T^-T = [[1, 1], [0, 1]]
    return out


def test_motor_columns_match_the_coupling_written_out(tx40: RobotConfig, rng: np.random.Generator) -> None:
    """Motor 6's columns are [qdd5 + qdd6, sign(qd5 + qd6), qd5 + qd6] on joints 5 and 6, zero elsewhere."""
    regressor = tx40.build_regressor()
    assert regressor.motor_drives is not None and regressor.motor_drives.motors == ("motor_5", "motor_6")
    q, qd, qdd = (rng.normal(size=(7, 6)) for _ in range(3))
    Y = regressor.rows(q, qd, qdd)
    v6, a6 = qd[:, 4] + qd[:, 5], qdd[:, 4] + qdd[:, 5]
    expected = {"motor_6.Ia": a6, "motor_6.fc": smooth_sign(v6, SMOOTHING), "motor_6.fv": v6}
    for name, column in expected.items():
        k = regressor.names.index(name)
        np.testing.assert_allclose(Y[:, 4, k], column, err_msg=name)
        np.testing.assert_allclose(Y[:, 5, k], column, err_msg=name)
        np.testing.assert_array_equal(Y[:, :4, k], 0.0, err_msg=name)
    k5 = regressor.names.index("motor_5.fv")  # motor 5 turns with q5 alone
    np.testing.assert_allclose(Y[:, 4, k5], qd[:, 4])
    np.testing.assert_array_equal(Y[:, 5, k5], 0.0)


def test_feedforward_includes_the_motor_terms(tx40: RobotConfig, rng: np.random.Generator) -> None:
    """The feedforward's RNEA torque equals Y theta with the coupled motors' inertia and friction set."""
    regressor = tx40.build_regressor()
    theta = tx40.nominal_parameters(regressor)
    for name, value in TRUE_MOTOR_6.items():
        theta[regressor.names.index(name)] = value
    model = ModelTorque(regressor, theta)
    out = np.zeros(6)
    for _ in range(5):
        q, qd, qdd = (rng.normal(size=6) for _ in range(3))
        expected = regressor.predict(theta, q, qd, qdd)[0]
        np.testing.assert_allclose(model.torque(q, qd, qdd, out), expected, atol=1e-10)
        assert (
            abs(regressor.motor_torque(qd, qdd, theta)[0, 4] - wrist_torque_by_hand(qd[None], qdd[None])[0, 4]) < 1e-12
        )


def test_recovery_of_motor_6_friction_and_inertia(tx40: RobotConfig, rng: np.random.Generator) -> None:
    """Recovery test: a simulated coupled wrist with motor-side friction gives motor 6's Ia, fc, fv back.

    Torques by RNEA on the URDF (pinocchio, no armature) plus motor 6's torque written out by hand
    (`wrist_torque_by_hand`), 0.05 N m noise; the estimate is within 4 reported standard deviations
    and 5 % of the truth (measured: Ia +2.4 %, fc -0.05 %, fv +0.1 %).
    """
    regressor = tx40.build_regressor()
    robot = regressor.robot
    q, qd, qdd = sinusoids(rng, 6, duration=20.0, rate=100.0)
    model = robot.model.copy()
    model.armature[:] = 0.0
    data = model.createData()
    tau = np.array([pin.rnea(model, data, q[k], qd[k], qdd[k]) for k in range(q.shape[0])])
    tau += wrist_torque_by_hand(qd, qdd) + rng.normal(scale=0.05, size=tau.shape)
    result = identify(regressor, q, qd, qdd, tau, method="ols")
    for name, truth in TRUE_MOTOR_6.items():
        rows = [k for k, j in enumerate(result.base.independent) if result.names[j] == name]
        assert rows and not np.any(result.base.B[rows[0]]), f"{name} is not identifiable alone"
        value, std = result.fit.theta[rows[0]], np.sqrt(result.fit.covariance[rows[0], rows[0]])
        assert abs(value - truth) < 4.0 * std, (name, value, std, truth)
        assert abs(value - truth) < 0.05 * truth, (name, value, truth)
