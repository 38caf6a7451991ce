"""Motor model of Guedelha et al. 2021: PWM <-> torque, saturation, phase-2 regression of K_pwm and tau_0."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from motor_ident.core.actuators.motor import MotorParameters, duty_for_torque, motor_regressor, motor_torque
from motor_ident.errors import ConfigError


def test_duty_inverts_motor_torque(rng: np.random.Generator) -> None:
    """duty_for_torque(motor_torque(d)) = d inside the duty limits."""
    motor = MotorParameters(k_pwm=35.0, tau_0=0.4, back_emf=0.8, duty_limit=1.0)
    duty = rng.uniform(-0.9, 0.9, 100)
    qd = rng.uniform(-2, 2, 100)
    assert_allclose(duty_for_torque(motor_torque(duty, qd, motor), qd, motor), duty, rtol=1e-12)


def test_duty_is_saturated_and_finite() -> None:
    """Huge or non-finite torque requests give duties within +-limit, never NaN."""
    motor = MotorParameters(k_pwm=10.0, duty_limit=0.8)
    duty = duty_for_torque([1e6, -1e6, np.nan, np.inf], [0.0, 0.0, 0.0, 0.0], motor)
    assert_allclose(duty, [0.8, -0.8, 0.0, 0.0])


def test_phase2_regression_recovers_gain_and_offset(rng: np.random.Generator) -> None:
    """Least squares on [1, PWM] (Guedelha et al. 2021, eq. 32) recovers tau_0 and K_pwm*."""
    pwm = rng.uniform(-0.5, 0.5, 2000)
    tau = 0.3 + 42.0 * pwm + 0.05 * rng.standard_normal(pwm.size)
    theta = np.linalg.lstsq(motor_regressor(pwm), tau, rcond=None)[0]
    assert_allclose(theta, [0.3, 42.0], rtol=0.01, atol=0.01)


def test_bad_motor_parameters() -> None:
    """A zero gain or a duty limit above 100 % is refused with the key named."""
    with pytest.raises(ConfigError, match="k_pwm"):
        MotorParameters(k_pwm=0.0)
    with pytest.raises(ConfigError, match="duty_limit"):
        MotorParameters(k_pwm=1.0, duty_limit=1.5)
