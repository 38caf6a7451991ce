"""Physically consistent identification: every body's pseudo-inertia PSD, friction with its sign.

Least squares on a short or poorly exciting record can return parameters no body could have: a
negative mass, an inertia violating the triangle inequality, a centre of mass outside any
plausible volume, negative viscous friction. This module estimates under the constraints that
rule these out, and checks online whether a base-parameter estimate is explained by some
physically valid full parameter set.

Pseudo-inertia (derivation). A body with mass density rho over its volume V, in its joint frame:

    J = int_V [x; 1] [x; 1]' rho dV = [[Sigma, h], [h', m]]   (4 x 4)

with m = int rho dV, h = int x rho dV = m c (the first moments ``[mx, my, mz]``) and the second
moment Sigma = int x x' rho dV. The rotational inertia about the frame origin is
I = int (|x|^2 1 - x x') rho dV = tr(Sigma) 1 - Sigma, so tr(I) = 2 tr(Sigma) and

    Sigma = 0.5 tr(I) 1 - I.

J is an integral of rank-one PSD matrices, so J >= 0 for every real body; conversely every
J > 0 is the pseudo-inertia of some density (Wensing, Kim, Slotine 2017). ``J >= 0`` is a linear
matrix inequality in the 10 parameters ``[m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]``
(pinocchio's order, about the joint frame), and it implies m >= 0, I >= 0 and the triangle
inequalities of the principal moments. `pseudo_inertia` builds J; the tests check it against
pinocchio's ``Inertia.toPseudoInertia`` and against point-mass clouds.

Two solvers of the same problem

    minimise  alpha^2 |F P theta - g|^2 + (1 - alpha)^2 |theta - theta_0|^2
    subject to  J_b(theta) >= 0 per body, mass and centre-of-mass boxes, sign constraints

(the data term is the least-squares cost written from the sufficient statistics, ``F'F = Y'Y``,
``F'g = Y'tau``; the prior is Kolathaya et al. 2016, eq. 105-107 in the squared form of
`motor_ident.core.estimation.least_squares`):

- ``sdp``: a convex semidefinite programme through cvxpy, solved by Clarabel (interior point,
  open source). Global optimum; the pseudo-inertia may end on the boundary (a degenerate body).
- ``log_cholesky``: J = U U' with U upper triangular, parametrised by 10 unconstrained numbers
  (pinocchio's ``LogCholeskyParameters``: ``[alpha, d1, d2, d3, s12, s23, s13, t1, t2, t3]``,
  m = exp(2 alpha), centre of mass = t), so J > 0 holds by construction and the problem becomes
  a smooth bounded nonlinear least squares for ``scipy.optimize.least_squares``. Mass bounds and
  the centre-of-mass box become plain bounds on alpha and t. Not convex, but started from the
  nominal model it reaches the SDP's optimum on the shipped robots (tested).

With alpha = 1 the parameters that no data excite are free; a tie-break of relative weight
``TIE_BREAK`` toward theta_0 keeps them bounded (a pull 1e-9 times weaker than the data).

Friction signs (per joint model, `motor_ident.core.actuators.friction`): ``coulomb_viscous`` fc, fv >= 0;
``stribeck`` fc, fv, static_pos, static_neg >= 0; ``arctan`` tau_s, tau_v >= 0 (tau_sc, the
Stribeck correction, is negative in Szabó & Szádeczky-Kardoss 2021 and stays free); ``directional`` kc_pos, kc_neg >= 0
(the velocity polynomials are left free); an ``offset`` is free. Reflected rotor inertias >= 0.

Rejected: constraining only the masses and diagonal inertias (box constraints) accepts bodies
that violate the triangle inequality; constraining the base parameters directly is not possible
since their physical meaning is a combination across bodies.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.actuators.friction import FrictionKind
from motor_ident.core.estimation.least_squares import FitMetrics, RegressionStatistics
from motor_ident.core.rigid_body.base_params import BaseParameters
from motor_ident.core.rigid_body.regressor import Regressor
from motor_ident.errors import ConfigError, EstimationError

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

TIE_BREAK = 1e-9
"""Relative weight of the pull toward theta_0 when alpha = 1 (keeps unexcited parameters bounded)."""

LOG_RANGE = 25.0
"""Bound on the log-scale log-Cholesky parameters (mass = exp(2 alpha), inertia scales exp(d))."""

LOG_CHOLESKY_MAX_EVALUATIONS = 1000
"""Cap on the log-Cholesky solver's evaluations. Rich data converge well within it (valkyrie_arm,
30 s: ~2 s); on poor data the solver crawls along nearly degenerate bodies, and scipy's default
(100 per variable, ~7400) took 14 s for no better held-out torque (1.09 N m vs 0.93 at the cap)."""

_NONNEGATIVE_FRICTION: dict[FrictionKind, tuple[str, ...]] = {
    FrictionKind.NONE: (),
    FrictionKind.COULOMB_VISCOUS: ("fc", "fv"),
    FrictionKind.STRIBECK: ("fc", "fv", "static_pos", "static_neg"),
    FrictionKind.ARCTAN: ("tau_s", "tau_v"),
    FrictionKind.DIRECTIONAL: ("kc_pos", "kc_neg"),
}


# ---------------------------------------------------------------------------------------------
# Pseudo-inertia and log-Cholesky parameters of one body
# ---------------------------------------------------------------------------------------------


def pseudo_inertia(phi: ArrayLike) -> FloatArray:
    """Pseudo-inertia J = [[0.5 tr(I) 1 - I, h], [h', m]] of inertial parameters.

    Args:
        phi: ``[m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]`` about the joint frame
            [kg, kg m, kg m^2], shape (..., 10).

    Returns:
        J, shape (..., 4, 4) [kg m^2 | kg m | kg].
    """
    phi = np.asarray(phi, dtype=float)
    if phi.shape[-1:] != (10,):
        raise ConfigError(f"inertial parameters have shape {phi.shape}: expected (..., 10)")
    m, mx, my, mz, ixx, ixy, iyy, ixz, iyz, izz = np.moveaxis(phi, -1, 0)
    J = np.zeros((*phi.shape[:-1], 4, 4))
    half_trace = 0.5 * (ixx + iyy + izz)
    J[..., 0, 0] = half_trace - ixx
    J[..., 1, 1] = half_trace - iyy
    J[..., 2, 2] = half_trace - izz
    for (i, k), value in (((0, 1), -ixy), ((0, 2), -ixz), ((1, 2), -iyz), ((0, 3), mx), ((1, 3), my), ((2, 3), mz)):
        J[..., i, k] = J[..., k, i] = value
    J[..., 3, 3] = m
    return J


def inertial_from_pseudo_inertia(J: ArrayLike) -> FloatArray:
    """Inverse of `pseudo_inertia`: J (..., 4, 4) -> ``[m, mx, ..., Izz]`` (..., 10)."""
    J = np.asarray(J, dtype=float)
    sigma = J[..., :3, :3]
    trace = np.trace(sigma, axis1=-2, axis2=-1)
    inertia = trace[..., None, None] * np.eye(3) - sigma
    return np.stack(
        [
            J[..., 3, 3],
            J[..., 0, 3],
            J[..., 1, 3],
            J[..., 2, 3],
            inertia[..., 0, 0],
            inertia[..., 0, 1],
            inertia[..., 1, 1],
            inertia[..., 0, 2],
            inertia[..., 1, 2],
            inertia[..., 2, 2],
        ],
        axis=-1,
    )


PSEUDO_INERTIA_BASIS: FloatArray = pseudo_inertia(np.eye(10))
"""E_k of shape (10, 4, 4) with ``pseudo_inertia(phi) = sum_k phi_k E_k`` (J is linear in phi)."""


def log_cholesky_to_inertial(eta: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """Inertial parameters of log-Cholesky parameters, and the Jacobian (pinocchio).

    Args:
        eta: ``[alpha, d1, d2, d3, s12, s23, s13, t1, t2, t3]``, shape (10,): J = U U' with
            U = exp(alpha) [[e^d1, s12, s13, t1], [0, e^d2, s23, t2], [0, 0, e^d3, t3], [0, 0, 0, 1]],
            so m = exp(2 alpha) [kg] and the centre of mass is t [m].

    Returns:
        phi (10,) in pinocchio's order, and d phi / d eta (10, 10).
    """
    params = pin.LogCholeskyParameters(np.asarray(eta, dtype=float))
    return np.asarray(params.toDynamicParameters()), np.asarray(params.calculateJacobian())


def inertial_to_log_cholesky(phi: ArrayLike) -> FloatArray:
    """Log-Cholesky parameters (10,) of inertial parameters phi (10,) with a positive definite J.

    J = U U' with U upper triangular is the lower Cholesky factor of J with rows and columns
    reversed. Pinocchio has the forward map only; this is its inverse (round trip tested).

    Raises:
        EstimationError: the pseudo-inertia is not positive definite.
    """
    J = pseudo_inertia(phi)
    try:
        L = np.linalg.cholesky(J[::-1, ::-1])
    except np.linalg.LinAlgError:
        raise EstimationError(
            f"pseudo-inertia of {np.round(np.asarray(phi, dtype=float), 6).tolist()} is not positive definite "
            f"(smallest eigenvalue {np.linalg.eigvalsh(J)[0]:.3g}): no log-Cholesky parameters exist"
        ) from None
    U = L[::-1, ::-1]
    scale = U[3, 3]
    d = np.log(np.diag(U)[:3] / scale)
    return np.array(
        [np.log(scale), *d, U[0, 1] / scale, U[1, 2] / scale, U[0, 2] / scale, *(U[:3, 3] / scale)], dtype=float
    )


# ---------------------------------------------------------------------------------------------
# The constraint set of a robot
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class PhysicalConstraints:
    """What a physically valid full parameter vector theta (p,) of a `Regressor` satisfies.

    Attributes:
        names: names of the p parameters.
        body_names: one per body, length b (= joints).
        inertial: slice of the 10 b inertial parameters in theta (body k at 10 k .. 10 k + 10).
        nonnegative: indices of theta constrained >= 0 (reflected inertias, friction by sign).
        mass_bounds: (b, 2) lower and upper mass per body [kg]; 0 and inf when unbounded.
        com_lower, com_upper: (b, 3) box of each centre of mass in its joint frame [m]; +-inf
            when unbounded.
    """

    names: tuple[str, ...]
    body_names: tuple[str, ...]
    inertial: slice
    nonnegative: IntArray
    mass_bounds: FloatArray
    com_lower: FloatArray
    com_upper: FloatArray

    @property
    def n_bodies(self) -> int:
        """Number of bodies b."""
        return len(self.body_names)

    @property
    def n_parameters(self) -> int:
        """Length p of theta."""
        return len(self.names)

    def body_parameters(self, theta: ArrayLike) -> FloatArray:
        """Inertial parameters per body, shape (b, 10), of a full theta (p,)."""
        theta = np.asarray(theta, dtype=float)
        return theta[self.inertial].reshape(self.n_bodies, 10)


def physical_constraints(
    regressor: Regressor,
    *,
    mass_bounds: Sequence[tuple[float, float]] | None = None,
    com_boxes: Sequence[tuple[ArrayLike, ArrayLike]] | None = None,
) -> PhysicalConstraints:
    """The physical constraints of a regressor's full parameter vector.

    Args:
        regressor: defines the layout (``layout.inertial``, ``.reflected_inertia``, ``.friction``).
        mass_bounds: per body (lower, upper) [kg]; None = [0, inf).
        com_boxes: per body (lower (3,), upper (3,)) for the centre of mass in the joint frame [m];
            None = unbounded.

    Raises:
        ConfigError: wrong number of bounds, or a lower bound above its upper bound.
    """
    layout = regressor.layout
    bodies = tuple(regressor.robot.body_names)
    b = len(bodies)
    nonnegative = list(range(layout.reflected_inertia.start, layout.reflected_inertia.stop))
    for shape, cols in zip(regressor.friction, layout.friction):
        signed = _NONNEGATIVE_FRICTION[shape.kind]
        nonnegative += [cols.start + k for k, name in enumerate(shape.names) if name in signed]
    masses = np.tile([0.0, np.inf], (b, 1))
    if mass_bounds is not None:
        if len(mass_bounds) != b:
            raise ConfigError(f"mass_bounds: {len(mass_bounds)} pairs for {b} bodies {list(bodies)}")
        masses = np.array(mass_bounds, dtype=float).reshape(b, 2)
        bad = np.flatnonzero(~(masses[:, 0] <= masses[:, 1]) | (masses[:, 0] < 0.0))
        if bad.size:
            k = int(bad[0])
            raise ConfigError(f"mass_bounds of {bodies[k]} = {masses[k].tolist()}: expected 0 <= lower <= upper [kg]")
    lower, upper = np.full((b, 3), -np.inf), np.full((b, 3), np.inf)
    if com_boxes is not None:
        if len(com_boxes) != b:
            raise ConfigError(f"com_boxes: {len(com_boxes)} boxes for {b} bodies {list(bodies)}")
        for k, (lo, hi) in enumerate(com_boxes):
            lower[k], upper[k] = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
            if not np.all(lower[k] <= upper[k]):
                raise ConfigError(
                    f"com_boxes of {bodies[k]}: lower {lower[k].tolist()} is not below upper {upper[k].tolist()} [m]"
                )
    return PhysicalConstraints(
        names=tuple(regressor.names),
        body_names=bodies,
        inertial=layout.inertial,
        nonnegative=np.asarray(sorted(nonnegative), dtype=np.int64),
        mass_bounds=masses,
        com_lower=lower,
        com_upper=upper,
    )


def boxes_around(
    constraints: PhysicalConstraints, theta_nominal: ArrayLike, *, mass_factor: float = 2.0, com_margin: float = 0.1
) -> PhysicalConstraints:
    """The same constraints with bounds around a nominal model.

    Each mass lies in [m_0 / mass_factor, m_0 mass_factor] and each centre of mass within
    ``com_margin`` [m] of the nominal one, per axis (bodies of nominal mass 0 stay unbounded).
    """
    if not mass_factor >= 1.0 or not com_margin >= 0.0:
        raise ConfigError(f"mass_factor = {mass_factor!r}, com_margin = {com_margin!r}: expected >= 1 and >= 0")
    phi = constraints.body_parameters(theta_nominal)
    m = phi[:, 0]
    has_mass = m > 0.0
    com = np.where(has_mass[:, None], phi[:, 1:4] / np.where(has_mass, m, 1.0)[:, None], 0.0)
    masses = np.where(has_mass[:, None], np.stack([m / mass_factor, m * mass_factor], axis=1), [0.0, np.inf])
    lower = np.where(has_mass[:, None], com - com_margin, -np.inf)
    upper = np.where(has_mass[:, None], com + com_margin, np.inf)
    return replace(constraints, mass_bounds=masses, com_lower=lower, com_upper=upper)


def violations(theta: ArrayLike, constraints: PhysicalConstraints, *, tolerance: float = 1e-9) -> list[str]:
    """Every physical constraint a full parameter vector violates, as readable messages.

    O(b) 4 x 4 eigenvalue problems plus sign and bound checks: cheap enough for every refit.

    Args:
        theta: full parameters (p,).
        constraints: from `physical_constraints`.
        tolerance: slack [SI units of each quantity] below which a violation is ignored.

    Returns:
        Messages such as ``link upper_arm_link: pseudo-inertia has eigenvalue -0.03``; empty when valid.
    """
    theta = np.asarray(theta, dtype=float)
    if theta.shape != (constraints.n_parameters,):
        raise ConfigError(f"theta has shape {theta.shape}: expected ({constraints.n_parameters},)")
    out: list[str] = []
    phi = constraints.body_parameters(theta)
    eig = np.linalg.eigvalsh(pseudo_inertia(phi))[:, 0]
    for k, body in enumerate(constraints.body_names):
        m = phi[k, 0]
        if eig[k] < -tolerance:
            out.append(f"link {body}: pseudo-inertia has eigenvalue {eig[k]:.3g}")
        lo, hi = constraints.mass_bounds[k]
        if m < lo - tolerance or m > hi + tolerance:
            out.append(f"link {body}: mass {m:.4g} kg outside [{lo:.4g}, {hi:.4g}]")
        if m > 0.0 and (np.isfinite(constraints.com_lower[k]).any() or np.isfinite(constraints.com_upper[k]).any()):
            com = phi[k, 1:4] / m
            outside = (com < constraints.com_lower[k] - tolerance) | (com > constraints.com_upper[k] + tolerance)
            if outside.any():
                out.append(f"link {body}: centre of mass {np.round(com, 4).tolist()} m outside its box")
    for i in constraints.nonnegative:
        if theta[i] < -tolerance:
            out.append(f"{constraints.names[i]} = {theta[i]:.3g} < 0")
    return out


def min_pseudo_inertia_eigenvalues(theta: ArrayLike, constraints: PhysicalConstraints) -> FloatArray:
    """Smallest eigenvalue of each body's pseudo-inertia, shape (b,) (>= 0 for a physical body)."""
    return np.linalg.eigvalsh(pseudo_inertia(constraints.body_parameters(theta)))[:, 0]


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
        import cvxpy as cp

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
        import cvxpy as cp

        start = time.perf_counter()
        self._M.value = np.asarray(M, dtype=float)
        self._c.value = np.asarray(c, dtype=float)
        self._mu.value = float(mu)
        self._mu_theta0.value = float(mu) * np.asarray(theta0, dtype=float)
        try:
            with warnings.catch_warnings():  # "may be inaccurate": the status below says so
                warnings.simplefilter("ignore", UserWarning)
                self._problem.solve(solver=self.solver)
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
    from scipy.optimize import least_squares

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


def _unit_bodies(constraints: PhysicalConstraints) -> FloatArray:
    """A valid start without a nominal model: 1 kg bodies with 0.01 kg m^2 inertia at the origin."""
    theta = np.zeros(constraints.n_parameters)
    theta[constraints.inertial] = np.tile([1.0, 0, 0, 0, 0.01, 0, 0.01, 0, 0, 0.01], constraints.n_bodies)
    return theta


# ---------------------------------------------------------------------------------------------
# Online consistency check of base-parameter estimates
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ConsistencyResult:
    """Answer of `ConsistencyChecker.check`.

    Attributes:
        consistent: some physically valid full parameter set explains the base estimate, exactly
            (relative distance within the solver's accuracy) or within the estimate's noise
            (``chi2 <= chi2_limit``).
        reason: why not (the body or parameter that fails), or how it was decided.
        theta_base: a consistent base vector (r,): the estimate itself when exactly consistent,
            else its projection (the nearest consistent base vector in the metric W).
        theta: a physically valid full vector with ``P theta = theta_base`` (p,).
        distance: weighted distance |W (P theta - theta_base_in)| (0 when consistent by the
            fast test).
        chi2: distance^2: with W'W the estimate's information (``Y'Y / sigma^2``) this is the
            rise of the weighted residual sum of squares that physical validity costs.
        method: ``nominal dependents`` (O(b) eigenvalue test passed) or ``sdp``.
        seconds: wall time of the check [s].
    """

    consistent: bool
    reason: str
    theta_base: FloatArray
    theta: FloatArray
    distance: float
    method: str
    seconds: float

    @property
    def chi2(self) -> float:
        """Squared weighted distance (see the class docstring)."""
        return self.distance**2


class ConsistencyChecker:
    """Online test: is a base-parameter estimate explained by physically valid full parameters?

    State: the compiled SDP (built once, reused by every `check`). Per call, first the cheap test:
    the estimate completed with the nominal model's dependent parameters
    (``base.to_full(theta_base, theta_nominal)``) is checked by b 4 x 4 eigenvalue problems
    and the sign tests; only when that fails is the SDP solved (~20 ms for the 4-link valkyrie_arm),
    which re-chooses the dependent parameters and otherwise projects onto the nearest
    consistent base vector in the metric W.

    A noisy estimate of a physical robot usually lies just outside the consistent set. Given
    the estimate's information as the metric (``Y'Y / sigma^2``), the projection's squared
    distance is the rise of the weighted residual it costs; if the truth is consistent that
    rise is at most the estimate's own chi-square error (r degrees of freedom), so
    ``chi2_limit = chi2.ppf(0.99, r)`` accepts 99 % of estimates of a consistent truth while
    data that no physical robot could produce (a sign error, an impossible body) are refused.
    """

    def __init__(
        self,
        constraints: PhysicalConstraints,
        base: BaseParameters,
        theta_nominal: ArrayLike,
        *,
        solver: str = "CLARABEL",
        tie_break: float = 1e-9,
    ) -> None:
        """Args: the constraints, the base map, full nominal theta (p,), the cvxpy solver, and the
        relative pull toward the nominal model that picks among equally close full vectors
        (``mu = tie_break |M| / sqrt(p)``; it costs a relative distance of about
        ``sqrt(tie_break)`` on estimates at the boundary: 1.4e-5 at 1e-9, 8e-4 at 1e-6)."""
        self.constraints, self.base = constraints, base
        self.theta_nominal = np.asarray(theta_nominal, dtype=float).copy()
        if self.theta_nominal.shape != (constraints.n_parameters,) or base.n_full != constraints.n_parameters:
            raise ConfigError(
                f"theta_nominal {self.theta_nominal.shape}, base map of {base.n_full} parameters: "
                f"expected {constraints.n_parameters} full parameters"
            )
        self.tie_break = float(tie_break)
        self._P = base.projection
        self._sdp = SdpProjector(constraints, base.n_base, solver=solver)

    def check_within_noise(
        self, theta_base: ArrayLike, stats: RegressionStatistics, sigma: ArrayLike, *, confidence: float = 0.99
    ) -> ConsistencyResult:
        """`check` in the metric of the estimate's information ``sum_j Y_j'Y_j / sigma_j^2``,
        accepting projections that cost less than the chi-square quantile ``confidence`` (r
        degrees of freedom): what the identifier's gate and ``motor-ident identify`` use.

        Args:
            theta_base: estimate from ``stats`` (r,).
            stats: the sufficient statistics the estimate came from (base regressor).
            sigma: per-joint residual standard deviation (n,) [N m] (floored at 1e-12).
            confidence: in (0, 1).
        """
        from scipy.stats import chi2

        if not 0.0 < confidence < 1.0:
            raise ConfigError(f"consistency_confidence = {confidence!r}: expected 0 < value < 1")
        weights = 1.0 / np.maximum(np.asarray(sigma, dtype=float), 1e-12) ** 2
        information = np.einsum("j,jik->ik", weights, stats.A)
        limit = float(chi2.ppf(confidence, self.base.n_base))
        return self.check(theta_base, information=information, chi2_limit=limit)

    def check(
        self,
        theta_base: ArrayLike,
        *,
        information: ArrayLike | None = None,
        tolerance: float = 1e-4,
        chi2_limit: float | None = None,
        fast: bool = True,
    ) -> ConsistencyResult:
        """Decide whether theta_base (r,) is physically consistent; project it when it is not.

        Args:
            theta_base: base-parameter estimate, shape (r,).
            information: metric of the projection, W'W (r, r): pass the window's information
                matrix ``Y'Y`` (or ``Y'Y / sigma^2``) so that the projection is the constrained
                least-squares fit and the distance is the rise of the residual; identity when None.
            tolerance: relative distance |W (P theta - theta_base)| / |W theta_base| below which
                the estimate counts as exactly consistent (the tie-break costs ~1.4e-5).
            chi2_limit: also accept when ``distance^2 <= chi2_limit`` (consistent within noise;
                needs ``information = Y'Y / sigma^2``); None = exact consistency only.
            fast: try the O(b) test with the nominal dependent parameters first.

        Raises:
            EstimationError: wrong shape, non-finite estimate, or the solver fails.
        """
        start = time.perf_counter()
        theta_base = np.asarray(theta_base, dtype=float)
        r = self.base.n_base
        if theta_base.shape != (r,) or not np.all(np.isfinite(theta_base)):
            raise EstimationError(f"theta_base has shape {theta_base.shape} or is not finite: expected ({r},) finite")
        completed = self.base.to_full(theta_base, self.theta_nominal)
        fast_failures = violations(completed, self.constraints)
        if fast and not fast_failures:
            return ConsistencyResult(
                consistent=True,
                reason="consistent with the nominal model's dependent parameters",
                theta_base=theta_base.copy(),
                theta=completed,
                distance=0.0,
                method="nominal dependents",
                seconds=time.perf_counter() - start,
            )
        W = (
            np.eye(r)
            if information is None
            else _information_factor(np.asarray(information, dtype=float), 0 * theta_base)[0]
        )
        norm = max(float(np.linalg.norm(W @ theta_base)), 1e-12)
        M, c = W @ self._P / norm, W @ theta_base / norm
        mu = self.tie_break * float(np.linalg.norm(M)) / np.sqrt(self.constraints.n_parameters)
        solution = self._sdp.solve(M, c, mu, self.theta_nominal)
        projected = self._P @ solution.theta
        distance = float(np.linalg.norm(W @ (projected - theta_base)))
        relative = distance / norm
        exact = relative <= tolerance
        within_noise = chi2_limit is not None and distance**2 <= chi2_limit
        nominal_note = f" (nominal ones gave {fast_failures[0]})" if fast_failures else ""
        if exact:
            reason = "consistent after re-choosing the dependent parameters" + nominal_note
            out_base = theta_base.copy()
            theta = self.base.to_full(theta_base, solution.theta)  # exact base, valid up to solver accuracy
        else:
            out_base, theta = projected, solution.theta
            if within_noise:
                reason = (
                    f"consistent within noise: the nearest valid parameters cost chi2 {distance**2:.3g} "
                    f"<= {chi2_limit:.3g}{nominal_note}"
                )
            else:
                # What the estimate violates with the best dependent parameters the SDP found.
                failures = violations(self.base.to_full(theta_base, solution.theta), self.constraints)
                what = "; ".join(failures or fast_failures) or "constraints conflict"
                active = ", ".join(solution.active) or "-"
                limit = f"chi2 {distance**2:.3g} > {chi2_limit:.3g}, " if chi2_limit is not None else ""
                reason = (
                    f"{what}; no physically valid parameters explain the estimate "
                    f"(nearest at {limit}relative distance {relative:.3g}; active: {active})"
                )
        return ConsistencyResult(
            consistent=exact or within_noise,
            reason=reason,
            theta_base=out_base,
            theta=theta,
            distance=distance,
            method="sdp",
            seconds=time.perf_counter() - start,
        )
