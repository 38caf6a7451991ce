"""Faults and what motor_ident does about them (docs/faults.md, row by row where ROS-free).

Node-level rows (NaN / missing joints in messages, stale state, bad parameters, parameter files)
are in tests/ros/; bag corruption in tests/io/.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from motor_ident.core.actuators.motor import MotorParameters, duty_for_torque
from motor_ident.core.control.computed_torque import FeedforwardConfig, saturate
from motor_ident.core.estimation.identification import structural_base_parameters
from motor_ident.core.estimation.online import IdentifierConfig, OnlineIdentifier
from motor_ident.io.robot_config import load_robot_config

finite = st.floats(-1e9, 1e9, allow_nan=False)
anything = st.one_of(finite, st.just(np.nan), st.just(np.inf), st.just(-np.inf))


@settings(max_examples=3000, deadline=None)
@given(
    tau=st.lists(anything, min_size=3, max_size=3),
    previous=st.lists(st.floats(-50.0, 50.0), min_size=3, max_size=3),
    dt=st.floats(0.0, 0.1),
)
def test_commands_are_finite_saturated_and_rate_limited(tau: list[float], previous: list[float], dt: float) -> None:
    """Whatever the model asks for, the command is finite, within the effort and rate limits."""
    config = FeedforwardConfig(
        kp=np.zeros(3),
        kd=np.zeros(3),
        effort_limit=np.array([50.0, 20.0, 5.0]),
        rate_limit=np.array([1e3, 1e4, np.inf]),
    )
    prev = np.clip(previous, -config.effort_limit, config.effort_limit)
    out = saturate(tau, prev, config, dt)
    assert np.all(np.isfinite(out))
    assert np.all(np.abs(out) <= config.effort_limit)
    bound = np.array([r * dt if np.isfinite(r) else np.inf for r in config.rate_limit])
    assert np.all(np.abs(out - prev) <= bound + 1e-9)


@settings(max_examples=1500, deadline=None)
@given(tau=anything, qd=finite, k=st.floats(0.1, 100.0), limit=st.floats(0.05, 1.0))
def test_pwm_duty_stays_within_limits(tau: float, qd: float, k: float, limit: float) -> None:
    """Duty cycles are finite and within +-duty_limit (never more than 100 %)."""
    duty = duty_for_torque([tau], [qd], MotorParameters(k_pwm=k, back_emf=0.3, duty_limit=limit))
    assert np.all(np.isfinite(duty)) and np.all(np.abs(duty) <= limit)


@pytest.fixture(scope="module")
def valkyrie_identifier():
    config = load_robot_config("valkyrie_arm")
    regressor = config.build_regressor()
    return config, regressor, structural_base_parameters(regressor)


def test_robot_at_rest_keeps_the_nominal_model(valkyrie_identifier) -> None:
    """No excitation: the gate stays closed (conditioning), no singular solve, no huge parameters."""
    config, regressor, base = valkyrie_identifier
    theta = config.nominal_parameters(regressor)
    ident = OnlineIdentifier(
        regressor, base, theta, IdentifierConfig(window_duration=0.1, sample_rate=1000.0, refit_period=0.005)
    )
    q = np.array([0.2, -0.3, 0.4, 1.0])
    rng = np.random.default_rng(0)
    for k in range(400):
        tau = regressor.predict(theta, q[None], np.zeros((1, 4)), np.zeros((1, 4)))[0] + 0.05 * rng.standard_normal(4)
        ident.add_sample(0.001 * k, q, 0.001 * rng.standard_normal(4), tau)
    assert ident.window.full and ident.fit is not None
    assert not ident.gate_open and "condition number" in ident.gate.reason
    assert np.all(np.isfinite(ident.fit.theta))
    assert np.max(np.abs(ident.fit.theta - ident.theta_nominal)) < 10.0 * np.max(np.abs(ident.theta_nominal))
    np.testing.assert_array_equal(ident.active_theta, ident.theta_nominal)


def test_one_joint_still_keeps_the_nominal_model(valkyrie_identifier) -> None:
    """One joint never moves: its friction and inertia columns are unexcited, so the gate stays closed."""
    from motor_ident.core.excitation.fourier import random_fourier_trajectory

    config, regressor, base = valkyrie_identifier
    theta = config.nominal_parameters(regressor)
    ident = OnlineIdentifier(
        regressor, base, theta, IdentifierConfig(window_duration=3.0, sample_rate=100.0, refit_period=0.1)
    )
    traj = random_fourier_trajectory(np.random.default_rng(1), n=4, base_frequency=0.3, velocity_amplitude=1.0)
    t = np.arange(600) * 0.01
    q, qd, qdd = traj.evaluate(t)
    q[:, 2], qd[:, 2], qdd[:, 2] = 0.3, 0.0, 0.0
    tau = regressor.predict(theta, q, qd, qdd)
    for k in range(t.size):
        ident.add_sample(t[k], q[k], qd[k], tau[k])
    assert ident.window.full and not ident.gate_open
    assert "condition number" in ident.gate.reason
    assert np.all(np.isfinite(ident.fit.theta))


@pytest.mark.slow
def test_payload_change_falls_back_then_reidentifies() -> None:
    """A 4 kg payload mid-run: R^2 drops, the gate closes within 1.5 s, reopens within window + 2 s."""
    from motor_ident.scenario.closed_loop import build_closed_loop, run_closed_loop

    loop = build_closed_loop("valkyrie_arm")
    window_s = loop.identifier.config.window_duration
    timeline: list[tuple[float, bool, float]] = []

    def watch(closed_loop, error) -> None:  # noqa: ANN001
        timeline.append((closed_loop.sim.t, closed_loop.identifier.gate_open, float(np.abs(error).max())))

    run_closed_loop(loop, 8.0, every=0.05, callback=watch)
    assert loop.identifier.gate_open, loop.identifier.gate.reason
    change = loop.sim.t
    loop.sim.add_payload(4.0, [0.0, 0.0, -0.25])
    run_closed_loop(loop, window_s + 4.0, every=0.05, callback=watch)
    after = [(t, is_open, e) for t, is_open, e in timeline if t > change]
    closed_at = next(t for t, is_open, _ in after if not is_open)
    assert closed_at - change < 1.5
    reopened_at = next(t for t, is_open, _ in after if is_open and t > closed_at)
    assert reopened_at - change < window_s + 2.0
    settled = [e for t, is_open, e in after if t > reopened_at + 1.0]
    assert settled and max(settled) < 0.05
