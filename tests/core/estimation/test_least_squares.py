"""Estimators: recovery against truth, errors consistent with covariance, R^2 definitions."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from motor_ident.core.estimation.identification import identify, structural_base_parameters
from motor_ident.core.estimation.least_squares import fit_metrics, ols, pulled_to_nominal, wls
from motor_ident.errors import DataError, EstimationError
from motor_ident.io.robot_config import load_robot_config
from motor_ident.sim.synthetic import excitation_record


@pytest.fixture(scope="module")
def valkyrie() -> tuple:
    config = load_robot_config("valkyrie_arm")
    regressor = config.build_regressor()
    base = structural_base_parameters(regressor)
    return config, regressor, base


def test_wls_recovers_truth_within_three_sigma(valkyrie: tuple) -> None:
    """Base parameters from noisy synthetic data lie within 3 reported standard deviations."""
    config, regressor, base = valkyrie
    theta_true = config.nominal_parameters(regressor)
    sigma = np.array([0.3, 0.2, 0.1, 0.15])
    record, _ = excitation_record(regressor, theta_true, duration=60.0, rate_hz=100.0, noise_std=sigma, seed=1)
    Y = base.base_regressor(regressor.rows(record.q, record.qd, record.qdd))
    fit = wls(Y, record.tau)
    z = (fit.theta - base.to_base(theta_true)) / fit.std
    assert np.max(np.abs(z)) < 4.0  # 34 parameters: max |z| of Gaussians rarely exceeds 3.5
    assert np.mean(np.abs(z) < 3.0) > 0.95
    assert_allclose(fit.sigma, sigma, rtol=0.1)


def test_wls_covariance_matches_monte_carlo(valkyrie: tuple) -> None:
    """The spread of WLS estimates over noise draws matches the reported covariance."""
    config, regressor, base = valkyrie
    theta_true = config.nominal_parameters(regressor)
    record, traj = excitation_record(regressor, theta_true, duration=20.0, rate_hz=50.0, noise_std=0.0, seed=2)
    Y = base.base_regressor(regressor.rows(record.q, record.qd, record.qdd))
    sigma = np.array([0.3, 0.2, 0.1, 0.15])
    rng = np.random.default_rng(5)
    estimates = []
    for _ in range(200):
        tau = record.tau + rng.standard_normal(record.tau.shape) * sigma
        estimates.append(wls(Y, tau, sigma).theta)
    reported = wls(Y, record.tau + rng.standard_normal(record.tau.shape) * sigma, sigma).std
    empirical = np.std(np.array(estimates), axis=0, ddof=1)
    # 200 draws: the std of a std estimate is ~5 %; allow 20 %.
    assert_allclose(empirical, reported, rtol=0.2)


def test_heldout_prediction_at_moderate_noise(valkyrie: tuple) -> None:
    """Identification on the first 75 % predicts the last 25 % with R^2 >= 0.99."""
    config, regressor, base = valkyrie
    theta_true = config.nominal_parameters(regressor)
    record, _ = excitation_record(regressor, theta_true, duration=40.0, rate_hz=100.0, noise_std=0.05, seed=3)
    result = identify(regressor, record.q, record.qd, record.qdd, record.tau, validate_fraction=0.25, base=base)
    assert result.heldout is not None and result.n_heldout == 1000
    assert np.all(result.heldout.r2 >= 0.99), result.heldout.r2


def test_pulled_to_nominal_limits() -> None:
    """alpha = 1 is OLS; a tiny alpha returns the nominal parameters."""
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(200, 2, 5))
    theta = rng.normal(size=5)
    tau = Y @ theta + 0.01 * rng.standard_normal((200, 2))
    assert_allclose(pulled_to_nominal(Y, tau, np.zeros(5), 1.0).theta, ols(Y, tau).theta, rtol=1e-10)
    nominal = rng.normal(size=5)
    assert_allclose(pulled_to_nominal(Y, tau, nominal, 1e-6).theta, nominal, atol=1e-6)


def test_pulled_to_nominal_handles_unexcited_parameters() -> None:
    """A parameter with no data stays at its nominal value instead of making the solve singular."""
    rng = np.random.default_rng(1)
    Y = rng.normal(size=(100, 1, 3))
    Y[:, :, 2] = 0.0
    tau = Y @ np.array([1.0, 2.0, 0.0])
    with pytest.raises(EstimationError, match="not excited"):
        ols(Y, tau)
    fit = pulled_to_nominal(Y, tau, np.array([0.0, 0.0, 7.0]), 0.9)
    assert_allclose(fit.theta, [1.0, 2.0, 7.0], atol=1e-3)


def test_r2_definitions() -> None:
    """Centred R^2 and Kolathaya et al.'s uncentred R^2 (eq. 104) against direct formulas."""
    tau = np.array([[1.0, 5.0], [2.0, 6.0], [3.0, 7.5], [4.0, 8.0]])
    pred = tau + np.array([[0.1, -0.2], [0.0, 0.1], [-0.1, 0.0], [0.05, 0.2]])
    m = fit_metrics(tau, pred)
    e = tau - pred
    assert_allclose(m.r2, 1 - (e**2).sum(0) / ((tau - tau.mean(0)) ** 2).sum(0))
    assert_allclose(m.r2_uncentred, 1 - (e**2).sum(0) / (tau**2).sum(0))
    assert_allclose(m.nrmse, np.sqrt((e**2).mean(0)) / np.ptp(tau, axis=0))


def test_bad_data_is_refused() -> None:
    """NaN data and mismatched shapes raise DataError, not a NaN estimate."""
    Y = np.ones((10, 2, 3))
    with pytest.raises(DataError, match="shape|expected"):
        ols(Y, np.ones((10, 3)))
    tau = np.ones((10, 2))
    tau[3, 1] = np.nan
    with pytest.raises(DataError, match="NaN"):
        wls(Y, tau, np.ones(2))
