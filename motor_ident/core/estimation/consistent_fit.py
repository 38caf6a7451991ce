"""Physically consistent least squares: the SDP projection and the constrained fit."""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import least_squares

from motor_ident.core.estimation.constraints import PhysicalConstraints, _unit_bodies, min_pseudo_inertia_eigenvalues
from motor_ident.core.estimation.least_squares import FitMetrics, RegressionStatistics
from motor_ident.core.estimation.pseudo_inertia import (
    inertial_from_pseudo_inertia,
    inertial_to_log_cholesky,
    log_cholesky_to_inertial,
    pseudo_inertia,
)
from motor_ident.core.rigid_body.base_params import BaseParameters
from motor_ident.errors import ConfigError, EstimationError

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

TIE_BREAK = 1e-9
"""Relative weight of the pull toward theta_0 when alpha = 1 (keeps unexcited parameters bounded)."""

LOG_RANGE = 25.0
"""Bound on the log-scale log-Cholesky parameters (mass = exp(2 alpha), inertia scales exp(d))."""

LOG_CHOLESKY_MAX_EVALUATIONS = 1000


PSEUDO_INERTIA_BASIS: FloatArray = pseudo_inertia(np.eye(10))


# ---------------------------------------------------------------------------------------------
# Solvers of  min |M theta - c|^2 + mu^2 |theta - theta_0|^2  s.t. constraints
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Solution:
    theta: FloatArray
    status: str
    active: tuple[str, ...]
    seconds: float


