"""Online identification: the sliding window equals the batch solution; the gate; the identifier."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from motor_ident.core.estimation.gate import GateConfig, ModelGate
from motor_ident.core.estimation.least_squares import ols, pulled_to_nominal
from motor_ident.core.estimation.online import HeldOutR2, IdentifierConfig, OnlineIdentifier
from motor_ident.core.estimation.sliding_window import SlidingWindowLS, WindowFit


def _batch_weighted(Y: np.ndarray, tau: np.ndarray, forgetting: float) -> np.ndarray:
    """Slow obvious reference: weighted least squares with weights lambda^age."""
    w = np.sqrt(forgetting ** np.arange(len(Y) - 1, -1, -1.0))
    return ols(Y * w[:, None, None], tau * w[:, None]).theta


@settings(max_examples=200, deadline=None)
@given(
    window=st.integers(5, 40),
    steps=st.integers(1, 150),
    forgetting=st.sampled_from([1.0, 0.99, 0.9]),
    seed=st.integers(0, 2**16),
)
def test_sliding_window_equals_batch(window: int, steps: int, forgetting: float, seed: int) -> None:
    """After any number of updates the estimate equals batch least squares on the same window."""
    rng = np.random.default_rng(seed)
    n, p = 2, 4
    est = SlidingWindowLS(n, p, window, forgetting=forgetting)
    Y = rng.normal(size=(steps, n, p)) * rng.uniform(0.1, 100.0, size=p)
    tau = Y @ rng.normal(size=p) + 0.1 * rng.standard_normal((steps, n))
    for k in range(steps):
        est.add(Y[k], tau[k])
    first = max(0, steps - window)
    if (steps - first) * n < p + 1:
        return
    assert_allclose(est.solve().theta, _batch_weighted(Y[first:], tau[first:], forgetting), rtol=1e-7, atol=1e-9)
    Yw, tw = est.window_data()
    assert_allclose(Yw, Y[first:])
    assert_allclose(tw, tau[first:])


def test_long_run_does_not_drift() -> None:
    """100 000 updates with large values: the periodic refresh keeps the statistics exact."""
    rng = np.random.default_rng(0)
    est = SlidingWindowLS(1, 3, 50)
    for _ in range(100_000):
        y = rng.normal(size=(1, 3)) * 1e3
        est.add(y, y @ np.array([1.0, -2.0, 3.0]) + rng.normal(size=1))
    Y, tau = est.window_data()
    assert_allclose(est.solve().theta, ols(Y, tau).theta, rtol=1e-9)
    assert_allclose(est.stats.A, np.einsum("sji,sjk->jik", Y, Y), rtol=1e-9)


def test_window_with_nominal_pull_matches_batch() -> None:
    """alpha < 1: the window solves the pulled problem of Kolathaya et al. 2016, eq. 106-107."""
    rng = np.random.default_rng(1)
    Y = rng.normal(size=(30, 2, 5))
    tau = Y @ rng.normal(size=5)
    nominal = rng.normal(size=5)
    est = SlidingWindowLS(2, 5, 20, theta_nominal=nominal, alpha=0.7)
    for k in range(30):
        est.add(Y[k], tau[k])
    assert_allclose(est.solve().theta, pulled_to_nominal(Y[10:], tau[10:], nominal, 0.7).theta, rtol=1e-9)


def test_bad_samples_leave_the_window_unchanged() -> None:
    """NaN or wrongly shaped samples raise and change nothing."""
    est = SlidingWindowLS(2, 3, 10)
    est.add(np.ones((2, 3)), np.ones(2))
    with pytest.raises(ValueError, match="NaN"):
        est.add(np.full((2, 3), np.nan), np.ones(2))
    with pytest.raises(ValueError, match="shapes"):
        est.add(np.ones((3, 3)), np.ones(3))
    assert est.count == 1


def _fit(r2: float, cond: float = 10.0, count: int = 100) -> WindowFit:
    return WindowFit(
        theta=np.zeros(2),
        r2=np.full(2, r2),
        r2_uncentred=np.full(2, r2),
        rmse=np.zeros(2),
        condition_number=cond,
        count=count,
    )


def test_gate_hysteresis_and_reasons() -> None:
    """Opens at the threshold with a full buffer, stays open inside the hysteresis band, says why."""
    gate = ModelGate(GateConfig(r2_threshold=0.95, r2_hysteresis=0.02, max_condition_number=1e3))
    assert not gate.update(_fit(0.99), window_full=False) and "buffer" in gate.reason
    assert not gate.update(_fit(0.94), window_full=True) and "R2" in gate.reason
    assert gate.update(_fit(0.951), window_full=True)
    assert gate.update(_fit(0.94), window_full=True)  # inside the band: stays open
    assert not gate.update(_fit(0.92), window_full=True)
    assert not gate.update(_fit(0.99, cond=1e5), window_full=True) and "condition" in gate.reason
    gate.forced_nominal = True
    assert not gate.update(_fit(0.99), window_full=True) and "forced" in gate.reason


def test_identifier_ignores_nan_and_resets_on_backwards_clock() -> None:
    """Non-finite samples are counted and dropped; time going back empties the buffer."""
    from motor_ident.core.estimation.identification import structural_base_parameters
    from motor_ident.io.robot_config import load_robot_config

    config = load_robot_config("szabo_3dof")
    regressor = config.build_regressor()
    base = structural_base_parameters(regressor)
    ident = OnlineIdentifier(
        regressor, base, config.nominal_parameters(regressor), IdentifierConfig(window_duration=0.2, refit_period=0.0)
    )
    rng = np.random.default_rng(0)
    for k in range(40):
        ident.add_sample(0.01 * k, rng.normal(size=3), rng.normal(size=3), rng.normal(size=3))
    assert ident.window.count > 0
    assert not ident.add_sample(0.5, [np.nan, 0.0, 0.0], np.zeros(3), np.zeros(3))
    assert ident.dropped == 1
    assert not ident.add_sample(0.1, np.zeros(3), np.zeros(3), np.zeros(3))
    assert ident.window.count == 0 and ident.resets == 1 and not ident.gate_open
    np.testing.assert_array_equal(ident.active_theta, ident.theta_nominal)


def test_heldout_r2_scores_predictions_made_before_the_fit() -> None:
    """Held-out R2 = 1 - sum (tau - predicted)^2 / sum (tau - mean)^2 over the last W samples, per joint."""
    rng = np.random.default_rng(3)
    heldout = HeldOutR2(n=2, window=30)
    assert np.all(np.isnan(heldout.r2()))
    taus, errors = rng.normal(size=(40, 2)), 0.3 * rng.normal(size=(40, 2))
    for tau, error in zip(taus, errors, strict=True):
        heldout.add(tau, tau - error)
    last_tau, last_error = taus[-30:], errors[-30:]
    expected = 1.0 - (last_error**2).sum(axis=0) / ((last_tau - last_tau.mean(axis=0)) ** 2).sum(axis=0)
    assert_allclose(heldout.r2(), expected, rtol=1e-12)
    heldout.add(np.array([5.0, 5.0]), np.array([0.0, 5.0]), mask=np.array([False, True]))  # joint 0 left out
    assert heldout.r2()[0] == pytest.approx(
        1.0 - (errors[-29:, 0] ** 2).sum() / ((taus[-29:, 0] - taus[-29:, 0].mean()) ** 2).sum()
    )


def test_gate_on_predicted_r2_stays_closed_without_predictions() -> None:
    """r2_definition predicted: NaN (nothing predicted yet) keeps the gate closed; the in-sample R2 is not used."""
    gate = ModelGate(GateConfig(r2_definition="predicted", require_consistent=False))
    assert not gate.update(_fit(0.999), window_full=True) and "R2 nan" in gate.reason
    fit = _fit(0.999)
    assert not gate.update(WindowFit(**{**fit.__dict__, "r2_predicted": np.array([0.99, 0.9])}), window_full=True)
    assert gate.update(WindowFit(**{**fit.__dict__, "r2_predicted": np.array([0.99, 0.96])}), window_full=True)


def test_identifier_heldout_r2_below_in_sample_on_a_short_window() -> None:
    """Few samples per parameter: the in-sample R2 is near 1 while the fit does not predict the next samples."""
    from motor_ident.core.estimation.identification import structural_base_parameters
    from motor_ident.io.robot_config import load_robot_config

    config = load_robot_config("szabo_3dof")
    regressor = config.build_regressor()
    base = structural_base_parameters(regressor)
    theta = config.nominal_parameters(regressor)
    settings = IdentifierConfig(window_duration=0.3, refit_period=0.0, velocity_cutoff_hz=1000.0, alpha=1.0)
    ident = OnlineIdentifier(regressor, base, theta, settings)
    rng = np.random.default_rng(1)
    for k in range(120):  # random states: each sample unlike the last, torques of the true model plus noise
        q, qd = rng.uniform(-1, 1, 3), rng.uniform(-2, 2, 3)
        tau = regressor.rows(q, qd, np.zeros(3))[0] @ theta + 0.5 * rng.normal(size=3)
        ident.add_sample(0.01 * k, q, qd, tau)
    fit = ident.fit
    assert fit is not None and fit.r2_predicted is not None
    assert np.all(fit.r2_predicted < fit.r2 - 0.05), (fit.r2_predicted, fit.r2)


@pytest.mark.parametrize("decimation, low, high", [("average", 0.025, 0.04), ("first", 0.085, 0.115)])
def test_decimation_by_averages_leaves_a_tenth_of_the_noise_power(decimation: str, low: float, high: float) -> None:
    """1 kHz states with 0.1 N m white torque noise, kept at 100 Hz: the window's residual RMS is
    0.1 / sqrt(10) when blocks of 10 are averaged, 0.1 when one state in ten is kept."""
    from motor_ident.core.estimation.identification import structural_base_parameters
    from motor_ident.io.robot_config import load_robot_config
    from motor_ident.sim.synthetic import excitation_record

    config = load_robot_config("szabo_3dof")
    regressor = config.build_regressor()
    base = structural_base_parameters(regressor)
    theta = config.nominal_parameters(regressor)
    record, _ = excitation_record(regressor, theta, duration=6.0, rate_hz=1000.0, noise_std=0.1, seed=3)
    settings = IdentifierConfig(decimation=decimation, refit_period=1.0, gate=GateConfig(require_consistent=False))
    ident = OnlineIdentifier(regressor, base, theta, settings, input_rate_hz=1000.0)
    assert record.qd is not None
    for k in range(record.t.size):
        ident.add_sample(record.t[k], record.q[k], record.qd[k], record.tau[k])
    assert ident.counts is not None and ident.counts.decimation == 10 and ident.window.full
    assert ident.fit is not None and np.all((low < ident.fit.rmse) & (ident.fit.rmse < high)), ident.fit.rmse
