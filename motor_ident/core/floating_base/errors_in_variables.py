"""The IMU's orientation noise as an error in the variables: its bias on the mass and CoM, removed by SIMEX.

The base orientation enters the base rows twice: through gravity's direction in the base frame and
through the base position reconstructed from the feet (`motor_ident.core.floating_base.stance`). Noise
on the IMU's orientation output, even after the gyro fusion (`motor_ident.core.floating_base.samples`),
leaves an error in the regressor itself, which least squares turns into a bias of what the data see
weakly: on Romeo computed by pinocchio alone, 2 mrad per sample put the vertical CoM 16-37 mm up, 2.7-3.6
of its residual-based standard deviations. No residual shows such a bias.

The model. The recorded orientation is the true one turned, in the IMU frame, by white noise of std
sigma_j per axis j (what a raw or lightly filtered IMU gives); everything after it, the fusion, the base
pose from the feet, the filter and the fit, is a fixed function of it. `orientation_noise` estimates sigma
from the data: the IMU's orientation increments less the gyro's (trapezoid) rotation over the step hold
the difference of two successive noise samples, of variance 2 sigma^2, beside a gyro error of
gyro_noise dt, negligible at 1 kHz. A filtered orientation output (an on-board Kalman filter) gives a
small value there, so a small correction.

SIMEX (simulation-extrapolation; Cook & Stefanski 1994): refit with extra noise of variance lambda
sigma^2 added to the recorded orientation (`SIMEX_LAMBDAS`, `SIMEX_REPLICATES` replicates each, the same
seeded noise pattern scaled across lambda, so the estimates' trend in lambda is not drowned by the
replicates' scatter), passed through the same sample reconstruction, and extrapolate the estimates'
mean over lambda to lambda = -1, where the orientation's noise variance would be zero. The extrapolant
is linear (least squares over lambda = 0 and the `SIMEX_LAMBDAS`): on Romeo computed by pinocchio
alone the vertical CoM's mean rose by 8-15 mm per unit of lambda up to 2, nearly straight, and bent down
toward lambda = 3 (one seed probed), so a line under-corrects rather than over-corrects; a quadratic is
three times as sensitive to the replicates' scatter at lambda = -1 (weights of norm 4.3 against 1.4) and
varied more from seed to seed. The correction's own uncertainty is added in quadrature to the fit's
standard deviations of the mass and CoM: the replicates' scatter of the extrapolated value over the
square root of their number, and the extrapolant's error, taken as the quadratic's difference from the
line at lambda = -1 (what the choice of extrapolant alone moves).

Rejected: a lower fusion crossover (0.2 Hz: the bias nearly went, but that tunes the fusion to this
simulator's noise); the constant tilt of `identify_floating_base` (a constant error, not a noisy one:
estimated within 0.06 mrad of zero there).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.spatial.transform import Rotation

from motor_ident.core.estimation.least_squares import RegressionStatistics
from motor_ident.core.floating_base.identification import (
    CHUNK_SAMPLES,
    Estimate,
    FloatingIdentification,
    base_row_chunks,
    centre_of_mass,
    row_count,
)
from motor_ident.core.floating_base.model import FloatingBaseRegressor
from motor_ident.core.floating_base.samples import FloatingSamples
from motor_ident.errors import DataError

FloatArray = NDArray[np.float64]

SIMEX_LAMBDAS = (0.5, 1.0, 2.0)
"""Extra orientation-noise variances of the refits, in units of the estimated sigma^2."""

SIMEX_REPLICATES = 2
"""Noise patterns per lambda (the same patterns scaled across lambda)."""


def orientation_noise(t: ArrayLike, quaternion: ArrayLike, gyro: ArrayLike) -> FloatArray:
    """White-noise std (3,) [rad] per IMU axis of an orientation output, from its increments against the gyro's.

    Args:
        t: time stamps (N,) [s], increasing; N >= 3.
        quaternion: the IMU's orientation world <- IMU [qx, qy, qz, qw] (N, 4).
        gyro: its angular velocity in the IMU frame (N, 3) [rad/s].

    Raises:
        DataError: fewer than 3 samples, or shapes that disagree.
    """
    t = np.asarray(t, dtype=float)
    quat, gyro = np.asarray(quaternion, dtype=float), np.asarray(gyro, dtype=float)
    if t.size < 3 or quat.shape != (t.size, 4) or gyro.shape != (t.size, 3):
        raise DataError(f"orientation noise needs (N, 4) quaternions and (N, 3) rates, N >= 3: got {quat.shape}")
    R = Rotation.from_quat(quat)  # [qx, qy, qz, qw], normalised
    increments = (R[:-1].inv() * R[1:]).as_rotvec()  # each step's rotation in the IMU frame
    rotation = 0.5 * (gyro[1:] + gyro[:-1]) * np.diff(t)[:, None]
    return np.asarray(np.std(increments - rotation, axis=0) / np.sqrt(2.0), dtype=float)


@dataclass(frozen=True)
class OrientationNoiseCorrection:
    """What `simex_correction` found.

    Attributes:
        noise: the estimated white-noise std of the IMU's orientation per IMU axis (3,) [rad].
        lambdas: 0 and the `SIMEX_LAMBDAS` (L,).
        means: the estimates' mean per lambda (L, m): [total mass, CoM x, y, z] by default.
        corrected: the extrapolation to lambda = -1 (m,).
        correction: corrected - the fit's own estimate (m,).
        std: the correction's own standard deviation (m,): the replicates' scatter and the extrapolant's
            error, taken as the quadratic's difference from the line at lambda = -1, in quadrature.
        extrapolant_difference: that difference (quadratic - line) (m,).
        refits: how many refits it took.
    """

    noise: FloatArray
    lambdas: FloatArray
    means: FloatArray
    corrected: FloatArray
    correction: FloatArray
    std: FloatArray
    extrapolant_difference: FloatArray
    refits: int


def simex_correction(
    estimate: Callable[[FloatArray], FloatArray],
    t: ArrayLike,
    quaternion: ArrayLike,
    gyro: ArrayLike,
    naive: ArrayLike,
    *,
    lambdas: tuple[float, ...] = SIMEX_LAMBDAS,
    replicates: int = SIMEX_REPLICATES,
    seed: int = 0,
) -> OrientationNoiseCorrection:
    """Extrapolate ``estimate`` of the recorded orientation to one without its white noise (module docstring).

    Args:
        estimate: quaternions (N, 4) -> the estimates (m,), the whole reconstruction and fit run on them.
        t, quaternion, gyro: the record's time (N,) [s], IMU orientation (N, 4) and gyro (N, 3) [rad/s].
        naive: ``estimate`` of the recorded quaternions (m,).
        lambdas: extra noise variances in units of sigma^2, > 0; replicates: noise patterns, >= 2.
        seed: of the noise patterns (the result is deterministic).
    """
    quat = np.asarray(quaternion, dtype=float)
    naive = np.asarray(naive, dtype=float)
    sigma = orientation_noise(t, quat, gyro)
    rng = np.random.default_rng(seed)
    grid = np.array([0.0, *lambdas])
    values = np.empty((replicates, grid.size, naive.size))
    values[:, 0] = naive
    for b in range(replicates):
        pattern = rng.standard_normal((quat.shape[0], 3)) * sigma
        for i, lam in enumerate(lambdas, start=1):  # the recorded orientation turned by the pattern, in the IMU frame
            values[b, i] = estimate((Rotation.from_quat(quat) * Rotation.from_rotvec(np.sqrt(lam) * pattern)).as_quat())
    # a line in lambda per replicate, least squares, evaluated at lambda = -1; a quadratic for its error
    extrapolated = np.einsum("l,blm->bm", _extrapolation_weights(grid, 1), values)
    corrected = extrapolated.mean(axis=0)
    means = values.mean(axis=0)
    curvature = _extrapolation_weights(grid, 2) @ means - corrected
    scatter = extrapolated.std(axis=0, ddof=1) / np.sqrt(replicates)
    return OrientationNoiseCorrection(
        noise=sigma,
        lambdas=grid,
        means=means,
        corrected=corrected,
        correction=corrected - naive,
        std=np.hypot(scatter, curvature),
        extrapolant_difference=curvature,
        refits=replicates * len(lambdas),
    )


def _extrapolation_weights(grid: FloatArray, degree: int) -> FloatArray:
    """Weights (L,) giving the least-squares polynomial of ``degree`` through values at ``grid`` at lambda = -1."""
    design = np.vander(grid, degree + 1, increasing=True)
    return np.asarray(np.linalg.pinv(design).T @ (-1.0) ** np.arange(degree + 1), dtype=float)


def mass_and_com(
    regressor: FloatingBaseRegressor,
    result: FloatingIdentification,
    samples: FloatingSamples,
    q_reference: ArrayLike,
    theta_nominal: ArrayLike,
) -> FloatArray:
    """[total mass [kg], CoM x, y, z [m] at ``q_reference``] of a WLS fit of ``samples`` with ``result``'s base
    parameters, rows and training samples (no tilt, no covariance: the refits of `simex_correction`), (4,)."""
    k = row_count(regressor, result.rows)
    base = result.base
    stats = RegressionStatistics(k, base.n_base)
    train = samples.slice(0, result.n_train)
    theta0 = np.asarray(theta_nominal, dtype=float)
    for start, Y, undetermined in base_row_chunks(
        regressor, base, train.Q, train.V, train.A, k, CHUNK_SAMPLES, theta0, False
    ):
        stats.add(Y, train.F[start : start + Y.shape[0], :k] - undetermined)  # as `identify_floating_base` fits
    theta = base.to_full(stats.wls().theta, theta0)
    com = centre_of_mass(regressor, q_reference, base, np.eye(base.n_base), theta).value
    return np.array([theta[0::10].sum(), *com])


def corrected_identification(
    result: FloatingIdentification, correction: OrientationNoiseCorrection
) -> FloatingIdentification:
    """``result`` with its total mass and CoM moved by ``correction`` (of [mass, CoM x, y, z]) and their std
    widened by its own, in quadrature."""
    mass, com = result.mass, result.com
    return replace(
        result,
        mass=Estimate(
            np.array(float(mass.value) + correction.correction[0]),
            np.array(float(np.hypot(mass.std, correction.std[0]))),
            mass.identifiable,
        ),
        com=Estimate(com.value + correction.correction[1:4], np.hypot(com.std, correction.std[1:4]), com.identifiable),
    )
