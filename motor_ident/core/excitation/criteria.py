"""Excitation criteria: condition numbers and D-optimality of a regressor."""

from __future__ import annotations

from enum import Enum

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# Value returned for a rank-deficient regressor (the trajectory leaves a base parameter unexcited).
_SINGULAR = 1e15
# Objective value of a singular regressor, above log(_SINGULAR) and any D-criterion met in practice.
_SINGULAR_OBJECTIVE = 1e3


class Criterion(str, Enum):
    """Excitation criterion to minimise."""

    COND = "cond"
    FROBENIUS = "frobenius"
    BLOCK = "block"
    DOPT = "dopt"


def condition_number(W: ArrayLike) -> float:
    """2-norm condition number s_max / s_min of a matrix W (m, r); `_SINGULAR` when rank deficient."""
    s = np.linalg.svd(np.asarray(W, dtype=float), compute_uv=False)
    if s.size == 0 or not s[-1] > s[0] * 1e-14:
        return _SINGULAR
    return float(s[0] / s[-1])


def frobenius_condition(W: ArrayLike) -> float:
    """Frobenius condition number of W'W (Szabó & Szádeczky-Kardoss 2021, eq. 20): |W'W|_F |(W'W)^-1|_F, from W (m, r).

    With the singular values s of W, |W'W|_F^2 = sum s^4 and |(W'W)^-1|_F^2 = sum s^-4.
    """
    s = np.linalg.svd(np.asarray(W, dtype=float), compute_uv=False)
    if s.size == 0 or not s[-1] > s[0] * 1e-14:
        return _SINGULAR
    x = s / s[0]  # scale-free: CondF is invariant to scaling W, and this avoids overflow
    return float(np.sqrt(np.sum(x**4) * np.sum(x**-4.0)))


def d_optimality(W: ArrayLike, n_samples: int) -> float:
    """-log det(W'W / n_samples) for W (m, r): D-criterion of the information per sample."""
    W = np.asarray(W, dtype=float)
    s = np.linalg.svd(W, compute_uv=False)
    if s.size == 0 or not s[-1] > s[0] * 1e-14:
        return _SINGULAR_OBJECTIVE
    return float(-2.0 * np.sum(np.log(s)) + s.size * np.log(n_samples))
