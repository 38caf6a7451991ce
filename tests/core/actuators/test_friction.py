"""Friction models: limits of Guedelha et al.'s Stribeck model, fits, symmetry, Liu et al. 2023 threshold search."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from motor_ident.core.actuators.friction import (
    FrictionShape,
    fit_direction_threshold,
    fit_friction,
    friction_regressor,
    friction_torque,
    joints_friction_torque,
    smooth_sign,
    zero_slope_constraint,
)
from motor_ident.errors import ConfigError

STRIBECK = FrictionShape(kind="stribeck", stribeck_velocity=0.05)


def test_stribeck_limits_match_guedelha_properties() -> None:
    """tau_f(0+) = static_pos, tau_f(0-) = -static_neg, far field = fc sign(v) + fv v (eq. 23-25)."""
    theta = np.array([0.85, 0.31, 1.27, 1.95])  # iCub right knee, Guedelha et al. 2021, Fig. 10
    tiny, far = 1e-12, 50.0
    assert_allclose(friction_torque([tiny], theta, STRIBECK), [1.27], atol=1e-9)
    assert_allclose(friction_torque([-tiny], theta, STRIBECK), [-1.95], atol=1e-9)
    assert_allclose(friction_torque([far, -far], theta, STRIBECK), [0.85 + 0.31 * far, -0.85 - 0.31 * far], rtol=1e-12)


def test_zero_slope_constraint_gives_flat_start() -> None:
    """A constrained fit has zero slope at 0+ and still fits data generated with zero slope."""
    rng = np.random.default_rng(3)
    vs = STRIBECK.stribeck_velocity
    static_pos = 1.3
    fv = 0.2
    fc = static_pos - vs * fv  # makes fc / vs + fv - static_pos / vs = 0
    truth = np.array([fc, fv, static_pos, 1.8])
    assert abs(zero_slope_constraint(STRIBECK) @ truth) < 1e-12
    v = rng.uniform(-1.0, 1.0, 4000)
    tau = friction_torque(v, truth, STRIBECK) + 0.02 * rng.standard_normal(v.size)
    fitted = fit_friction(v, tau, STRIBECK, zero_slope=True)
    assert abs(zero_slope_constraint(STRIBECK) @ fitted) < 1e-9
    h = 1e-7
    slope = (friction_torque([2 * h], fitted, STRIBECK) - friction_torque([h], fitted, STRIBECK)) / h
    assert abs(slope[0]) < 1e-3
    assert_allclose(fitted, truth, atol=0.03)


@pytest.mark.parametrize(
    "shape",
    [
        FrictionShape(kind="coulomb_viscous", smoothing_velocity=0.01),
        FrictionShape(kind="stribeck", stribeck_velocity=0.1),
        FrictionShape(kind="arctan", stiction_gain=50.0, stribeck_gain=5.0),
        FrictionShape(kind="directional", direction_threshold=0.05),
        FrictionShape(kind="coulomb_viscous", offset=True),
    ],
)
def test_fit_recovers_parameters(shape: FrictionShape) -> None:
    """Least squares on noisy samples recovers each model's parameters."""
    rng = np.random.default_rng(7)
    truth = rng.uniform(0.2, 2.0, shape.n_parameters)
    v = rng.uniform(-2.0, 2.0, 5000)
    tau = friction_torque(v, truth, shape) + 0.01 * rng.standard_normal(v.size)
    assert_allclose(fit_friction(v, tau, shape), truth, rtol=0.05, atol=0.02)


@settings(max_examples=2500, deadline=None)
@given(
    v=st.lists(st.floats(-20.0, 20.0, allow_nan=False), min_size=1, max_size=20),
    fc=st.floats(0.0, 5.0),
    fv=st.floats(0.0, 5.0),
    static=st.floats(0.0, 5.0),
    smoothing=st.floats(0.0, 0.5),
)
def test_symmetric_friction_is_odd_in_velocity(
    v: list[float], fc: float, fv: float, static: float, smoothing: float
) -> None:
    """With equal static friction both ways, every model is odd in v and opposes no motion at rest."""
    v_arr = np.array([x for x in v if x != 0.0] or [1.0])
    for shape, theta in [
        (FrictionShape(kind="coulomb_viscous", smoothing_velocity=smoothing), [fc, fv]),
        (FrictionShape(kind="stribeck", smoothing_velocity=smoothing), [fc, fv, static, static]),
        (FrictionShape(kind="arctan"), [static, fc, fv]),
    ]:
        assert_allclose(friction_torque(v_arr, theta, shape), -friction_torque(-v_arr, theta, shape), atol=1e-9)
        assert np.all(np.isfinite(friction_regressor(v_arr, shape)))


