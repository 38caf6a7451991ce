"""Two-phase friction / PWM-gain identification on closed-form data (Guedelha et al. 2021, eq. 21, 29, 32)."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from motor_ident.core.actuators.actuator_ident import (
    chain_torque,
    coupling_column,
    friction_target,
    identify_friction,
    identify_motor_gain,
    stribeck_shape,
)
from motor_ident.core.actuators.friction import friction_torque
from motor_ident.errors import EstimationError

SHAPE = stribeck_shape(0.0174533)
THETA = np.array([0.85, 29.65, 1.27, 1.95])  # knee: fc, fv, sigma_s+, sigma_s- (Table 1)
D = 0.1  # rho^2 I [kg m^2]


def _phase1(rng: np.random.Generator, tau_0: float = 0.1, n: int = 2000) -> tuple[np.ndarray, ...]:
    """PWM = 0 samples: the chain delivers tau = -(friction + D qdd) + tau_0."""
    qd = rng.uniform(-0.2, 0.2, n)
    qdd = rng.normal(scale=0.5, size=n)
    tau = -(friction_torque(qd, THETA, SHAPE) + D * qdd) + tau_0
    return qd, tau, qdd


def test_friction_target_is_the_chain_equation_at_zero_pwm(rng: np.random.Generator) -> None:
    """-(tau + D qdd) equals friction - tau_0 on exact data."""
    qd, tau, qdd = _phase1(rng, tau_0=0.1)
    assert_allclose(friction_target(tau, qdd, D), friction_torque(qd, THETA, SHAPE) - 0.1, atol=1e-12)


def test_stribeck_recovers_exact_parameters_and_tau_0(rng: np.random.Generator) -> None:
    """On exact data the Stribeck fit returns Table 1's values and -tau_0 as the offset."""
    qd, tau, qdd = _phase1(rng, tau_0=0.1)
    fit = identify_friction(qd, tau, qdd, reflected_inertia=D, shape=SHAPE)
    assert_allclose(fit.theta, [*THETA, -0.1], atol=1e-9)
    assert fit.rmse < 1e-9 and fit.n_samples == qd.size
    assert np.isfinite(fit.condition_number) and fit.condition_number > 1.0
    assert_allclose(fit.torque(qd), friction_torque(qd, THETA, SHAPE), atol=1e-9)


def test_zero_slope_constraint_holds(rng: np.random.Generator) -> None:
    """With zero_slope the fitted curve is flat at 0+: fc / v_s + fv - static_pos / v_s = 0."""
    qd, tau, qdd = _phase1(rng)
    fit = identify_friction(
        qd, tau + rng.normal(scale=0.05, size=qd.size), qdd, reflected_inertia=D, shape=SHAPE, zero_slope=True
    )
    v_s = SHAPE.stribeck_velocity
    slope = fit.value("fc") / v_s + fit.value("fv") - fit.value("static_pos") / v_s
    assert abs(slope) < 1e-6 * fit.value("static_pos") / v_s
    eps = 1e-7
    assert abs(fit.torque(np.array([2 * eps]))[0] - fit.torque(np.array([eps]))[0]) < 1e-8


def test_friction_needs_motion_both_ways(rng: np.random.Generator) -> None:
    """Motion in one direction only cannot separate sigma_s+ from sigma_s-: EstimationError."""
    qd, tau, qdd = _phase1(rng)
    with pytest.raises(EstimationError, match="both directions"):
        identify_friction(np.abs(qd), tau, qdd, reflected_inertia=D, shape=SHAPE)


def test_motor_gain_recovered_with_known_friction(rng: np.random.Generator) -> None:
    """Phase 2: tau + D qdd + friction = tau_0 + K_pwm PWM gives K_pwm* and tau_0 exactly."""
    qd, tau1, qdd = _phase1(rng, tau_0=0.12)
    friction = identify_friction(qd, tau1, qdd, reflected_inertia=D, shape=SHAPE)
    pwm = rng.uniform(-0.3, 0.3, qd.size)
    tau2 = 40.0 * pwm + 0.12 - friction_torque(qd, THETA, SHAPE) - D * qdd
    fit = identify_motor_gain(pwm, qd, tau2, qdd, reflected_inertia=D, friction=friction)
    assert fit.k_pwm == pytest.approx(40.0, rel=1e-9) and fit.tau_0 == pytest.approx(0.12, abs=1e-9)
    assert fit.parameters(duty_limit=0.8).duty_limit == 0.8
    with pytest.raises(EstimationError, match="varying PWM"):
        identify_motor_gain(np.zeros_like(pwm), qd, tau2, qdd, reflected_inertia=D, friction=friction)


def test_coupling_column_measured_from_motion(rng: np.random.Generator) -> None:
    """With one motor moving, qd_joint = T[:, c] qd_motor_c gives the column, and T_c' tau_joint the chain torque."""
    column = np.array([0.55, -0.55, 0.25])
    qd_motor = rng.normal(size=500)
    qd_joint = np.outer(qd_motor, column) + rng.normal(scale=1e-3, size=(500, 3))
    assert_allclose(coupling_column(qd_joint, qd_motor), column, atol=1e-3)
    tau_joint = rng.normal(size=(500, 3))
    assert_allclose(chain_torque(tau_joint, column), tau_joint @ column)
    with pytest.raises(EstimationError, match="did not move"):
        coupling_column(qd_joint, np.zeros(500))
