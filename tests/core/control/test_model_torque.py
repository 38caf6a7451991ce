"""Computed torque by RNEA on full parameters: equal to the regressor path, blended on the parameters."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from motor_ident.core.actuators.friction import FrictionKind, FrictionShape
from motor_ident.core.control.computed_torque import ComputedTorque, FeedforwardConfig, ReferenceBuffer
from motor_ident.core.control.model_torque import ModelTorque, RneaComputedTorque, trajectory_points
from motor_ident.core.estimation.identification import structural_base_parameters
from motor_ident.core.rigid_body.model import load_robot_model, random_states
from motor_ident.core.rigid_body.regressor import Regressor
from motor_ident.errors import ModelError


def _config(n: int, kp: float = 100.0, kd: float = 20.0, rate: float = np.inf) -> FeedforwardConfig:
    return FeedforwardConfig(
        kp=np.full(n, kp), kd=np.full(n, kd), effort_limit=np.full(n, 1e6), rate_limit=np.full(n, rate)
    )


def _panda() -> tuple[Regressor, np.ndarray]:
    """A 7-DoF arm with mixed friction shapes (Stribeck with an offset, arctan, Coulomb-viscous)
    and random friction coefficients."""
    from motor_ident.io.urdf_paths import example_robot_urdf

    robot = load_robot_model(
        example_robot_urdf("panda_description/urdf/panda.urdf"),
        joint_names=[f"panda_joint{i}" for i in (3, 1, 2, 7, 5, 4, 6)],  # not pinocchio's order
        gear_ratio=100.0,
        rotor_inertia=1e-5,
    )
    shapes = [
        FrictionShape(kind=FrictionKind.STRIBECK, stribeck_velocity=0.05, offset=True),
        FrictionShape(kind=FrictionKind.ARCTAN),
        FrictionShape(kind=FrictionKind.COULOMB_VISCOUS, smoothing_velocity=0.02),
    ]
    regressor = Regressor(robot, [shapes[j % 3] for j in range(robot.n)])
    rng = np.random.default_rng(4)
    friction = [rng.uniform(0.1, 2.0, shape.n_parameters) for shape in regressor.friction]
    return regressor, regressor.parameters(friction=friction)


@pytest.fixture(scope="module", params=["valkyrie_arm", "panda"])
def robot(request) -> tuple[Regressor, np.ndarray]:
    """A robot's regressor and its full parameters (physically valid)."""
    if request.param == "panda":
        return _panda()
    from motor_ident.io.robot_config import load_robot_config

    config = load_robot_config("valkyrie_arm")
    regressor = config.build_regressor()
    return regressor, config.nominal_parameters(regressor)


def test_rnea_torque_equals_regressor_torque(robot, rng) -> None:
    """RNEA + friction on full parameters equals the regressor path ``Y_base theta_base`` (command
    with PD terms, model torque and gravity) on random states and random valid parameters."""
    regressor, theta = robot
    n = regressor.robot.n
    base = structural_base_parameters(regressor)
    heavier = theta * rng.uniform(0.8, 1.5, theta.size)  # scaled bodies and friction stay valid
    law = RneaComputedTorque(regressor, _config(n), heavier, blend_rate=np.inf)
    reference = ComputedTorque(regressor, base, _config(n))
    theta_base = base.to_base(heavier)
    q, qd, qdd = random_states(regressor.robot, rng, 20)
    q_ref = q + 0.05 * rng.standard_normal(q.shape)
    qd_ref = qd + 0.1 * rng.standard_normal(q.shape)
    for k in range(q.shape[0]):
        expected = reference.command(q[k], qd[k], q_ref[k], qd_ref[k], qdd[k], theta_base)
        got = law.command(q[k], qd[k], q_ref[k], qd_ref[k], qdd[k], 0.001)
        assert_allclose(got, expected, rtol=1e-9, atol=1e-9 * np.abs(expected).max(), err_msg=f"state {k}")
        assert_allclose(law.gravity(q[k]), reference.gravity(q[k], theta_base), rtol=1e-9, atol=1e-9)
        model = regressor.predict(heavier, q[k : k + 1], qd[k : k + 1], qdd[k : k + 1])[0]
        assert_allclose(law.torque(q[k], qd[k], qdd[k], 0.0), model, rtol=1e-9, atol=1e-9 * np.abs(model).max())