class SdpProjector:
    """The constrained least-squares problem compiled once by cvxpy (state: the compiled problem).

    Solves ``min |M theta - c|^2 + mu^2 |theta - theta_0|^2`` over full parameters theta (p,)
    subject to `PhysicalConstraints`, with M (k, p), c (k,), mu and theta_0 as cvxpy parameters,
    so a new solve reuses the canonicalisation (DPP) and costs one Clarabel call.
    """

    def __init__(self, constraints: PhysicalConstraints, rows: int, *, solver: str = "CLARABEL") -> None:
        """Args: the constraints, k (rows of M), the cvxpy solver name (``CLARABEL`` or ``SCS``)."""
        import cvxpy as cp  # here: cvxpy costs ~1.1 s at import (measured, idle)

        self.constraints, self.rows, self.solver = constraints, int(rows), solver
        p, b = constraints.n_parameters, constraints.n_bodies
        self._theta = cp.Variable(p)
        self._M = cp.Parameter((self.rows, p))
        self._c = cp.Parameter(self.rows)
        self._mu = cp.Parameter(nonneg=True)
        self._mu_theta0 = cp.Parameter(p)
        basis = PSEUDO_INERTIA_BASIS.reshape(10, 16).T  # (16, 10): vec(J) = basis @ phi
        phi = cp.reshape(self._theta[constraints.inertial], (b, 10), order="C")
        self._psd = []
        cons = []
        for k in range(b):
            J = cp.Variable((4, 4), PSD=True)
            self._psd.append(cons_k := J == cp.reshape(basis @ phi[k], (4, 4), order="C"))
            cons.append(cons_k)
        self._sign = None
        if constraints.nonnegative.size:
            self._sign = self._theta[constraints.nonnegative] >= 0.0
            cons.append(self._sign)
        for k in range(b):
            lo, hi = constraints.mass_bounds[k]
            if lo > 0.0:
                cons.append(phi[k, 0] >= lo)
            if np.isfinite(hi):
                cons.append(phi[k, 0] <= hi)
            for axis in range(3):
                if np.isfinite(constraints.com_lower[k, axis]):
                    cons.append(phi[k, 1 + axis] >= constraints.com_lower[k, axis] * phi[k, 0])
                if np.isfinite(constraints.com_upper[k, axis]):
                    cons.append(phi[k, 1 + axis] <= constraints.com_upper[k, axis] * phi[k, 0])
        residual = cp.hstack([self._M @ self._theta - self._c, self._mu * self._theta - self._mu_theta0])
        self._problem = cp.Problem(cp.Minimize(cp.norm(residual, 2)), cons)
        if not self._problem.is_dpp():  # pragma: no cover - guards a cvxpy behaviour change
            raise EstimationError("the consistency problem is not DPP: every solve would recompile")

    def solve(self, M: ArrayLike, c: ArrayLike, mu: float, theta0: ArrayLike) -> _Solution:
        """Solve for M (k, p), c (k,), mu >= 0 and theta0 (p,); see the class docstring.

        Raises:
            EstimationError: the solver fails or the constraints are infeasible (bounds too tight).
        """
        import cvxpy as cp  # here: cvxpy costs ~1.1 s at import (measured, idle)

        start = time.perf_counter()
        self._M.value = np.asarray(M, dtype=float)
        self._c.value = np.asarray(c, dtype=float)
        self._mu.value = float(mu)
        self._mu_theta0.value = float(mu) * np.asarray(theta0, dtype=float)
        try:
            with warnings.catch_warnings():  # "may be inaccurate": the status below says so
                warnings.simplefilter("ignore", UserWarning)
                self._problem.solve(solver=self.solver)  # type: ignore[no-untyped-call]  # cvxpy is untyped
        except cp.error.SolverError as exc:
            raise EstimationError(f"the {self.solver} solver failed on the consistency problem: {exc}") from None
        status = str(self._problem.status)
        if status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or self._theta.value is None:
            raise EstimationError(
                f"consistent estimation: solver status {status!r} (mass or centre-of-mass bounds infeasible?)"
            )
        return _Solution(
            theta=np.asarray(self._theta.value, dtype=float).copy(),
            status=status,
            active=self._active(),
            seconds=time.perf_counter() - start,
        )

    def _active(self) -> tuple[str, ...]:
        """Constraints with a clearly non-zero dual: the ones that held the estimate back."""
        duals = [float(np.linalg.norm(c.dual_value)) if c.dual_value is not None else 0.0 for c in self._psd]
        sign_duals = (
            np.abs(np.asarray(self._sign.dual_value, dtype=float))
            if self._sign is not None and self._sign.dual_value is not None
            else np.zeros(0)
        )
        largest = max([*duals, *sign_duals.tolist(), 0.0])
        if largest <= 0.0:
            return ()
        names = [
            f"link {body} pseudo-inertia" for body, d in zip(self.constraints.body_names, duals) if d > 1e-4 * largest
        ]
        names += [
            f"{self.constraints.names[i]} >= 0"
            for i, d in zip(self.constraints.nonnegative, sign_duals)
            if d > 1e-4 * largest
        ]
        return tuple(names)


