"""Base (identifiable) parameters by QR decomposition with column pivoting.

Szabó & Szádeczky-Kardoss 2021 (eq. 10-14) finds the base parameters from the reduced row echelon form of a stacked
regressor W: independent columns L (indices jL) and dependent ones K = L B (indices jK), so that

    tau = W theta = L (theta_L + B theta_K) = L theta_base.

The reduced row echelon form is numerically fragile; the same decomposition is computed here by
QR with column pivoting, W P = Q [R1 R2], rank r = number of |R_ii| above the tolerance, and
B = R1^-1 R2 (the standard numerical route, Gautier 1990). The columns of L are then a
well-conditioned basis and ``theta_base = theta[jL] + B @ theta[jK]``.

Rank tolerance: |R_ii| > ``rank_tolerance * |R_00|`` with a default of 1e-8, well above the
rounding level of a stacked double-precision regressor (~1e-13 relative) and far below the
smallest genuine excitation of any parameter seen on the shipped robots (~1e-4 relative).
Entries of B below ``1e-9`` in magnitude are set to exactly 0 so the listing stays readable.

Each full parameter then falls in one of three classes (Szabó & Szádeczky-Kardoss 2021, section 4.1):
``identifiable`` (a column of L whose row of B is zero), ``combination`` (identifiable only
inside a linear combination), ``unidentifiable`` (a zero column: it does not affect the torques).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.linalg
from numpy.typing import ArrayLike, NDArray

from motor_ident.errors import EstimationError

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

IDENTIFIABLE = "identifiable"
COMBINATION = "combination"
UNIDENTIFIABLE = "unidentifiable"


@dataclass(frozen=True, eq=False)
class BaseParameters:
    """Map between full and base parameters: ``theta_base = theta[jL] + B @ theta[jK]``.

    Attributes:
        independent: jL, indices of the base columns in theta, shape (r,).
        dependent: jK, the other indices, shape (p - r,).
        B: coefficients, shape (r, p - r).
        names: names of the full parameters, length p.
    """

    independent: IntArray
    dependent: IntArray
    B: FloatArray
    names: tuple[str, ...]

    @property
    def n_base(self) -> int:
        """Number of base parameters r."""
        return int(self.independent.size)

    @property
    def n_full(self) -> int:
        """Number of full parameters p."""
        return len(self.names)

    @property
    def projection(self) -> FloatArray:
        """Matrix P of shape (r, p) with ``theta_base = P @ theta``."""
        P = np.zeros((self.n_base, self.n_full))
        P[np.arange(self.n_base), self.independent] = 1.0
        P[:, self.dependent] = self.B
        return P

    def to_base(self, theta: ArrayLike) -> FloatArray:
        """Full parameters (p,) -> base parameters (r,)."""
        theta = np.asarray(theta, dtype=float)
        beta: FloatArray = theta[self.independent] + self.B @ theta[self.dependent]
        return beta

    def to_full(self, theta_base: ArrayLike, theta_reference: ArrayLike | None = None) -> FloatArray:
        """A full parameter vector (p,) with the given base parameters.

        The dependent parameters are taken from ``theta_reference`` (zeros when None) and the
        independent ones solved so that ``to_base(result) == theta_base`` exactly: the torques of
        the result are those of the base parameters, whichever reference is used.
        """
        theta = np.zeros(self.n_full) if theta_reference is None else np.array(theta_reference, dtype=float)
        theta[self.independent] = np.asarray(theta_base, dtype=float) - self.B @ theta[self.dependent]
        return theta

    def base_regressor(self, Y: ArrayLike) -> FloatArray:
        """Columns of the base parameters of a full regressor, shape (..., r)."""
        return np.asarray(Y)[..., self.independent]

    def classes(self) -> list[str]:
        """Identifiability class of every full parameter, length p."""
        out = [UNIDENTIFIABLE] * self.n_full
        for row, j in enumerate(self.independent):
            out[j] = IDENTIFIABLE if not np.any(self.B[row]) else COMBINATION
        for col, j in enumerate(self.dependent):
            if np.any(self.B[:, col]):
                out[j] = COMBINATION
        return out

    def expressions(self, digits: int = 4) -> list[str]:
        """Human-readable expression of each base parameter, e.g. ``link2.Ixx - 1*link2.Iyy``."""
        out = []
        for row, j in enumerate(self.independent):
            terms = [self.names[j]]
            for col, k in enumerate(self.dependent):
                c = self.B[row, col]
                if c:
                    sign = "-" if c < 0 else "+"
                    terms.append(f"{sign} {abs(c):.{digits}g}*{self.names[k]}")
            out.append(" ".join(terms))
        return out

    def listing(self) -> str:
        """Text table: base parameters with their expressions, then the unidentifiable ones."""
        lines = [f"{self.n_base} base parameters out of {self.n_full}:"]
        for i, expr in enumerate(self.expressions()):
            lines.append(f"  [{i:3d}] {expr}")
        classes = self.classes()
        alone = [n for n, c in zip(self.names, classes) if c == IDENTIFIABLE]
        none = [n for n, c in zip(self.names, classes) if c == UNIDENTIFIABLE]
        lines.append(f"identifiable alone ({len(alone)}): {', '.join(alone) or '-'}")
        lines.append(f"unidentifiable, no effect on torque ({len(none)}): {', '.join(none) or '-'}")
        return "\n".join(lines)


def base_parameters(
    W: ArrayLike,
    names: Sequence[str],
    *,
    rank_tolerance: float = 1e-8,
    zero_tolerance: float = 1e-9,
) -> BaseParameters:
    """Base parameters of a stacked regressor.

    Args:
        W: stacked regressor, shape (m, p) or (N, n, p), from many well-spread samples.
        names: the p parameter names.
        rank_tolerance: relative threshold on |R_ii| deciding the numerical rank.
        zero_tolerance: entries of B with smaller magnitude are set to 0.

    Raises:
        EstimationError: W is empty or all zero.
    """
    W = np.asarray(W, dtype=float)
    W = W.reshape(-1, W.shape[-1])
    p = W.shape[1]
    if len(names) != p:
        raise EstimationError(f"{len(names)} names for {p} regressor columns")
    # Equal column scaling makes the pivot order independent of parameter units only up to
    # the regressor's own values; W is used as is, like Szabó & Szádeczky-Kardoss's rref of Phi.
    _, R, perm = scipy.linalg.qr(W, mode="economic", pivoting=True)
    diag = np.abs(np.diag(R))
    if diag.size == 0 or diag[0] == 0.0:
        raise EstimationError("the regressor is zero: no parameter affects the torques")
    r = int(np.sum(diag > rank_tolerance * diag[0]))
    independent = np.sort(perm[:r])
    dependent = np.sort(perm[r:])
    # B solves L B = K in the least-squares sense (exact for a rank-r W).
    L, K = W[:, independent], W[:, dependent]
    if dependent.size:
        B = np.linalg.lstsq(L, K, rcond=None)[0]
        B[np.abs(B) < zero_tolerance] = 0.0
    else:
        B = np.zeros((r, 0))
    return BaseParameters(independent=independent, dependent=dependent, B=B, names=tuple(names))