def test_blend_bounds_the_switch_and_equals_the_blended_parameters(robot, rng) -> None:
    """During a switch the torque is the one of the blended parameters ``theta(s)`` (linearity),
    and the switch moves no joint's torque by more than ``blend_rate * dt`` per command."""
    regressor, theta = robot
    n = regressor.robot.n
    law = RneaComputedTorque(regressor, _config(n, 0.0, 0.0), theta, blend_rate=50.0)
    q = random_states(regressor.robot, rng, 1)[0][0]
    zero = np.zeros(n)
    before = law.torque(q, zero, zero, 0.001).copy()
    law.set_target(1.5 * theta)
    jump = np.abs(regressor.predict(1.5 * theta, q[None], zero[None], zero[None])[0] - before).max()
    assert jump > 1.0  # N m: a step a direct switch would make
    last, steps = before, []
    for _ in range(int(jump / (50.0 * 0.001)) + 3):
        tau = law.torque(q, zero, zero, 0.001).copy()
        steps.append(np.abs(tau - last).max())
        assert_allclose(tau, regressor.predict(law.theta, q[None], zero[None], zero[None])[0], rtol=1e-9, atol=1e-9)
        last = tau
    assert max(steps) <= 50.0 * 0.001 * (1 + 1e-9)
    assert law.blend.progress == 1.0
    assert_allclose(law.theta, 1.5 * theta)


def test_a_model_pinocchio_cannot_hold_is_refused_and_the_old_one_kept(robot) -> None:
    """A body of zero or negative mass, or NaN, is refused with the body named; nothing changes."""
    regressor, theta = robot
    law = RneaComputedTorque(regressor, _config(regressor.robot.n), theta, blend_rate=50.0)
    bad = theta.copy()
    bad[10] = -1.0  # second body's mass
    with pytest.raises(ModelError, match=regressor.robot.body_names[1]):
        law.set_target(bad)
    with pytest.raises(ModelError, match="finite"):
        ModelTorque(regressor, np.full(theta.size, np.nan))
    assert law.blend.progress == 1.0
    assert_allclose(law.theta, theta)


def test_trajectory_points_carry_the_model_torque_at_the_reference(robot, rng) -> None:
    """Points cover only the reference's span; each effort is the model's torque at the reference
    state (no feedback terms), as the 1 kHz law gives on the reference itself."""
    regressor, theta = robot
    n = regressor.robot.n
    law = RneaComputedTorque(regressor, _config(n), theta, blend_rate=np.inf)
    q, qd, qdd = random_states(regressor.robot, rng, 2)
    reference = ReferenceBuffer(n)
    reference.set(np.array([0.0, 1.0]), q, qd, qdd)
    times = np.array([0.2, 0.5, 0.9, 1.2])
    states, efforts = trajectory_points(law, reference, times, np.zeros(n), 0.02)
    assert states.shape == (3, 3, n) and efforts.shape == (3, n)
    for k, t in enumerate(times[:3]):
        assert_allclose(states[k], np.stack(reference.sample(t)))
        on_reference = law.command(states[k, 0], states[k, 1], states[k, 0], states[k, 1], states[k, 2], 0.001)
        assert_allclose(efforts[k], on_reference, rtol=1e-12)


def test_identifier_full_active_model_maps_to_its_base_model(arm) -> None:
    """The identifier's full active parameters project onto its base active parameters, nominal
    (gate closed) and identified (gate open, the gate's physically valid set)."""
    from motor_ident.core.estimation.online import IdentifierConfig, OnlineIdentifier
    from motor_ident.sim.synthetic import excitation_record

    regressor, base = arm["regressor"], arm["base"]
    ident = OnlineIdentifier(
        regressor,
        base,
        1.3 * arm["theta_true"],
        IdentifierConfig(window_duration=2.5, sample_rate=200.0, refit_period=0.5),
    )
    assert_allclose(ident.active_theta_full, 1.3 * arm["theta_true"])
    record, _ = excitation_record(regressor, arm["theta_true"], duration=4.0, rate_hz=1000.0, noise_std=0.1, seed=5)
    for k in range(record.t.size):
        ident.add_sample(record.t[k], record.q[k], record.qd[k], record.tau[k])
    assert ident.gate_open, ident.gate.reason
    assert ident.gate.consistency is not None
    assert_allclose(ident.active_theta_full, ident.gate.consistency.theta)
    assert_allclose(base.to_base(ident.active_theta_full), ident.active_theta, rtol=1e-6, atol=1e-9)
    ModelTorque(regressor, ident.active_theta_full)  # every body holds a positive mass