def _solve_log_cholesky(
    constraints: PhysicalConstraints,
    M: FloatArray,
    c: FloatArray,
    mu: float,
    theta0: FloatArray,
    theta_start: FloatArray,
) -> _Solution:
    """Same problem as `SdpProjector` through log-Cholesky parameters and bounded least squares."""
    start = time.perf_counter()
    p, b = constraints.n_parameters, constraints.n_bodies
    inertial = np.arange(p)[constraints.inertial]
    other = np.setdiff1d(np.arange(p), inertial)
    # Start: each body's pseudo-inertia made positive definite (eigenvalues clipped), signs clipped.
    phi_start = constraints.body_parameters(theta_start).copy()
    for k in range(b):
        w, V = np.linalg.eigh(pseudo_inertia(phi_start[k]))
        floor = 1e-6 * max(w[-1], 1e-9)
        phi_start[k] = inertial_from_pseudo_inertia((V * np.maximum(w, floor)) @ V.T)
    lower = np.full(10 * b + other.size, -np.inf)
    upper = np.full(10 * b + other.size, np.inf)
    for k in range(b):
        # Log-scale parameters (alpha, d1..d3) within +-LOG_RANGE: exp() cannot overflow while the
        # solver explores, and no real body is lost (masses from e^-50 to e^50 kg).
        lower[10 * k : 10 * k + 4], upper[10 * k : 10 * k + 4] = -LOG_RANGE, LOG_RANGE
        lo, hi = constraints.mass_bounds[k]
        if lo > 0.0:
            lower[10 * k] = max(0.5 * np.log(lo), -LOG_RANGE)
        if np.isfinite(hi):
            upper[10 * k] = min(0.5 * np.log(hi), LOG_RANGE)
        lower[10 * k + 7 : 10 * k + 10] = constraints.com_lower[k]
        upper[10 * k + 7 : 10 * k + 10] = constraints.com_upper[k]
    position = {int(i): j for j, i in enumerate(other)}
    for i in constraints.nonnegative:
        lower[10 * b + position[int(i)]] = 0.0
    x0 = np.concatenate([np.concatenate([inertial_to_log_cholesky(phi) for phi in phi_start]), theta_start[other]])
    span = np.where(np.isfinite(upper - lower), upper - lower, 1.0)
    x0 = np.clip(x0, lower + 1e-9 * span, upper - 1e-9 * span)

    def theta_of(x: FloatArray) -> tuple[FloatArray, FloatArray]:
        theta = np.empty(p)
        dtheta = np.zeros((p, x.size))
        for k in range(b):
            phi, jac = log_cholesky_to_inertial(x[10 * k : 10 * k + 10])
            theta[inertial[10 * k : 10 * k + 10]] = phi
            dtheta[np.ix_(inertial[10 * k : 10 * k + 10], np.arange(10 * k, 10 * k + 10))] = jac
        theta[other] = x[10 * b :]
        dtheta[other, 10 * b + np.arange(other.size)] = 1.0
        return theta, dtheta

    def residual(x: FloatArray) -> FloatArray:
        theta, _ = theta_of(x)
        return np.concatenate([M @ theta - c, mu * (theta - theta0)])

    def jacobian(x: FloatArray) -> FloatArray:
        _, dtheta = theta_of(x)
        return np.vstack([M @ dtheta, mu * dtheta])

    result = least_squares(
        residual,
        x0,
        jac=jacobian,
        bounds=(lower, upper),
        method="trf",
        x_scale="jac",
        xtol=1e-12,
        ftol=1e-12,
        max_nfev=LOG_CHOLESKY_MAX_EVALUATIONS,
    )
    theta, _ = theta_of(result.x)
    return _Solution(theta=theta, status=str(result.message), active=(), seconds=time.perf_counter() - start)


# ---------------------------------------------------------------------------------------------
# Consistent estimation from sufficient statistics
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ConsistentFit:
    """Result of `consistent_least_squares`.

    Attributes:
        theta: physically valid full parameters, shape (p,).
        theta_data: the parameters of the statistics' regressor, ``P theta`` (r,) for base
            statistics, theta itself for full ones.
        metrics: R^2, RMSE, ... per joint of ``theta_data`` on the statistics' samples.
        min_eigenvalue: smallest pseudo-inertia eigenvalue per body, shape (b,).
        active: constraints that held the estimate back (names; SDP only).
        method: ``sdp`` or ``log_cholesky``; status: the solver's final status; seconds: solve time.
    """

    theta: FloatArray
    theta_data: FloatArray
    metrics: FitMetrics
    min_eigenvalue: FloatArray
    active: tuple[str, ...]
    method: str
    status: str
    seconds: float


def _information_factor(A: FloatArray, b: FloatArray) -> tuple[FloatArray, FloatArray]:
    """F (r, r), g (r,) with F'F = A and F'g = b, for a symmetric PSD A (r, r) and b in range(A)."""
    s, V = np.linalg.eigh(0.5 * (A + A.T))
    keep = s > max(s[-1], 0.0) * 1e-14
    root = np.sqrt(np.where(keep, s, 0.0))
    F = root[:, None] * V.T
    g = np.where(keep, (V.T @ b) / np.where(keep, root, 1.0), 0.0)
    return F, g


