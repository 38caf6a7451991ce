"""Least-squares estimators on stacked regressor data, with covariance and fit metrics.

Data layout everywhere: regressor ``Y`` of shape (N, n, p) (N samples, n joints, p parameters)
and measured torques ``tau`` of shape (N, n). Estimators:

- `ols`: ordinary least squares (seed 001 eq. 102, seed 002 eq. 17).
- `wls`: weighted least squares with per-joint noise variances, estimated from the OLS
  residuals when not given (seed 002 eq. 18-19, seed 004 eq. 19-21).
- `pulled_to_nominal`: least squares pulled toward a nominal theta_0 with weight alpha (seed 001
  eq. 105-107). Eq. 105 is printed with plain norms, but its stated solution eq. 106-107 stacks
  ``[alpha Y; (1 - alpha) I]``, which minimises the squared form
  ``alpha^2 |U - Y theta|^2 + (1 - alpha)^2 |theta - theta_0|^2``; that is what is solved here.

All solve the normal equations after scaling the columns to unit norm (tall QR is slow on small
machines; scaled normal equations are accurate for the well-conditioned base regressors used
here, and the condition number is reported so a caller can refuse a poor one).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
from numpy.typing import ArrayLike, NDArray

from motor_ident.errors import DataError, EstimationError

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class Fit:
    """Result of an estimator.

    Attributes:
        theta: estimate, shape (p,).
        covariance: covariance of the estimate, shape (p, p).
        sigma: noise standard deviation per joint used or estimated, shape (n,) [N m].
        condition_number: 2-norm condition number of the (weighted) regressor.
        r2: centred coefficient of determination per joint, shape (n,).
        r2_uncentred: seed 001 eq. 104, 1 - e'e / U'U per joint, shape (n,).
        nrmse: RMS residual over the range of the measurement per joint, shape (n,).
        rmse: RMS residual per joint, shape (n,) [N m].
        method: ``ols``, ``wls`` or ``nominal``.
        n_samples: N.
    """

    theta: FloatArray
    covariance: FloatArray
    sigma: FloatArray
    condition_number: float
    r2: FloatArray
    r2_uncentred: FloatArray
    nrmse: FloatArray
    rmse: FloatArray
    method: str
    n_samples: int

    @property
    def std(self) -> FloatArray:
        """Standard deviation of each parameter, shape (p,)."""
        return np.sqrt(np.clip(np.diag(self.covariance), 0.0, None))


@dataclass(frozen=True)
class FitMetrics:
    """Per-joint agreement between measured and predicted torques (all shape (n,))."""

    r2: FloatArray
    r2_uncentred: FloatArray
    nrmse: FloatArray
    rmse: FloatArray


def fit_metrics(tau: ArrayLike, tau_predicted: ArrayLike) -> FitMetrics:
    """R^2 (centred and seed 001's uncentred), NRMSE and RMSE per joint.

    Args:
        tau: measured torques, shape (N, n).
        tau_predicted: predicted torques, shape (N, n).

    A joint whose measurement is constant gets R^2 = 1 if predicted exactly, else -inf.
    """
    tau = np.asarray(tau, dtype=float)
    pred = np.asarray(tau_predicted, dtype=float)
    e = tau - pred
    sse = np.sum(e * e, axis=0)
    centred = tau - tau.mean(axis=0)
    sst = np.sum(centred * centred, axis=0)
    ss0 = np.sum(tau * tau, axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        r2 = np.where(sst > 0.0, 1.0 - sse / np.where(sst > 0.0, sst, 1.0), np.where(sse > 0.0, -np.inf, 1.0))
        r2u = np.where(ss0 > 0.0, 1.0 - sse / np.where(ss0 > 0.0, ss0, 1.0), np.where(sse > 0.0, -np.inf, 1.0))
    rmse = np.sqrt(sse / max(tau.shape[0], 1))
    span = np.ptp(tau, axis=0) if tau.shape[0] else np.zeros(tau.shape[1])
    nrmse = np.where(span > 0.0, rmse / np.where(span > 0.0, span, 1.0), np.where(rmse > 0.0, np.inf, 0.0))
    return FitMetrics(r2=r2, r2_uncentred=r2u, nrmse=nrmse, rmse=rmse)


def _check(Y: ArrayLike, tau: ArrayLike) -> tuple[FloatArray, FloatArray]:
    Y = np.asarray(Y, dtype=float)
    tau = np.asarray(tau, dtype=float)
    if Y.ndim != 3 or tau.shape != Y.shape[:2]:
        raise DataError(f"regressor {Y.shape} and torques {tau.shape}: expected (N, n, p) and (N, n)")
    if Y.shape[0] == 0:
        raise EstimationError("no samples to estimate from")
    if not (np.all(np.isfinite(Y)) and np.all(np.isfinite(tau))):
        raise DataError("the regressor or the torques contain NaN or Inf")
    return Y, tau


def solve_normal_equations(A: ArrayLike, b: ArrayLike) -> tuple[FloatArray, FloatArray, float]:
    """Solve ``A x = b`` for a symmetric positive semidefinite information matrix A (p, p).

    Columns are equilibrated first (A -> D A D with D = diag(A)^-1/2). Returns the solution,
    the inverse of A (the unscaled covariance) and the 2-norm condition number of the
    underlying regressor, sqrt(cond(A)).

    Raises:
        EstimationError: A is singular (a parameter is not excited) or not finite.
    """
    A = np.asarray(A, dtype=float)
    b = np.asarray(b, dtype=float)
    d = np.sqrt(np.diag(A))
    if not np.all(np.isfinite(A)) or np.any(d <= 0.0):
        zero = np.flatnonzero(~(d > 0.0))
        raise EstimationError(f"parameters {zero.tolist()} are not excited by the data (zero column)")
    scaled = A / np.outer(d, d)
    eig = np.linalg.eigvalsh(A)
    cond = float(np.sqrt(eig[-1] / eig[0])) if eig[0] > 0.0 else float("inf")
    try:
        factor = scipy.linalg.cho_factor(scaled, lower=True, check_finite=False)
        inv_scaled = scipy.linalg.cho_solve(factor, np.eye(A.shape[0]), check_finite=False)
    except np.linalg.LinAlgError:
        raise EstimationError(f"the information matrix is singular (condition number {cond:.3g})") from None
    inv = inv_scaled / np.outer(d, d)
    return inv @ b, inv, cond


def _finish(
    theta: FloatArray,
    info_inv: FloatArray,
    Y: FloatArray,
    tau: FloatArray,
    sigma: FloatArray,
    cond: float,
    method: str,
    covariance: FloatArray,
) -> Fit:
    pred = Y @ theta
    m = fit_metrics(tau, pred)
    return Fit(
        theta=theta,
        covariance=covariance,
        sigma=sigma,
        condition_number=cond,
        r2=m.r2,
        r2_uncentred=m.r2_uncentred,
        nrmse=m.nrmse,
        rmse=m.rmse,
        method=method,
        n_samples=Y.shape[0],
    )


def ols(Y: ArrayLike, tau: ArrayLike) -> Fit:
    """Ordinary least squares; covariance ``s^2 (Y'Y)^-1`` with s^2 = e'e / (N n - p).

    Args:
        Y: regressor, shape (N, n, p); must have full column rank (use the base regressor).
        tau: measured torques, shape (N, n) [N m].
    """
    Y, tau = _check(Y, tau)
    N, n, p = Y.shape
    flat = Y.reshape(N * n, p)
    y = tau.reshape(N * n)
    theta, inv, cond = solve_normal_equations(flat.T @ flat, flat.T @ y)
    e = y - flat @ theta
    dof = max(N * n - p, 1)
    s2 = float(e @ e) / dof
    sigma = np.sqrt(np.sum((tau - Y @ theta) ** 2, axis=0) / max(N - p / n, 1.0))
    return _finish(theta, inv, Y, tau, sigma, cond, "ols", s2 * inv)


def wls(Y: ArrayLike, tau: ArrayLike, sigma: ArrayLike | None = None) -> Fit:
    """Weighted least squares with per-joint noise standard deviations.

    Args:
        Y: regressor, shape (N, n, p).
        tau: measured torques, shape (N, n) [N m].
        sigma: noise standard deviation per joint, shape (n,) [N m]; estimated from the OLS
            residuals as ``sigma_j^2 = |e_j|^2 / (N - p / n)`` when None (seed 002 eq. 18-19).

    Returns:
        The fit, with covariance ``(Y' Sigma^-1 Y)^-1`` (the Cramer-Rao bound for Gaussian noise).
    """
    Y, tau = _check(Y, tau)
    N, n, p = Y.shape
    if sigma is None:
        sigma = ols(Y, tau).sigma
    sigma = np.asarray(sigma, dtype=float)
    if sigma.shape != (n,) or np.any(~(sigma > 0.0)):
        raise EstimationError(f"noise standard deviations {sigma.tolist()}: expected {n} values > 0")
    Yw = Y / sigma[None, :, None]
    tw = tau / sigma[None, :]
    flat = Yw.reshape(N * n, p)
    theta, inv, cond = solve_normal_equations(flat.T @ flat, flat.T @ tw.reshape(N * n))
    return _finish(theta, inv, Y, tau, sigma, cond, "wls", inv)


def pulled_to_nominal(Y: ArrayLike, tau: ArrayLike, theta_nominal: ArrayLike, alpha: float) -> Fit:
    """Least squares pulled toward ``theta_nominal`` (seed 001 eq. 105-107).

    Args:
        Y: regressor, shape (N, n, p); need not have full column rank when alpha < 1.
        tau: measured torques, shape (N, n).
        theta_nominal: theta_0, shape (p,).
        alpha: weight of the data in (0, 1]; 1 is plain least squares.

    The covariance reported is the sandwich form of a regularised estimator,
    ``s^2 a^4 A^-1 Y'Y A^-1`` with ``A = a^2 Y'Y + (1-a)^2 I`` and s^2 from the residuals.
    """
    Y, tau = _check(Y, tau)
    if not 0.0 < alpha <= 1.0:
        raise EstimationError(f"alpha = {alpha!r}: expected 0 < alpha <= 1")
    N, n, p = Y.shape
    theta0 = np.asarray(theta_nominal, dtype=float)
    if theta0.shape != (p,):
        raise EstimationError(f"nominal parameters have shape {theta0.shape}: expected ({p},)")
    flat = Y.reshape(N * n, p)
    y = tau.reshape(N * n)
    data_info = alpha**2 * (flat.T @ flat)
    prior = (1.0 - alpha) ** 2
    A = data_info + prior * np.eye(p)
    b = alpha**2 * (flat.T @ y) + prior * theta0
    theta, inv, cond = solve_normal_equations(A, b)
    e = y - flat @ theta
    s2 = float(e @ e) / max(N * n - p, 1)
    covariance = s2 * alpha**2 * inv @ data_info @ inv
    sigma = np.sqrt(np.sum((tau - Y @ theta) ** 2, axis=0) / max(N, 1))
    return _finish(theta, inv, Y, tau, sigma, cond, "nominal", covariance)
