"""Joint torques from a 6-axis F/T sensor: equal to RNEA with the true wrench, whatever touches the foot."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from numpy.testing import assert_allclose

from motor_ident.core.rigid_body.ft_sensor import ForceTorqueSensor, joint_torques_from_wrench, sensor_wrench
from motor_ident.core.rigid_body.model import inverse_dynamics, random_states
from motor_ident.errors import ConfigError
from motor_ident.io.robot_config import load_robot_config

# iCub's leg F/T sensor sits in the thigh: on the link of r_hip_yaw, 10 cm down, turned.
SENSOR = ForceTorqueSensor("r_hip_yaw", pin.SE3(pin.utils.rpyToMatrix(0.1, -0.2, 0.3), np.array([0.0, 0.0, -0.1])))


@pytest.fixture(scope="module")
def leg():
    """The right leg without rotor inertia (link-side torques)."""
    robot = load_robot_config("icub_right_leg").build_model()
    return robot.with_rotor_inertia(np.zeros(robot.n))


def test_true_wrench_gives_rnea_torques_of_the_hip(leg, rng: np.random.Generator) -> None:
    """With the wrench the sensor reads, the three hip torques equal full RNEA's; distal joints are NaN."""
    data, other = leg.create_data(), leg.create_data()
    q, qd, qdd = random_states(leg, rng, 10)
    for k in range(10):
        wrench = sensor_wrench(leg, data, q[k], qd[k], qdd[k], SENSOR)
        tau = joint_torques_from_wrench(leg, other, q[k], qd[k], qdd[k], wrench, SENSOR)
        truth = inverse_dynamics(leg, data, q[k], qd[k], qdd[k])
        assert_allclose(tau[:3], truth[:3], atol=1e-9, err_msg=f"state {k}")
        assert np.all(np.isnan(tau[3:]))


def test_foot_contact_is_seen_through_the_sensor(leg, rng: np.random.Generator) -> None:
    """A ground reaction on the foot changes the hip torques; the sensor-based estimate follows it."""
    data = leg.create_data()
    q, qd, qdd = (x[0] for x in random_states(leg, rng, 1))
    contact = {"r_ankle_roll": np.array([5.0, -3.0, 200.0, 1.0, 2.0, -0.5])}
    model = leg.model
    fext = pin.StdVec_Force()
    for j in range(model.njoints):
        fext.append(pin.Force(contact["r_ankle_roll"]) if model.names[j] == "r_ankle_roll" else pin.Force.Zero())
    truth = leg.from_pin_v(pin.rnea(model, data, leg.pin_q(q), leg.pin_v(qd), leg.pin_v(qdd), fext))
    wrench = sensor_wrench(leg, data, q, qd, qdd, SENSOR, external=contact)
    tau = joint_torques_from_wrench(leg, leg.create_data(), q, qd, qdd, wrench, SENSOR)
    assert_allclose(tau[:3], truth[:3], atol=1e-9)
    free = inverse_dynamics(leg, data, q, qd, qdd)
    assert np.max(np.abs(truth[:3] - free[:3])) > 1.0  # the contact matters


def test_bad_sensor_or_wrench_is_refused(leg) -> None:
    """An unknown joint or a NaN wrench raises ConfigError naming it."""
    zeros = np.zeros(leg.n)
    with pytest.raises(ConfigError, match="r_wrist"):
        joint_torques_from_wrench(
            leg, leg.create_data(), zeros, zeros, zeros, np.zeros(6), ForceTorqueSensor("r_wrist")
        )
    with pytest.raises(ConfigError, match="wrench"):
        joint_torques_from_wrench(leg, leg.create_data(), zeros, zeros, zeros, [0, 0, np.nan, 0, 0, 0], SENSOR)


def test_simulated_sensor_noise_reaches_the_torques_through_the_lever_arm(leg, rng: np.random.Generator) -> None:
    """Simulated readings: unbiased hip torques whose noise equals the wrench noise mapped through the
    sensor's adjoint (closed form from the sensor placement)."""
    from motor_ident.sim.ft_sensor import simulate_ft_estimates

    data = leg.create_data()
    q, qd, qdd = random_states(leg, rng, 1)
    N = 2000
    states = [np.repeat(x, N, axis=0) for x in (q, qd, qdd)]
    est = simulate_ft_estimates(leg, *states, SENSOR, force_noise_std=0.5, moment_noise_std=0.02, rng=rng)
    truth = inverse_dynamics(leg, data, q[0], qd[0], qdd[0])
    error = est.tau_joint[:, :3] - truth[:3]
    assert np.all(np.abs(error.mean(axis=0)) < 4 * error.std(axis=0) / np.sqrt(N))
    # the estimate is linear in the wrench: tau = A w + b, so its covariance is A diag(noise^2) A'
    A = np.stack(
        [
            joint_torques_from_wrench(leg, data, q[0], qd[0], qdd[0], e, SENSOR)[:3]
            - joint_torques_from_wrench(leg, data, q[0], qd[0], qdd[0], np.zeros(6), SENSOR)[:3]
            for e in np.eye(6)
        ],
        axis=1,
    )
    expected = np.sqrt(np.diag(A @ np.diag([0.25] * 3 + [0.0004] * 3) @ A.T))
    assert_allclose(error.std(axis=0), expected, rtol=0.1)