def consistent_least_squares(
    stats: RegressionStatistics,
    constraints: PhysicalConstraints,
    *,
    base: BaseParameters | None = None,
    theta_nominal: ArrayLike | None = None,
    alpha: float = 1.0,
    sigma: ArrayLike | None = None,
    method: str = "sdp",
    solver: str = "CLARABEL",
) -> ConsistentFit:
    """Least squares over physically valid full parameters (pseudo-inertias PSD, friction signs).

    Minimises ``alpha^2 sum_j |Y_j P theta - tau_j|^2 / sigma_j^2 + (1 - alpha)^2 |theta - theta_0|^2``
    (Kolathaya et al. 2016, eq. 105 in squared form) over full theta subject to ``constraints``.

    Args:
        stats: sufficient statistics of the base regressor (``stats.p == base.n_base``) or of
            the full regressor (``stats.p == p``, ``base`` None).
        constraints: from `physical_constraints` (optionally `boxes_around`).
        base: the base-parameter map P when the statistics are on base parameters.
        theta_nominal: full nominal parameters theta_0 (p,) for the pull and the start; zeros
            when None (then ``log_cholesky`` needs ``alpha = 1`` and starts from unit bodies).
        alpha: data weight in (0, 1]; 1 = no pull (a ``TIE_BREAK`` pull fixes unexcited directions).
        sigma: per-joint noise standard deviation (n,) [N m] for a weighted fit; None = unweighted.
        method: ``sdp`` (cvxpy + ``solver``) or ``log_cholesky`` (scipy least squares).
        solver: cvxpy solver for ``sdp``: ``CLARABEL`` or ``SCS``.

    Raises:
        EstimationError: no samples, wrong sizes, or the solver fails.
    """
    if stats.count <= 0:
        raise EstimationError("no samples to estimate from")
    if not 0.0 < alpha <= 1.0:
        raise EstimationError(f"alpha = {alpha!r}: expected 0 < alpha <= 1")
    p = constraints.n_parameters
    P = np.eye(p) if base is None else base.projection
    if stats.p != P.shape[0] or P.shape[1] != p:
        raise EstimationError(
            f"statistics have {stats.p} parameters: expected {P.shape[0]} (base map {P.shape}, {p} full parameters)"
        )
    theta0 = np.zeros(p) if theta_nominal is None else np.asarray(theta_nominal, dtype=float)
    if theta0.shape != (p,):
        raise EstimationError(f"theta_nominal has shape {theta0.shape}: expected ({p},)")
    w = np.ones(stats.n) if sigma is None else 1.0 / np.asarray(sigma, dtype=float) ** 2
    if w.shape != (stats.n,) or not np.all(np.isfinite(w) & (w > 0.0)):
        raise EstimationError(f"sigma = {np.asarray(sigma).tolist()}: expected {stats.n} values > 0 [N m]")
    F, g = _information_factor(np.einsum("j,jik->ik", w, stats.A), w @ stats.b)
    M, c = alpha * F @ P, alpha * g
    scale = max(float(np.linalg.norm(c)), float(np.linalg.norm(M @ theta0)), 1e-12)
    M, c = M / scale, c / scale  # objective O(1) at theta_0: solver tolerances become relative
    if alpha < 1.0:
        mu = (1.0 - alpha) / scale
    else:
        mu = np.sqrt(TIE_BREAK) * float(np.linalg.norm(M)) / np.sqrt(p)
    if method == "sdp":
        solution = SdpProjector(constraints, M.shape[0], solver=solver).solve(M, c, mu, theta0)
    elif method == "log_cholesky":
        start = theta0 if theta_nominal is not None else _unit_bodies(constraints)
        solution = _solve_log_cholesky(constraints, M, c, mu, theta0, start)
    else:
        raise ConfigError(f"method = {method!r}: expected 'sdp' or 'log_cholesky'")
    theta_data = P @ solution.theta
    return ConsistentFit(
        theta=solution.theta,
        theta_data=theta_data,
        metrics=stats.metrics(theta_data),
        min_eigenvalue=min_pseudo_inertia_eigenvalues(solution.theta, constraints),
        active=solution.active,
        method=method,
        status=solution.status,
        seconds=solution.seconds,
    )
