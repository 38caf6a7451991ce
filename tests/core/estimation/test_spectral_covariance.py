"""The coloured-noise (frequency-domain) covariance of a least-squares estimate (ROS-free)."""

from __future__ import annotations

import numpy as np
from scipy.signal import butter, sosfiltfilt

from motor_ident.core.estimation.spectral_covariance import (
    LowFrequencyTransform,
    at_least,
    band,
    coloured_noise_covariance,
)

N, ROWS = 2000, 2


def _regressor(rng: np.random.Generator) -> np.ndarray:
    """Slow motions, as a standing robot's: sines of 2-6 cycles over the record, (N, ROWS, 3)."""
    t = np.arange(N) / N
    cycles = rng.uniform(2.0, 6.0, (ROWS, 3))
    return np.sin(2.0 * np.pi * cycles[None] * t[:, None, None] + rng.uniform(0, 6, (ROWS, 3)))


def _covariance(Y: np.ndarray, measured: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Weighted estimate and its coloured-noise covariance, the transform fed in chunks of 700."""
    H = np.einsum("j,sji,sjk->ik", weights, Y, Y)
    theta = np.linalg.solve(H, np.einsum("j,sji,sj->i", weights, Y, measured))
    transform = LowFrequencyTransform(N, band(measured), theta)
    for start in range(0, N, 700):
        transform.add(Y[start : start + 700], measured[start : start + 700])
    return theta, coloured_noise_covariance(transform, H, weights)


def test_white_residuals_give_the_textbook_covariance(rng: np.random.Generator) -> None:
    """White noise of known std per row, weighted by it: the covariance is (Y'WY)^-1 within 20 %."""
    Y = _regressor(rng)
    sigma = np.array([0.5, 2.0])
    measured = Y @ np.array([1.0, -2.0, 0.5]) + sigma * rng.standard_normal((N, ROWS))
    weights = 1.0 / sigma**2
    _, covariance = _covariance(Y, measured, weights)
    textbook = np.linalg.inv(np.einsum("j,sji,sjk->ik", weights, Y, Y))
    ratio = np.diag(covariance) / np.diag(textbook)
    assert np.all((ratio > 0.8) & (ratio < 1.25)), ratio


def test_low_pass_residuals_are_covered_where_the_white_covariance_is_not(rng: np.random.Generator) -> None:
    """Noise low-passed at 1 % of the rate (as the 5 Hz filter at 1 kHz): over 30 records the squared
    Mahalanobis distance of the truth averages the parameter count (3); under the white covariance, > 10 x."""
    Y = _regressor(rng)
    theta_true = np.array([1.0, -2.0, 0.5])
    sos = butter(2, 0.01, output="sos")
    distances = {"coloured": [], "white": []}
    for _ in range(30):
        noise = sosfiltfilt(sos, rng.standard_normal((N + 400, ROWS)), axis=0)[200:-200]
        measured = Y @ theta_true + noise / noise.std(axis=0) * np.array([0.5, 2.0])
        weights = 1.0 / measured.var(axis=0)  # any fixed weights
        theta, covariance = _covariance(Y, measured, weights)
        white = np.linalg.inv(np.einsum("j,sji,sjk->ik", weights, Y, Y)) * np.mean(
            (measured - Y @ theta) ** 2 * weights
        )
        error = theta - theta_true
        distances["coloured"].append(float(error @ np.linalg.solve(covariance, error)))
        distances["white"].append(float(error @ np.linalg.solve(white, error)))
    mean = {k: float(np.mean(v)) for k, v in distances.items()}
    assert 1.5 < mean["coloured"] < 6.0, mean
    assert mean["white"] > 30.0, mean


def test_at_least_raises_only_the_smaller_directions(rng: np.random.Generator) -> None:
    """Each direction of the result is the larger of the two covariances' in the floor's metric."""
    A = rng.standard_normal((3, 3))
    floor = A @ A.T + np.eye(3)
    covariance = np.diag([10.0, 1e-6, 1e-6]) * np.trace(floor)
    raised = at_least(covariance, floor)
    assert np.all(np.linalg.eigvalsh(raised - floor) > -1e-9)
    assert np.all(np.linalg.eigvalsh(raised - covariance) > -1e-9)
    np.testing.assert_allclose(at_least(floor, floor), floor, atol=1e-12)


def test_at_least_takes_a_floor_definite_only_up_to_rounding(rng: np.random.Generator) -> None:
    """Parameters ten decades apart in scale and a floor with an eigenvalue of -1e-12 relative (as the
    coloured-noise floor of a 208-parameter humanoid had): no Cholesky failure, the result still at
    least the covariance, and at least the floor where the floor is not zero."""
    scale = np.logspace(-5, 5, 6)
    A = rng.standard_normal((6, 6))
    w, V = np.linalg.eigh(A @ A.T)
    w[0] = -1e-12 * w[-1]
    floor = (V * w) @ V.T * np.outer(scale, scale)
    B = rng.standard_normal((6, 6))
    covariance = 0.5 * (B @ B.T) * np.outer(scale, scale)
    raised = at_least(covariance, floor)
    relative = np.outer(scale, scale)
    assert np.all(np.linalg.eigvalsh((raised - covariance) / relative) > -1e-9)
    assert np.all(np.linalg.eigvalsh((raised - floor) / relative) > -1e-9)
