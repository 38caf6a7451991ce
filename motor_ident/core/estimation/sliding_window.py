"""Exact least squares over a sliding window of regressor rows, with its fit metrics."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.estimation.least_squares import RegressionStatistics, solve_theta
from motor_ident.errors import ConfigError, DataError, EstimationError

FloatArray = NDArray[np.float64]


def scaled_condition_number(A: ArrayLike, *, fast: bool = False) -> float:
    """2-norm condition number of a regressor Y, from its information matrix A = Y'Y (p, p).

    Columns are scaled to unit norm first (A -> D A D, D = diag(A)^-1/2), so the number measures
    excitation, not the units of the parameters. ``fast`` uses LAPACK's O(p^2) estimate from a
    Cholesky factor (`solve_theta`) instead of eigenvalues; infinite when A is singular.
    """
    A = np.asarray(A, dtype=float)
    if fast:
        try:
            return solve_theta(A, np.zeros(A.shape[0]))[1]
        except EstimationError:
            return float("inf")
    d = np.diag(A)
    if np.any(~(d > 0.0)):
        return float("inf")
    scale = 1.0 / np.sqrt(d)
    eig = np.linalg.eigvalsh(A * np.outer(scale, scale))
    return float(np.sqrt(eig[-1] / eig[0])) if eig[0] > 0.0 else float("inf")


@dataclass(frozen=True)
class WindowFit:
    """Estimate on the current window.

    Attributes:
        theta: parameters, shape (p,).
        r2: centred R^2 per joint on the window, shape (n,).
        r2_uncentred: Kolathaya et al. 2016, eq. 104 per joint, shape (n,).
        rmse: RMS residual per joint [N m], shape (n,).
        condition_number: of the window's regressor with unit-norm columns, unregularised
            (`scaled_condition_number`): independent of parameter units, infinite when a
            parameter is not excited at all.
        count: samples in the window.
        r2_predicted: centred R^2 per joint of torques predicted before their sample entered the
            window (held out: `motor_ident.core.estimation.online.HeldOutR2`), shape (n,); None
            when nothing predicted them.
    """

    theta: FloatArray
    r2: FloatArray
    r2_uncentred: FloatArray
    rmse: FloatArray
    condition_number: float
    count: int
    r2_predicted: FloatArray | None = None

    def r2_of(self, definition: str) -> FloatArray:
        """R^2 per joint (n,) by ``definition``: ``uncentred`` (Kolathaya et al. 2016, eq. 104), ``centred`` or
        ``predicted`` (held out; NaN while there is none)."""
        if definition == "uncentred":
            return self.r2_uncentred
        if definition == "predicted":
            return np.full_like(self.r2, np.nan) if self.r2_predicted is None else self.r2_predicted
        return self.r2


class SlidingWindowLS:
    """Exact least squares over the last ``window`` samples, optionally exponentially forgotten.

    Args:
        n: joints; p: parameters; window: samples kept (W).
        theta_nominal: prior for the pull toward nominal (p,); zeros when None.
        alpha: data weight in (0, 1]; 1 = plain least squares (Kolathaya et al. 2016, eq. 102).
        forgetting: lambda in (0, 1]; a sample k steps old weighs lambda^k inside the window.
    """

    def __init__(
        self,
        n: int,
        p: int,
        window: int,
        *,
        theta_nominal: ArrayLike | None = None,
        alpha: float = 1.0,
        forgetting: float = 1.0,
    ) -> None:
        if window < 1 or n < 1 or p < 1:
            raise ConfigError(f"window = {window}, n = {n}, p = {p}: expected positive sizes")
        if not 0.0 < alpha <= 1.0:
            raise ConfigError(f"alpha = {alpha!r}: expected 0 < alpha <= 1")
        if not 0.0 < forgetting <= 1.0:
            raise ConfigError(f"forgetting = {forgetting!r}: expected 0 < lambda <= 1")
        self.n, self.p, self.window = n, p, window
        self.alpha, self.forgetting = float(alpha), float(forgetting)
        self.theta_nominal = np.zeros(p) if theta_nominal is None else np.asarray(theta_nominal, dtype=float).copy()
        if self.theta_nominal.shape != (p,):
            raise ConfigError(f"theta_nominal has shape {self.theta_nominal.shape}: expected ({p},)")
        self._Y = np.zeros((window, n, p))
        self._tau = np.zeros((window, n))
        self._mask = np.ones((window, n), dtype=bool)  # equations used, per sample and joint
        self.stats = RegressionStatistics(n, p)
        self._head = 0
        self._count = 0
        self._since_refresh = 0
        self._oldest_weight = forgetting**window  # weight of a sample when it leaves a full window

    @property
    def count(self) -> int:
        """Samples currently in the window."""
        return self._count

    @property
    def full(self) -> bool:
        """True once the window holds ``window`` samples."""
        return self._count == self.window

    def reset(self) -> None:
        """Empty the window (clock jump, payload change, user request)."""
        self.stats = RegressionStatistics(self.n, self.p)
        self._head = self._count = self._since_refresh = 0

    def add(self, Y: ArrayLike, tau: ArrayLike, mask: ArrayLike | None = None) -> None:
        """Add one sample: regressor rows (n, p) and torques (n,); drops the oldest when full.

        ``mask`` (n,) bool: the joints whose equation is used (False leaves that joint's row and
        torque out, e.g. a joint near rest); None uses all. The mask is kept with the sample, so
        removing it later and `refresh` stay exact.

        Raises:
            DataError: wrong shape or non-finite values (the window is left unchanged).
        """
        Y = np.asarray(Y, dtype=float)
        tau = np.asarray(tau, dtype=float)
        if Y.shape != (self.n, self.p) or tau.shape != (self.n,):
            raise DataError(f"sample shapes {Y.shape}, {tau.shape}: expected ({self.n}, {self.p}) and ({self.n},)")
        if not (np.all(np.isfinite(Y)) and np.all(np.isfinite(tau))):
            raise DataError("sample contains NaN or Inf")
        used = np.ones(self.n, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
        if used.shape != (self.n,):
            raise DataError(f"mask has shape {used.shape}: expected ({self.n},)")
        slot = self._head
        if self.forgetting < 1.0:
            self.stats.scale(self.forgetting)
        if self._count == self.window:
            old = self._mask[slot : slot + 1]
            self.stats.add(
                self._Y[slot : slot + 1], self._tau[slot : slot + 1], -self._oldest_weight, None if old.all() else old
            )
        else:
            self._count += 1
        self._Y[slot] = Y
        self._tau[slot] = tau
        self._mask[slot] = used
        new = self._mask[slot : slot + 1]
        self.stats.add(self._Y[slot : slot + 1], self._tau[slot : slot + 1], mask=None if new.all() else new)
        self._head = (slot + 1) % self.window
        self._since_refresh += 1
        if self._since_refresh >= self.window:
            self.refresh()

    def refresh(self) -> None:
        """Recompute the statistics from the buffer (removes accumulated rounding)."""
        Y, tau = self.window_data()
        mask = self.window_mask()
        used = None if mask.all() else mask
        stats = RegressionStatistics(self.n, self.p)
        if self.forgetting < 1.0:
            weights = np.sqrt(self.forgetting ** np.arange(len(Y) - 1, -1, -1.0))
            stats.add(Y * weights[:, None, None], tau * weights[:, None], mask=used)
            stats.ysum = np.einsum("s,sj->j", weights**2, np.where(mask, tau, 0.0))
            stats.count = float(np.sum(weights**2 * mask.any(axis=1)))
            if used is None:
                stats.counts = np.full(self.n, stats.count)
            else:
                stats.counts = np.einsum("s,sj->j", weights**2, mask.astype(float))
        else:
            stats.add(Y, tau, mask=used)
        self.stats = stats
        self._since_refresh = 0

    def latest(self) -> tuple[FloatArray, FloatArray]:
        """The newest sample: regressor rows (n, p) and torques (n,) (views; copy to keep).

        Raises:
            EstimationError: the window is empty.
        """
        if self._count == 0:
            raise EstimationError("the window is empty")
        k = (self._head - 1) % self.window
        return self._Y[k], self._tau[k]

    def window_data(self) -> tuple[FloatArray, FloatArray]:
        """Copies of the window's samples in arrival order: Y (count, n, p), tau (count, n)."""
        if self._count < self.window:
            return self._Y[: self._count].copy(), self._tau[: self._count].copy()
        order = np.r_[self._head : self.window, 0 : self._head]
        return self._Y[order], self._tau[order]

    def window_mask(self) -> NDArray[np.bool_]:
        """Copy of the window's equation masks in arrival order, (count, n) bool (True = used)."""
        if self._count < self.window:
            return self._mask[: self._count].copy()
        return self._mask[np.r_[self._head : self.window, 0 : self._head]]

    def solve(self) -> WindowFit:
        """Estimate on the current window (pulled toward nominal when alpha < 1).

        Raises:
            EstimationError: the window is empty, or singular without a nominal pull (alpha = 1).
        """
        if self._count == 0:
            raise EstimationError("the window is empty")
        stats = self.stats
        a2, prior = self.alpha**2, (1.0 - self.alpha) ** 2
        A = stats.A.sum(axis=0)
        b = stats.b.sum(axis=0)
        if prior == 0.0:
            theta, cond = solve_theta(A, b)
        else:
            cond = scaled_condition_number(A, fast=True)
            A[np.diag_indices(self.p)] += prior / a2
            theta, _ = solve_theta(A, b + (prior / a2) * self.theta_nominal)
        metrics = stats.metrics(theta)
        return WindowFit(
            theta=theta,
            r2=metrics.r2,
            r2_uncentred=metrics.r2_uncentred,
            rmse=metrics.rmse,
            condition_number=cond,
            count=self._count,
        )
