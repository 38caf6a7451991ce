"""The sandwich covariance: the textbook one for white residuals, honest for correlated ones."""

from __future__ import annotations

import numpy as np

from motor_ident.core.estimation.covariance import (
    ChunkedSandwich,
    _autocovariance_sum,
    estimator_information,
    kernel_weights,
    long_run_covariance,
    sandwich_covariance,
)
from motor_ident.core.estimation.least_squares import RegressionStatistics


def _smooth_regressor(rng: np.random.Generator, N: int) -> np.ndarray:
    """(N, 1, 3) regressor of a smooth excitation: a constant, a sine and a cosine sweep."""
    t = np.linspace(0.0, 20.0, N)
    phase = rng.uniform(0.0, 2.0 * np.pi)
    return np.stack([np.ones(N), np.sin(1.3 * t + phase), np.cos(0.7 * t)], axis=1)[:, None, :]


def _ar1(rng: np.random.Generator, N: int, rho: float, std: float) -> np.ndarray:
    e = rng.standard_normal(N) * std
    for k in range(1, N):
        e[k] += rho * e[k - 1]
    return e


def _sandwich_std(Y: np.ndarray, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    fit = RegressionStatistics.from_arrays(Y, tau).ols()
    scores = Y[:, 0, :] * (tau[:, 0] - Y[:, 0, :] @ fit.theta)[:, None]
    cov = sandwich_covariance(Y[:, 0, :].T @ Y[:, 0, :], scores, equations=float(tau.size))
    return fit.theta, fit.std, np.sqrt(np.diag(cov))


def test_white_residuals_give_the_textbook_covariance(rng: np.random.Generator) -> None:
    """White noise: the sandwich standard deviations are within 15 % of s^2 (Y'Y)^-1's."""
    N = 4000
    Y = _smooth_regressor(rng, N)
    tau = Y @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.standard_normal((N, 1))
    _, textbook, sandwich = _sandwich_std(Y, tau)
    np.testing.assert_allclose(sandwich, textbook, rtol=0.15)


def test_correlated_residuals_widen_the_intervals_to_the_truth(rng: np.random.Generator) -> None:
    """AR(1) residuals (rho 0.95): 95 % sandwich intervals cover in 85-100 % of 40 runs, the textbook ones far less."""
    N, truth = 3000, np.array([1.0, -2.0, 0.5])
    sandwich_hits, textbook_hits = [], []
    for _ in range(40):
        Y = _smooth_regressor(rng, N)
        tau = Y @ truth + _ar1(rng, N, 0.95, 0.05)[:, None]
        theta, textbook, sandwich = _sandwich_std(Y, tau)
        sandwich_hits.append(np.abs(theta - truth) < 1.96 * sandwich)
        textbook_hits.append(np.abs(theta - truth) < 1.96 * textbook)
    coverage, textbook_coverage = float(np.mean(sandwich_hits)), float(np.mean(textbook_hits))
    assert 0.85 <= coverage <= 1.0, f"sandwich coverage {coverage:.2f}"
    assert textbook_coverage < 0.7, f"textbook coverage {textbook_coverage:.2f}: the case is not a hard one"


def test_segments_do_not_share_lags(rng: np.random.Generator) -> None:
    """A recording given twice as two segments counts twice, with no lag product across their boundary."""
    g = np.cumsum(rng.standard_normal((300, 2)), axis=0) * 0.1 + rng.standard_normal((300, 2))
    one, _ = long_run_covariance(g)
    twice, _ = long_run_covariance(np.vstack([g, g]), starts=[300])
    np.testing.assert_allclose(twice, 2.0 * one, rtol=1e-9)


def _lag_by_lag(series: np.ndarray, lags: int, starts: list[int] | None) -> np.ndarray:
    """The flat-top kernel sum lag by lag (slow, obvious): G_0 + sum_l w_l (G_l + G_l'), per segment."""
    weights = kernel_weights(lags)
    edges = [0, *(starts or []), series.shape[0]]
    S = np.zeros((series.shape[1], series.shape[1]))
    for a, b in zip(edges[:-1], edges[1:]):
        x = series[a:b]
        S += x.T @ x
        for lag in range(1, min(lags, b - a - 1) + 1):
            G = x[lag:].T @ x[:-lag]
            S += weights[lag] * (G + G.T)
    return S


def test_kernel_sum_by_window_sums_equals_the_lag_by_lag_sum(rng: np.random.Generator) -> None:
    """The O(T p^2) kernel sum equals the lag-by-lag one for even and odd bandwidths, with segments."""
    x = np.cumsum(rng.standard_normal((120, 3)), axis=0) * 0.1 + rng.standard_normal((120, 3))
    for lags in (0, 1, 2, 7, 8, 40):
        for starts in (None, [17, 90], [119]):
            expected = _lag_by_lag(x, lags, starts)
            np.testing.assert_allclose(
                _autocovariance_sum(x, lags, starts), expected, atol=1e-9 * np.abs(expected).max(), err_msg=f"{lags}"
            )


def test_one_chunk_gives_the_batch_sandwich(rng: np.random.Generator) -> None:
    """A single chunk scored by `ChunkedSandwich` gives `sandwich_covariance` of the same WLS fit."""
    N = 600
    Y = np.concatenate([_smooth_regressor(rng, N), _smooth_regressor(rng, N)], axis=1)  # two rows
    tau = Y @ np.array([1.0, -2.0, 0.5]) + np.stack([_ar1(rng, N, 0.9, 0.05), 0.2 * rng.standard_normal(N)], 1)
    stats = RegressionStatistics.from_arrays(Y, tau)
    fit = stats.wls()
    weights, information = estimator_information(fit, stats)
    scores = np.einsum("sjp,sj->sp", Y, (tau - Y @ fit.theta) * weights)
    expected = sandwich_covariance(information, scores, equations=stats.equations)
    chunked = ChunkedSandwich(3)
    chunked.add(Y, tau, fit, stats)
    np.testing.assert_allclose(chunked.covariance(fit, stats.equations), expected, rtol=1e-8)
    assert chunked.span > 5.0  # correlated scores: the kernel spans many samples
