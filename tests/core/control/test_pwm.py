"""PWM feedforward: closed form through T', saturation, friction compensation, never NaN; the
sample-at-a-time form gives the batch function's duties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from motor_ident.core.actuators.actuator_ident import stribeck_shape
from motor_ident.core.actuators.friction import friction_torque
from motor_ident.core.actuators.motor import MotorParameters
from motor_ident.core.actuators.transmission import TransmissionGroup
from motor_ident.core.control.pwm import ChainModel, PwmFeedforward, PwmFeedforwardConfig, pwm_feedforward
from motor_ident.errors import ConfigError

SHAPE = stribeck_shape(0.0174533)
GROUP = TransmissionGroup(
    name="waist",
    joints=("pitch", "roll", "yaw"),
    motors=("a", "b", "c"),
    coupling=((0.0, 0.55, 0.55), (0.0, 0.55, -0.55), (1.0, -0.25, 0.25)),
)
CHAINS = [
    ChainModel(
        friction=SHAPE,
        friction_values=np.array([0.9, 34.0, 1.4, 2.1]),
        motor=MotorParameters(k_pwm=k, tau_0=0.1),
        reflected_inertia=0.1,
    )
    for k in (50.0, 60.0, 60.0)
]


def test_duty_is_motor_torque_minus_offset_over_gain(rng: np.random.Generator) -> None:
    """Without compensation duty = (T' tau_joint - tau_0) / K_pwm*; with it the friction at qd is added."""
    tau = rng.normal(size=(20, 3))
    qd = rng.uniform(0.05, 0.2, size=(20, 3))
    off = pwm_feedforward(tau, qd, GROUP, CHAINS, PwmFeedforwardConfig(friction_compensation=False))
    k = np.array([50.0, 60.0, 60.0])
    assert_allclose(off, (tau @ GROUP.T - 0.1) / k, atol=1e-12)
    on = pwm_feedforward(tau, qd, GROUP, CHAINS)
    # far from rest the sign smoothing is negligible
    friction = np.stack([friction_torque(qd[:, c], CHAINS[c].friction_values, SHAPE) for c in range(3)], axis=1)
    assert_allclose(on, off + friction / k, atol=1e-9)
    assert_allclose(pwm_feedforward(tau[0], qd[0], GROUP, CHAINS), on[0])


@pytest.mark.parametrize("limit", [1.0, 0.4])
def test_saturates_to_the_configured_limit(limit: float) -> None:
    """A torque beyond the motors' reach gives exactly +-limit."""
    duty = pwm_feedforward([500.0, -500.0, 300.0], np.zeros(3), GROUP, CHAINS, PwmFeedforwardConfig(duty_limit=limit))
    assert np.max(np.abs(duty)) == pytest.approx(limit)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=6, max_size=6),
    st.floats(min_value=0.05, max_value=1.0),
)
def test_never_nan_and_always_within_limit(values: list[float], limit: float) -> None:
    """Any input, NaN and inf included, gives finite duties within +-limit."""
    tau, qd = np.array(values[:3]), np.array(values[3:])
    duty = pwm_feedforward(tau, qd, GROUP, CHAINS, PwmFeedforwardConfig(duty_limit=limit), qdd_motor=qd)
    assert np.all(np.isfinite(duty)) and np.all(np.abs(duty) <= limit + 1e-15)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"duty_limit": 1.5}, "duty_limit = 1.5"),
        ({"duty_limit": 0.0}, "duty_limit"),
        ({"smoothing_velocity": 0.0}, "smoothing_velocity"),
    ],
)
def test_bad_config_names_the_key(kwargs: dict[str, float], message: str) -> None:
    """Bad settings raise ConfigError naming the key."""
    with pytest.raises(ConfigError, match=message):
        PwmFeedforwardConfig(**kwargs)


def test_wrong_number_of_chains_or_shapes_is_refused() -> None:
    """Two models for three motors, or mismatched shapes, raise ConfigError."""
    with pytest.raises(ConfigError, match="chains"):
        pwm_feedforward(np.zeros(3), np.zeros(3), GROUP, CHAINS[:2])
    with pytest.raises(ConfigError, match="qd_motor"):
        pwm_feedforward(np.zeros(3), np.zeros(2), GROUP, CHAINS)
    with pytest.raises(ConfigError, match="friction_values"):
        ChainModel(friction=SHAPE, friction_values=np.array([1.0, np.nan, 1.0, 1.0]), motor=MotorParameters(k_pwm=1.0))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=9, max_size=9),
    st.sampled_from([0.3, 1.0]),
    st.booleans(),
    st.booleans(),
)
def test_sample_form_gives_the_batch_duties(values: list[float], limit: float, compensate: bool, accel: bool) -> None:
    """`PwmFeedforward.duty` equals `pwm_feedforward` on one sample, NaN, inf and saturation
    included, with and without friction compensation and accelerations, after a config change."""
    tau, qd, qdd = np.array(values[:3]), np.array(values[3:6]), np.array(values[6:]) if accel else None
    config = PwmFeedforwardConfig(duty_limit=limit, friction_compensation=compensate, smoothing_velocity=0.01)
    sample = PwmFeedforward(GROUP, CHAINS)
    sample.config = config
    expected = pwm_feedforward(tau, qd, GROUP, CHAINS, config, qdd_motor=qdd)
    assert_allclose(sample.duty(tau, qd, qdd), expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(sample.duty_limits, np.minimum(limit, [c.motor.duty_limit for c in CHAINS]))