def test_smooth_sign_is_shared_and_bounded() -> None:
    """smooth_sign is tanh(v / s) for s > 0 and the hard sign for s = 0."""
    v = np.linspace(-1.0, 1.0, 11)
    assert_allclose(smooth_sign(v, 0.1), np.tanh(v / 0.1))
    assert_allclose(smooth_sign(v, 0.0), np.sign(v))


def test_direction_threshold_search_finds_lambda() -> None:
    """Liu et al.'s low/high speed threshold is recovered by the 1-D search."""
    rng = np.random.default_rng(11)
    shape = FrictionShape(kind="directional", direction_threshold=0.12)
    truth = np.array([1.0, 1.4, 2.0, 0.3, 0.1, 2.5, -0.2, 0.1])
    v = rng.uniform(-1.0, 1.0, 6000)
    tau = friction_torque(v, truth, shape) + 0.005 * rng.standard_normal(v.size)
    fitted_shape, theta = fit_direction_threshold(v, tau, FrictionShape(kind="directional"))
    assert abs(fitted_shape.direction_threshold - 0.12) < 0.01
    assert_allclose(theta, truth, atol=0.05)


def test_bad_shape_names_the_key() -> None:
    """Invalid shape constants raise ConfigError naming the key."""
    with pytest.raises(ConfigError, match="stribeck_velocity"):
        FrictionShape(kind="stribeck", stribeck_velocity=0.0)
    with pytest.raises(ConfigError, match="friction.kind"):
        FrictionShape(kind="lugre")  # type: ignore[arg-type]


def test_hard_sign_models_give_no_friction_at_rest() -> None:
    """sign(0) = 0: a resting joint gets neither Coulomb nor static friction from a hard-sign model."""
    v = np.array([-0.5, 0.0, 0.5])
    stribeck = FrictionShape(kind="stribeck", smoothing_velocity=0.0, stribeck_velocity=0.1)
    tau = friction_torque(v, np.array([1.0, 0.2, 1.5, 1.4]), stribeck)
    assert tau[1] == 0.0
    assert tau[2] == pytest.approx(1.0 * (1 - np.exp(-5)) + 0.1 + 1.5 * np.exp(-5))
    assert tau[0] == pytest.approx(-(1.0 * (1 - np.exp(-5)) + 0.1 + 1.4 * np.exp(-5)))
    assert friction_torque(v, np.array([1.0, 0.2]), FrictionShape())[1] == 0.0


@pytest.mark.parametrize(
    "shape",
    [
        FrictionShape(kind="coulomb_viscous", smoothing_velocity=0.01),
        FrictionShape(kind="coulomb_viscous", smoothing_velocity=0.0),
        FrictionShape(kind="coulomb_viscous", offset=True),
        FrictionShape(kind="stribeck", stribeck_velocity=0.1),
        FrictionShape(kind="stribeck", stribeck_velocity=0.02, smoothing_velocity=0.0035),
        FrictionShape(kind="stribeck", stribeck_velocity=0.02, offset=True),
    ],
)
def test_joints_friction_torque_is_the_regressor_times_each_joints_parameters(shape: FrictionShape, rng) -> None:
    """The control path's per-joint friction equals friction_regressor @ theta joint by joint,
    at rest too (the Coulomb + viscous and Stribeck shortcuts included)."""
    v = np.array([0.3, -0.02, 0.0, 1.5])
    coefficients = rng.uniform(0.1, 2.0, (v.size, shape.n_parameters))
    out = np.empty(v.size)
    joints_friction_torque(v, shape, coefficients, out)
    expected = [friction_torque([v[j]], coefficients[j], shape)[0] for j in range(v.size)]
    assert_allclose(out, expected, rtol=1e-14, atol=1e-15)
