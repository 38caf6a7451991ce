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
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.estimation.consistent_fit import SdpProjector, _information_factor
from motor_ident.core.estimation.constraints import PhysicalConstraints, violations
from motor_ident.core.estimation.least_squares import RegressionStatistics
from motor_ident.core.rigid_body.base_params import BaseParameters
from motor_ident.errors import ConfigError, EstimationError

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


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
        from scipy.stats import chi2  # here: scipy.stats costs ~0.8 s at import (measured, idle)

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
