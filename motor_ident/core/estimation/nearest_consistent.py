"""The physically consistent full parameters nearest to the nominal URDF that reproduce the identified ones.

The data fix only the base parameters ``theta_b = P theta`` (combinations of the links' masses,
first moments and inertias); a simulator needs every link. Of all physically consistent full
parameter sets that reproduce the identified base parameters within their uncertainty, this
picks the one nearest to the nominal URDF:

    minimise    sum_k D(J_k || J0_k) / r^2  +  |P theta - theta_b|^2_C / 2  +  w sum_i ((theta_i - theta0_i) / s_i)^2
    subject to  |P theta - theta_b|_C <= sqrt(d_min^2 + chi2_b(level)),  J_k positive definite,
                friction with its sign,

with ``J_k`` the 4 x 4 pseudo-inertia of body k, ``D(J || J0) = tr(J0^-1 J) - log det(J0^-1 J) - 4``
the log-det (Bregman) divergence of pseudo-inertias (Lee, Wensing & Park 2020 use it to pull an
estimate toward a prior: it is invariant to the choice of units and frames, and infinite at a
body that is not physically realisable), ``r`` = `PRIOR_RELATIVE_SPREAD` (how far real links are
trusted to be from the URDF's), ``|x|_C = sqrt(x' C^-1 x)`` the Mahalanobis norm in the base
parameters' covariance C (`motor_ident.core.estimation.covariance`), ``chi2_b(level)`` the
chi-square quantile with b degrees of freedom, ``d_min`` the smallest distance a consistent set
reaches (0 unless the estimate itself is not physically consistent), and the last sum a
tie-break (``w`` = `OTHER_WEIGHT`, ``s_i = max(|theta0_i|, 1e-3)``) on friction and rotor
inertias, which the data determine and a URDF does not hold. Read as Bayes: the divergence
(locally ``delta' H delta / 2``) is a prior of relative spread r around the URDF, the
Mahalanobis term the data; the ellipsoid keeps the result within the ``level`` confidence region
of the identified base parameters. The problem is convex (log-det and second-order cones) and is
solved by Clarabel through cvxpy; ``d_min`` by the consistent least squares' SDP (`SdpProjector`).

Which link masses the data determine, from the same prior and data linearised at the nominal
(posterior covariance ``(H / r^2 + P' C^-1 P)^-1``): ``determined`` when a mass's posterior
standard deviation is at most `DETERMINED_STD` of it (its 95 % interval within about +-15 %),
``undetermined`` when the data leave more than `UNDETERMINED_RATIO` of its prior standard
deviation (the export keeps it at the nominal), ``partly`` in between (the data move it together
with other links' parameters: only combinations are known).

A covariance that is not positive definite (the sandwich estimate keeps only the positive part of
its long-run covariance: on a real arm's log some combinations of the base parameters get no
variance at all, rank 22 of 32 on a Stäubli TX40's joints 1-4) is replaced by a positive
definite surrogate before it is used (`positive_definite_covariance`): shrunk toward its own
diagonal, ``(1 - a) C + a diag(C)`` with ``a`` = `SHRINKAGE` (the target of Ledoit & Wolf 2004's
shrinkage). Each base parameter keeps its standard deviation, their correlations shrink by
``1 - a``, and a combination the estimate gave no variance gets ``a`` times the variance it
would have with independent parameters, instead of none (which would pin it exactly, and makes
the Cholesky factor the distance needs fail). Measured on the TX40's joints 1-4 (5.4 s at
5 kHz): with ``a`` = 0.001, 0.01 and 0.1 the ordinary least squares' export moves link 2 from
3.6 kg to 10.4, 10.2 and 8.8 kg (the data are 8 standard units from any consistent set near the
URDF: the links move wherever the Mahalanobis bound lets them); giving the missing directions
the correlation spectrum's mean variance instead (a pseudo-inverse on the determined subspace
with a floor) gave 8.0 kg. Covariances that are positive definite are used as they are.

Rejected: the smallest Mahalanobis distance alone (the consistent least squares with a negligible
pull toward the nominal, which ``identify --method sdp`` solves): the base parameters leave most
link parameters free, and the solver parks them on the boundary of the consistent set; on a real
6-DoF arm its link masses added up to 61 kg for a URDF of 28.7 kg.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.estimation.consistent_fit import PSEUDO_INERTIA_BASIS, SdpProjector
from motor_ident.core.estimation.constraints import PhysicalConstraints
from motor_ident.core.estimation.pseudo_inertia import pseudo_inertia
from motor_ident.errors import EstimationError

FloatArray = NDArray[np.float64]

METRIC = "log-det divergence of the pseudo-inertias, tr(J0^-1 J) - log det(J0^-1 J) - 4, summed over the links"
"""One line naming the distance, as the command prints it."""

PRIOR_RELATIVE_SPREAD = 0.3
"""Relative spread of the nominal links assumed when telling which masses the data determine [-]."""

DETERMINED_STD = 0.075
"""A mass is determined when its posterior standard deviation is below this fraction of it (95 %: +-15 %) [-]."""

UNDETERMINED_RATIO = 0.98
"""A mass is undetermined when the data leave more than this fraction of its prior standard deviation [-]."""

OTHER_WEIGHT = 1e-6
"""Weight of the friction and rotor-inertia pull: a tie-break only (the data determine those, a URDF has none)."""

SHRINKAGE = 0.1
"""Shrinkage of a covariance that is not positive definite toward its diagonal (module docstring) [-]."""

SINGULAR = 1e-12
"""A covariance whose correlation matrix has an eigenvalue below this is treated as singular [-]."""

REGULARISE = 1e-6
"""Nominal pseudo-inertias get this fraction of their largest eigenvalue added (massless or flat URDF links)."""


@dataclass(frozen=True, eq=False)
class NearestConsistent:
    """Result of `nearest_consistent`.

    Attributes:
        theta: the exported full parameters, shape (p,).
        divergence: D(J_k || J0_k) per body, shape (b,) [-].
        mahalanobis: distance of ``P theta`` from the identified base parameters in their
            covariance [-]; radius: the bound it was allowed.
        mass_nominal, mass: per body [kg], shape (b,).
        mass_std: posterior standard deviation of each mass, shape (b,) [kg] (module docstring).
        mass_class: per body ``determined``, ``partly`` or ``undetermined`` (module docstring).
        com_nominal, com: centre of mass per body in its frame, shape (b, 3) [m].
        covariance_rank: rank of the covariance given; shrinkage: the ``a`` applied to it (0:
            positive definite, used as it is).
        status: the solver's; seconds: solve time.
    """

    theta: FloatArray
    divergence: FloatArray
    mahalanobis: float
    radius: float
    mass_nominal: FloatArray
    mass: FloatArray
    mass_std: FloatArray
    mass_class: tuple[str, ...]
    com_nominal: FloatArray
    com: FloatArray
    covariance_rank: int
    shrinkage: float
    status: str
    seconds: float

    @property
    def distance(self) -> float:
        """Total divergence from the nominal links [-]."""
        return float(self.divergence.sum())

    @property
    def com_shift(self) -> FloatArray:
        """Distance of each exported centre of mass from the nominal one, shape (b,) [m]."""
        return np.asarray(np.linalg.norm(self.com - self.com_nominal, axis=1), dtype=float)


def positive_definite_covariance(covariance: ArrayLike) -> tuple[FloatArray, int, float]:
    """A positive definite covariance to measure distances with (module docstring), its input's rank, the shrinkage.

    Args:
        covariance: C (b, b), symmetric positive semidefinite, possibly singular.

    Returns:
        C itself when positive definite (shrinkage 0), else ``(1 - a) C + a diag(C)`` with ``a`` =
        `SHRINKAGE`; the rank of C; ``a``.

    Raises:
        EstimationError: C is not square and finite, or a variance on its diagonal is not positive.
    """
    C = np.asarray(covariance, dtype=float)
    if C.ndim != 2 or C.shape[0] != C.shape[1] or not np.all(np.isfinite(C)):
        raise EstimationError(f"the base parameters' covariance (shape {C.shape}) is not a finite square matrix")
    C = 0.5 * (C + C.T)
    variance = np.diag(C)
    if not np.all(variance > 0.0):
        k = int(np.argmin(variance))
        raise EstimationError(f"the base parameters' covariance gives parameter {k} a variance {variance[k]:.3g} <= 0")
    std = np.sqrt(variance)
    correlation = C / np.outer(std, std)
    eig = np.linalg.eigvalsh(correlation)
    rank = int(np.sum(eig > SINGULAR * max(float(eig[-1]), 1.0)))
    if eig[0] > SINGULAR:
        return C, rank, 0.0
    shrunk = (1.0 - SHRINKAGE) * correlation + SHRINKAGE * np.eye(C.shape[0])
    return shrunk * np.outer(std, std), rank, SHRINKAGE


def solve_convex(problem: Any, variable: Any, solver: str, what: str) -> FloatArray:
    """Solve a cvxpy ``problem`` (its warnings silenced) and return ``variable``'s value.

    Raises:
        EstimationError: the solver failed or ended without an optimal (or optimal-inaccurate) solution;
            the message names ``what`` was solved for.
    """
    import cvxpy as cp

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            problem.solve(solver=solver)
    except cp.error.SolverError as exc:
        raise EstimationError(f"the {solver} solver failed on the {what}: {exc}") from None
    if str(problem.status) not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or variable.value is None:
        raise EstimationError(f"{what}: solver status {problem.status!r}")
    return np.asarray(variable.value, dtype=float).copy()


def log_det_divergence(J: ArrayLike, J0: ArrayLike) -> float:
    """``tr(J0^-1 J) - log det(J0^-1 J) - 4`` of two positive definite 4 x 4 matrices (0 when equal)."""
    X = np.linalg.solve(np.asarray(J0, dtype=float), np.asarray(J, dtype=float))
    sign, logdet = np.linalg.slogdet(X)
    return float(np.trace(X) - logdet - 4.0) if sign > 0 else float("inf")


def _nominal_pseudo_inertias(phi0: FloatArray) -> FloatArray:
    J0 = pseudo_inertia(phi0)
    for k in range(J0.shape[0]):
        w = np.linalg.eigvalsh(J0[k])
        J0[k] += (REGULARISE * max(float(w[-1]), 1e-9) - min(float(w[0]), 0.0)) * np.eye(4)
    return J0


def mass_information(
    constraints: PhysicalConstraints, projection: ArrayLike, covariance: ArrayLike, theta_nominal: ArrayLike
) -> tuple[FloatArray, FloatArray]:
    """What the base parameters (covariance (b, b), positive definite; map P (b, p)) tell about each body's mass.

    Returns:
        The posterior standard deviation of each mass (b,) [kg] (prior: the divergence's local
        metric at the nominal, `PRIOR_RELATIVE_SPREAD`) and its ratio to the prior's (b,) [-].
    """
    P = np.asarray(projection, dtype=float)
    theta0 = np.asarray(theta_nominal, dtype=float)
    p, bodies = constraints.n_parameters, constraints.n_bodies
    inertial = np.arange(p)[constraints.inertial]
    J0 = _nominal_pseudo_inertias(constraints.body_parameters(theta0))
    prior = np.zeros((p, p))
    E = PSEUDO_INERTIA_BASIS  # (10, 4, 4)
    for k in range(bodies):
        J0_inv = np.linalg.inv(J0[k])
        A = np.einsum("ij,ajk->aik", J0_inv, E)
        hessian = np.einsum("aij,bji->ab", A, A)  # second derivative of the divergence at J0
        idx = inertial[10 * k : 10 * k + 10]
        prior[np.ix_(idx, idx)] = hessian / PRIOR_RELATIVE_SPREAD**2
    other = np.setdiff1d(np.arange(p), inertial)
    scale = np.maximum(np.abs(theta0[other]), 1e-3)
    prior[other, other] = 1.0 / (PRIOR_RELATIVE_SPREAD * scale) ** 2
    prior_cov = np.linalg.inv(prior)
    data = P.T @ np.linalg.solve(np.asarray(covariance, dtype=float), P)
    posterior_cov = np.linalg.inv(prior + data)
    masses = inertial[::10]
    ratio = np.sqrt(np.diag(posterior_cov)[masses] / np.diag(prior_cov)[masses])
    std = np.sqrt(np.diag(posterior_cov)[masses])
    return std, ratio


def mass_class(relative_std: float, ratio: float) -> str:
    """``determined`` (relative posterior std <= `DETERMINED_STD`), ``undetermined`` (ratio of
    posterior to prior std >= `UNDETERMINED_RATIO`) or ``partly``."""
    if relative_std <= DETERMINED_STD:
        return "determined"
    return "undetermined" if ratio >= UNDETERMINED_RATIO else "partly"


def nearest_consistent(
    constraints: PhysicalConstraints,
    projection: ArrayLike,
    theta_base: ArrayLike,
    covariance: ArrayLike,
    theta_nominal: ArrayLike,
    *,
    level: float = 0.95,
    solver: str = "CLARABEL",
) -> NearestConsistent:
    """The consistent full parameters nearest to ``theta_nominal`` within the base parameters' uncertainty.

    Args:
        constraints: from `motor_ident.core.estimation.constraints.physical_constraints` (bodies
            and friction signs; the mass and centre-of-mass boxes are not used).
        projection: P (b, p), full -> base parameters.
        theta_base: identified base parameters (b,); covariance: theirs (b, b), positive
            semidefinite (a singular one is replaced by `positive_definite_covariance`).
        theta_nominal: the URDF's full parameters (p,).
        level: confidence level of the ellipsoid the base parameters must stay in.
        solver: cvxpy solver with exponential and semidefinite cones.

    Raises:
        EstimationError: the covariance is not a covariance (`positive_definite_covariance`) or the solver fails.
    """
    import cvxpy as cp  # here: cvxpy costs ~1.1 s at import (measured, idle)
    from scipy.stats import chi2  # slow import (0.8 s)

    start = time.perf_counter()
    P = np.asarray(projection, dtype=float)
    theta_b = np.asarray(theta_base, dtype=float)
    theta0 = np.asarray(theta_nominal, dtype=float)
    b, p = P.shape
    C, rank, shrinkage = positive_definite_covariance(covariance)
    try:
        L = np.linalg.cholesky(C)
    except np.linalg.LinAlgError:
        raise EstimationError("the base parameters' covariance is not positive definite") from None
    M = np.linalg.solve(L, P)  # whitened: |M theta - c| is the Mahalanobis distance
    c = np.linalg.solve(L, theta_b)
    # d_min: how close a physically consistent set comes (0 unless the estimate itself is inconsistent).
    closest = SdpProjector(constraints, b, solver=solver).solve(
        M, c, 1e-6 * float(np.linalg.norm(M)) / np.sqrt(p), theta0
    )
    d_min = float(np.linalg.norm(M @ closest.theta - c))
    radius = float(np.sqrt(d_min**2 + chi2.ppf(level, b)))
    bodies = constraints.n_bodies
    inertial = np.arange(p)[constraints.inertial]
    other = np.setdiff1d(np.arange(p), inertial)
    J0 = _nominal_pseudo_inertias(constraints.body_parameters(theta0))
    theta = cp.Variable(p)
    basis = PSEUDO_INERTIA_BASIS.reshape(10, 16).T  # vec(J) = basis @ phi
    objective = []
    for k in range(bodies):
        J = cp.reshape(basis @ theta[inertial[10 * k : 10 * k + 10]], (4, 4), order="C")
        J_sym = (J + J.T) / 2.0
        objective.append(
            cp.sum(cp.multiply(np.linalg.inv(J0[k]), J_sym)) - cp.log_det(J_sym)
        )  # tr(J0^-1 J), J symmetric
    scale = np.maximum(np.abs(theta0[other]), 1e-3)
    objective.append(OTHER_WEIGHT * cp.sum_squares(cp.multiply(1.0 / scale, theta[other] - theta0[other])))
    objective = [term / PRIOR_RELATIVE_SPREAD**2 for term in objective]
    objective.append(0.5 * cp.sum_squares(M @ theta - c))
    cons = [cp.norm(M @ theta - c, 2) <= radius]
    if constraints.nonnegative.size:
        cons.append(theta[constraints.nonnegative] >= 0.0)
    problem = cp.Problem(cp.Minimize(cp.sum(cp.hstack(objective))), cons)
    out = solve_convex(problem, theta, solver, "nearest consistent parameters")
    mass_std, ratio = mass_information(constraints, P, C, theta0)
    phi = constraints.body_parameters(out)
    phi0 = constraints.body_parameters(theta0)
    J_out = pseudo_inertia(phi)
    return NearestConsistent(
        theta=out,
        divergence=np.array([log_det_divergence(J_out[k], J0[k]) for k in range(bodies)]),
        mahalanobis=float(np.linalg.norm(M @ out - c)),
        radius=radius,
        mass_nominal=phi0[:, 0].copy(),
        mass=phi[:, 0].copy(),
        mass_std=mass_std,
        mass_class=tuple(mass_class(s / max(m, 1e-12), r) for s, m, r in zip(mass_std, phi0[:, 0], ratio)),
        com_nominal=phi0[:, 1:4] / np.maximum(phi0[:, :1], 1e-12),
        com=phi[:, 1:4] / np.maximum(phi[:, :1], 1e-12),
        covariance_rank=rank,
        shrinkage=shrinkage,
        status=str(problem.status),
        seconds=time.perf_counter() - start,
    )
