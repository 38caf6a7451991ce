"""Least-squares estimators on stacked regressor data, with covariance and fit metrics.

Data layout everywhere: regressor ``Y`` of shape (N, n, p) (N samples, n joints, p parameters)
and measured torques ``tau`` of shape (N, n). Estimators:

- `ols`: ordinary least squares (Kolathaya et al. 2016, eq. 102, Szabó & Szádeczky-Kardoss 2021, eq. 17).
- `wls`: weighted least squares with per-joint noise variances, estimated from the OLS
  residuals when not given (Szabó & Szádeczky-Kardoss 2021, eq. 18-19, Liu et al. 2023, eq. 19-21).
- `gls`: generalised least squares with the full n x n covariance of the joint torque noise at one
  sample (per-joint variances and the cross-joint covariances), estimated from the OLS residuals
  when not given (Liu et al. 2023, eq. 21-22). The noise is taken as independent from sample to
  sample with the same covariance at every sample: the block-diagonal Omega of eq. 22 with
  identical n x n blocks. It needs the cross-joint statistics (``RegressionStatistics(...,
  cross=True)``).
- `pulled_to_nominal`: least squares pulled toward a nominal theta_0 with weight alpha (Kolathaya et al. 2016,
  eq. 105-107). Eq. 105 is printed with plain norms, but its stated solution eq. 106-107 stacks
  ``[alpha Y; (1 - alpha) I]``, which minimises the squared form
  ``alpha^2 |U - Y theta|^2 + (1 - alpha)^2 |theta - theta_0|^2``; that is what is solved here.

Their covariances are the textbook ones (white residuals); `motor_ident.core.estimation.
identification.identify` replaces them by the sandwich of `motor_ident.core.estimation.covariance`,
which includes the residuals' correlation.

All solve the normal equations after scaling the columns to unit norm (tall QR is slow on small
machines; scaled normal equations are accurate for the well-conditioned base regressors used
here, and the condition number is reported so a caller can refuse a poor one).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import scipy.linalg
import scipy.linalg.lapack
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
        r2_uncentred: Kolathaya et al. 2016, eq. 104, 1 - e'e / U'U per joint, shape (n,).
        nrmse: RMS residual over the range of the measurement per joint, shape (n,).
        rmse: RMS residual per joint, shape (n,) [N m].
        method: ``ols``, ``wls``, ``gls`` or ``nominal``.
        n_samples: N.
        noise_covariance: the n x n noise covariance ``gls`` weighted with [N^2 m^2] (None for
            the other estimators).
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
    noise_covariance: FloatArray | None = None

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
    """R^2 (centred and Kolathaya et al.'s uncentred), NRMSE and RMSE per joint.

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


_potrf, _potrs, _pocon = scipy.linalg.lapack.dpotrf, scipy.linalg.lapack.dpotrs, scipy.linalg.lapack.dpocon


def solve_theta(A: ArrayLike, b: ArrayLike) -> tuple[FloatArray, float]:
    """Fast solve of ``A x = b`` (A symmetric positive definite, (p, p)) for a refit loop.

    Only the solution and a condition number estimate: Cholesky of the column-equilibrated A and
    LAPACK's O(p^2) reciprocal-condition estimate (1-norm), no eigenvalues and no inverse.
    Returns the solution and the estimated condition number of the underlying regressor
    (sqrt of A's, scaled columns).

    Raises:
        EstimationError: A is singular or a parameter has no excitation.
    """
    A = np.asarray(A, dtype=float)
    d = np.sqrt(np.diag(A))
    if not np.all(np.isfinite(A)) or np.any(~(d > 0.0)):
        zero = np.flatnonzero(~(d > 0.0))
        raise EstimationError(f"parameters {zero.tolist()} are not excited by the data (zero column)")
    inv_d = 1.0 / d
    scaled = A * inv_d[:, None] * inv_d[None, :]
    chol, info = _potrf(scaled, lower=1, clean=0)
    if info != 0:
        raise EstimationError("the information matrix is singular")
    rcond, _ = _pocon(chol, float(np.abs(scaled).sum(axis=0).max()), uplo="L")
    x, _ = _potrs(chol, np.asarray(b, dtype=float) * inv_d, lower=1)
    x *= inv_d
    return x, float(np.sqrt(1.0 / rcond)) if rcond > 0.0 else float("inf")


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


class RegressionStatistics:
    """Per-joint sufficient statistics of ``tau = Y theta + noise``, accumulated chunk by chunk.

    For each joint j it keeps ``A_j = Y_j'Y_j`` (p, p), ``b_j = Y_j'tau_j`` (p,), ``tau_j'tau_j``,
    ``sum tau_j``, the sample count and the range of tau_j. Every estimator here (OLS, WLS, pulled
    to nominal) and every fit metric (R^2 both ways, RMSE, NRMSE) is a function of these, so a
    10-minute recording is identified in chunks with memory independent of its length, and the
    sliding window of the online identifier adds and removes samples in O(n p^2).

    A sample may leave out some joints' equations (``mask`` in `add`: a joint near rest, where
    dry friction fits no model). ``counts`` (n,) holds the equations per joint and every per-joint
    metric (the mean of tau_j for the centred R^2, RMSE, sigma_j) divides by it; ``count`` is the
    samples with at least one equation. Without masks ``counts`` equals ``count`` for every joint.

    With ``cross=True`` it also keeps the cross-joint products ``Y_i'Y_j`` (n, p, n, p),
    ``Y_i'tau_j`` (n, p, n) and ``tau_i'tau_j`` (n, n) that `gls` needs (n^2 p^2 numbers: 1 MB for
    6 joints and 60 base parameters; one (N, n p) x (N, n p) product per chunk).
    """

    def __init__(self, n: int, p: int, *, cross: bool = False) -> None:
        self.n, self.p = n, p
        self.cross_A: FloatArray | None = np.zeros((n, p, n, p)) if cross else None
        self.cross_b: FloatArray | None = np.zeros((n, p, n)) if cross else None
        self.cross_yy: FloatArray | None = np.zeros((n, n)) if cross else None
        self.masked = False  # some equations were left out (gls then refuses: see `gls`)
        self.A = np.zeros((n, p, p))
        self.b = np.zeros((n, p))
        self.yy = np.zeros(n)
        self.ysum = np.zeros(n)
        self.count = 0.0
        self.counts = np.zeros(n)
        self.ymin = np.full(n, np.inf)
        self.ymax = np.full(n, -np.inf)

    @classmethod
    def from_arrays(cls, Y: ArrayLike, tau: ArrayLike, *, cross: bool = False) -> RegressionStatistics:
        """Statistics of a whole data set: Y (N, n, p), tau (N, n) (``cross``: keep what `gls` needs)."""
        Y, tau = _check(Y, tau)
        stats = cls(Y.shape[1], Y.shape[2], cross=cross)
        stats.add(Y, tau)
        return stats

    def add(self, Y: FloatArray, tau: FloatArray, weight: float = 1.0, mask: NDArray[np.bool_] | None = None) -> None:
        """Add samples Y (N, n, p), tau (N, n) with a weight (-1 removes them again).

        ``mask`` (N, n) bool: the equations used (False leaves joint j of sample k out: its
        regressor row and torque); None uses all. Removing samples needs the mask they were added with.
        """
        if mask is not None:
            mask = np.asarray(mask, dtype=bool)
            if mask.shape != tau.shape:
                raise DataError(f"mask {mask.shape}: expected the torques' shape {tau.shape}")
            Y = np.where(mask[:, :, None], Y, 0.0)
            tau = np.where(mask, tau, 0.0)
            self.masked = self.masked or not bool(mask.all())
        if self.cross_A is not None and self.cross_b is not None and self.cross_yy is not None:
            flat = Y.reshape(Y.shape[0], -1)  # (N, n p): all joints' rows of a sample side by side
            self.cross_A += weight * (flat.T @ flat).reshape(self.n, self.p, self.n, self.p)
            self.cross_b += weight * (flat.T @ tau).reshape(self.n, self.p, self.n)
            self.cross_yy += weight * (tau.T @ tau)
        if Y.shape[0] == 1:  # one sample: outer products, no matrix product machinery
            outer = Y[0][:, :, None] * Y[0][:, None, :]
            yb = Y[0] * tau[0][:, None]
        else:
            Yt = Y.transpose(1, 2, 0)  # (n, p, N): one batched matrix product per joint
            outer = Yt @ Yt.transpose(0, 2, 1)
            yb = (Yt @ tau.T[:, :, None])[:, :, 0]
        if weight != 1.0:
            outer *= weight
            yb *= weight
        self.A += outer
        self.b += yb
        self.yy += weight * np.einsum("sj,sj->j", tau, tau)
        self.ysum += weight * tau.sum(axis=0)
        if mask is None:
            self.count += weight * Y.shape[0]
            self.counts += weight * Y.shape[0]
        else:
            self.count += weight * float(np.count_nonzero(mask.any(axis=1)))
            self.counts += weight * np.count_nonzero(mask, axis=0)
        if weight > 0.0 and tau.shape[0]:
            if mask is None:
                self.ymin = np.minimum(self.ymin, tau.min(axis=0))
                self.ymax = np.maximum(self.ymax, tau.max(axis=0))
            else:
                self.ymin = np.minimum(self.ymin, np.where(mask, tau, np.inf).min(axis=0))
                self.ymax = np.maximum(self.ymax, np.where(mask, tau, -np.inf).max(axis=0))

    def merge(self, other: RegressionStatistics) -> None:
        """Add the samples of ``other`` (statistics of another chunk of the same problem), exactly.

        Raises:
            EstimationError: the two have different joint or parameter counts.
        """
        if (other.n, other.p) != (self.n, self.p):
            raise EstimationError(
                f"statistics of {other.n} x {other.p} (joints x parameters): expected {self.n} x {self.p}"
            )
        self.A += other.A
        self.b += other.b
        self.yy += other.yy
        self.ysum += other.ysum
        self.count += other.count
        self.counts += other.counts
        self.ymin = np.minimum(self.ymin, other.ymin)
        self.ymax = np.maximum(self.ymax, other.ymax)
        self.masked = self.masked or other.masked
        if self.cross_A is not None:
            if other.cross_A is None or other.cross_b is None or other.cross_yy is None:
                raise EstimationError("merging statistics without cross-joint products into ones with them")
            self.cross_A += other.cross_A
            self.cross_b += other.cross_b  # type: ignore[operator]
            self.cross_yy += other.cross_yy  # type: ignore[operator]

    def scale(self, factor: float) -> None:
        """Multiply every statistic by ``factor`` (exponential forgetting)."""
        for array in (self.A, self.b, self.yy, self.ysum, self.counts, self.cross_A, self.cross_b, self.cross_yy):
            if array is not None:
                array *= factor
        self.count *= factor

    @property
    def equations(self) -> float:
        """Equations (joint rows) in the statistics: ``count * n`` without masks, else ``sum(counts)``."""
        if np.all(self.counts == self.count):
            return self.count * self.n
        return float(self.counts.sum())

    def sse(self, theta: ArrayLike) -> FloatArray:
        """Residual sum of squares per joint for ``theta``: y'y - 2 theta'b + theta'A theta, shape (n,)."""
        theta = np.asarray(theta, dtype=float)
        sse = self.yy - 2.0 * self.b @ theta + (self.A @ theta) @ theta
        out: FloatArray = np.maximum(sse, 0.0)
        return out

    def metrics(self, theta: ArrayLike) -> FitMetrics:
        """R^2 (centred and uncentred), RMSE and NRMSE per joint of the samples for ``theta``."""
        sse = self.sse(theta)
        count = np.maximum(self.counts, 1e-300)
        sst = self.yy - self.ysum**2 / count
        with np.errstate(divide="ignore", invalid="ignore"):
            r2 = np.where(sst > 0.0, 1.0 - sse / np.where(sst > 0.0, sst, 1.0), np.where(sse > 0.0, -np.inf, 1.0))
            r2u = np.where(
                self.yy > 0.0, 1.0 - sse / np.where(self.yy > 0.0, self.yy, 1.0), np.where(sse > 0.0, -np.inf, 1.0)
            )
        rmse = np.sqrt(sse / count)
        span = np.where(np.isfinite(self.ymax - self.ymin), self.ymax - self.ymin, 0.0)
        nrmse = np.where(span > 0.0, rmse / np.where(span > 0.0, span, 1.0), np.where(rmse > 0.0, np.inf, 0.0))
        return FitMetrics(r2=r2, r2_uncentred=r2u, nrmse=nrmse, rmse=rmse)

    def _fit(self, theta: FloatArray, covariance: FloatArray, sigma: FloatArray, cond: float, method: str) -> Fit:
        m = self.metrics(theta)
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
            n_samples=int(round(self.count)),
        )

    def _require_samples(self) -> None:
        if self.count <= 0:
            raise EstimationError("no samples to estimate from")

    def ols(self) -> Fit:
        """Ordinary least squares; covariance ``s^2 (Y'Y)^-1`` with s^2 = e'e / (N n - p).

        N n is the number of equations (`equations`); sigma_j^2 = |e_j|^2 / (N_j - p / n) with
        N_j the equations of joint j.
        """
        self._require_samples()
        theta, inv, cond = solve_normal_equations(self.A.sum(axis=0), self.b.sum(axis=0))
        sse = self.sse(theta)
        s2 = float(sse.sum()) / max(self.equations - self.p, 1.0)
        sigma = np.sqrt(sse / np.maximum(self.counts - self.p / self.n, 1.0))
        return self._fit(theta, s2 * inv, sigma, cond, "ols")

    def wls(self, sigma: ArrayLike | None = None) -> Fit:
        """Weighted least squares with per-joint noise std ``sigma`` (n,) [N m].

        When ``sigma`` is None it is estimated from the OLS residuals as
        ``sigma_j^2 = |e_j|^2 / (N - p / n)`` (Szabó & Szádeczky-Kardoss 2021, eq. 18-19). The covariance is
        ``(Y' Sigma^-1 Y)^-1``, the Cramer-Rao bound for Gaussian noise.
        """
        self._require_samples()
        sigma = self.ols().sigma if sigma is None else np.asarray(sigma, dtype=float)
        if sigma.shape != (self.n,) or np.any(~(sigma > 0.0)):
            raise EstimationError(
                f"noise standard deviations {np.asarray(sigma).tolist()}: expected {self.n} values > 0"
            )
        w = 1.0 / sigma**2
        theta, inv, cond = solve_normal_equations(np.einsum("j,jik->ik", w, self.A), w @ self.b)
        return self._fit(theta, inv, sigma, cond, "wls")

    def residual_covariance(self, theta: ArrayLike) -> FloatArray:
        """Cross-joint residual covariance of ``theta``, ``e_i'e_j / (N - p / n)``, shape (n, n) [N^2 m^2].

        Its diagonal is the per-joint variance of `ols` and `wls` (the same degrees of freedom);
        Liu et al. 2023, eq. 22 divides by N - p instead, which changes the scale of the
        covariance only, not the `gls` estimate.

        Raises:
            EstimationError: the statistics have no cross-joint products.
        """
        if self.cross_A is None or self.cross_b is None or self.cross_yy is None:
            raise EstimationError("the residual covariance needs cross-joint statistics (cross=True)")
        theta = np.asarray(theta, dtype=float)
        Yt_tau = np.einsum("ipj,p->ij", self.cross_b, theta)  # theta' Y_i' tau_j
        products = self.cross_yy - Yt_tau - Yt_tau.T + np.einsum("p,ipjq,q->ij", theta, self.cross_A, theta)
        out: FloatArray = products / max(self.count - self.p / self.n, 1.0)
        return 0.5 * (out + out.T)

    def gls(self, noise_covariance: ArrayLike | None = None) -> Fit:
        """Generalised least squares with the full noise covariance of one sample (Liu et al. 2023, eq. 21-22).

        ``theta = (sum_k Y_k' W Y_k)^-1 sum_k Y_k' W tau_k`` with ``W = Omega^-1``, Y_k (n, p) the
        rows of sample k. ``Omega`` (n, n) [N^2 m^2] is estimated from the OLS residuals
        (`residual_covariance`) when None. Covariance of the estimate ``(sum_k Y_k' W Y_k)^-1``.
        With a diagonal Omega this is `wls`.

        Raises:
            EstimationError: no cross-joint statistics, equations left out by a mask (the blocks
                of Omega would no longer be identical), or Omega not positive definite.
        """
        self._require_samples()
        if self.cross_A is None or self.cross_b is None:
            raise EstimationError("gls needs cross-joint statistics: RegressionStatistics(cross=True)")
        if self.masked:
            raise EstimationError("gls needs every joint's equation at every sample: use wls when some are left out")
        omega = (
            self.residual_covariance(self.ols().theta)
            if noise_covariance is None
            else np.asarray(noise_covariance, dtype=float)
        )
        if omega.shape != (self.n, self.n) or not np.all(np.isfinite(omega)):
            raise EstimationError(f"noise covariance of shape {omega.shape}: expected finite ({self.n}, {self.n})")
        try:
            np.linalg.cholesky(omega)
        except np.linalg.LinAlgError:
            raise EstimationError("the noise covariance is not positive definite") from None
        W = np.linalg.inv(omega)
        info = np.einsum("ij,ipjq->pq", W, self.cross_A)
        theta, inv, cond = solve_normal_equations(0.5 * (info + info.T), np.einsum("ij,ipj->p", W, self.cross_b))
        fit = self._fit(theta, inv, np.sqrt(np.diag(omega)), cond, "gls")
        return replace(fit, noise_covariance=omega)

    def pulled_to_nominal(self, theta_nominal: ArrayLike, alpha: float) -> Fit:
        """Least squares pulled toward ``theta_nominal`` with data weight ``alpha`` (Kolathaya et al. 2016, eq. 105).

        The covariance is the sandwich form of a regularised estimator,
        ``s^2 a^4 A^-1 Y'Y A^-1`` with ``A = a^2 Y'Y + (1-a)^2 I`` and s^2 from the residuals.
        """
        self._require_samples()
        if not 0.0 < alpha <= 1.0:
            raise EstimationError(f"alpha = {alpha!r}: expected 0 < alpha <= 1")
        theta0 = np.asarray(theta_nominal, dtype=float)
        if theta0.shape != (self.p,):
            raise EstimationError(f"nominal parameters have shape {theta0.shape}: expected ({self.p},)")
        info = self.A.sum(axis=0)
        prior = (1.0 - alpha) ** 2
        theta, inv, cond = solve_normal_equations(
            alpha**2 * info + prior * np.eye(self.p), alpha**2 * self.b.sum(axis=0) + prior * theta0
        )
        sse = self.sse(theta)
        s2 = float(sse.sum()) / max(self.equations - self.p, 1.0)
        covariance = s2 * alpha**4 * inv @ info @ inv
        sigma = np.sqrt(sse / np.maximum(self.counts, 1.0))
        return self._fit(theta, covariance, sigma, cond, "nominal")


def ols(Y: ArrayLike, tau: ArrayLike) -> Fit:
    """Ordinary least squares on Y (N, n, p), tau (N, n); see `RegressionStatistics.ols`.

    Y must have full column rank (use the base regressor).
    """
    return RegressionStatistics.from_arrays(Y, tau).ols()


def wls(Y: ArrayLike, tau: ArrayLike, sigma: ArrayLike | None = None) -> Fit:
    """Weighted least squares on Y (N, n, p), tau (N, n); see `RegressionStatistics.wls`."""
    return RegressionStatistics.from_arrays(Y, tau).wls(sigma)


def gls(Y: ArrayLike, tau: ArrayLike, noise_covariance: ArrayLike | None = None) -> Fit:
    """Generalised least squares on Y (N, n, p), tau (N, n); see `RegressionStatistics.gls`."""
    return RegressionStatistics.from_arrays(Y, tau, cross=True).gls(noise_covariance)


def pulled_to_nominal(Y: ArrayLike, tau: ArrayLike, theta_nominal: ArrayLike, alpha: float) -> Fit:
    """Least squares pulled toward a nominal theta_0 (Kolathaya et al. 2016, eq. 105-107); Y need not have full rank."""
    return RegressionStatistics.from_arrays(Y, tau).pulled_to_nominal(theta_nominal, alpha)
