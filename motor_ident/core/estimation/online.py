"""Online identification: an exact sliding-window least-squares estimator and the model gate.

`SlidingWindowLS` keeps the last W samples of a regressor in a preallocated ring buffer and the
per-joint sufficient statistics of the window (`RegressionStatistics`: Y_j'Y_j, Y_j'tau_j,
tau_j'tau_j and sum tau_j), optionally exponentially forgotten. Adding a sample adds its terms;
when the window is full the oldest sample's terms are subtracted. Every ``W`` samples the
statistics are summed again from the buffer, so rounding errors cannot accumulate. A refit is
then one p x p solve, whatever W is — the same estimate as the batch solution on the window,
which the tests check.

Each refit may be pulled toward a nominal parameter vector (Kolathaya et al. 2016, eq. 105-107, with weight
alpha), which keeps directions the window does not excite at their nominal values instead of
making the solve singular.

`ModelGate` decides whether the identified model may be used (Kolathaya et al. 2016: buffer full and
R^2 >= 0.95), adding a condition-number limit, hysteresis so it does not chatter, and physical
validity: the estimate must be explained by bodies with positive semidefinite pseudo-inertias and
friction of the right sign, exactly or within its noise (`motor_ident.core.estimation.consistency`). The
model then used is the consistent one (the estimate, or its projection when that is within noise),
so a controller never runs on parameters no robot could have.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.estimation.consistency import ConsistencyChecker, ConsistencyResult, physical_constraints
from motor_ident.core.estimation.least_squares import RegressionStatistics, solve_theta
from motor_ident.core.rigid_body.base_params import BaseParameters
from motor_ident.core.rigid_body.regressor import Regressor
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
    """

    theta: FloatArray
    r2: FloatArray
    r2_uncentred: FloatArray
    rmse: FloatArray
    condition_number: float
    count: int


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

    def add(self, Y: ArrayLike, tau: ArrayLike) -> None:
        """Add one sample: regressor rows (n, p) and torques (n,); drops the oldest when full.

        Raises:
            DataError: wrong shape or non-finite values (the window is left unchanged).
        """
        Y = np.asarray(Y, dtype=float)
        tau = np.asarray(tau, dtype=float)
        if Y.shape != (self.n, self.p) or tau.shape != (self.n,):
            raise DataError(f"sample shapes {Y.shape}, {tau.shape}: expected ({self.n}, {self.p}) and ({self.n},)")
        if not (np.all(np.isfinite(Y)) and np.all(np.isfinite(tau))):
            raise DataError("sample contains NaN or Inf")
        slot = self._head
        if self.forgetting < 1.0:
            self.stats.scale(self.forgetting)
        if self._count == self.window:
            self.stats.add(self._Y[slot : slot + 1], self._tau[slot : slot + 1], -self._oldest_weight)
        else:
            self._count += 1
        self._Y[slot] = Y
        self._tau[slot] = tau
        self.stats.add(self._Y[slot : slot + 1], self._tau[slot : slot + 1])
        self._head = (slot + 1) % self.window
        self._since_refresh += 1
        if self._since_refresh >= self.window:
            self.refresh()

    def refresh(self) -> None:
        """Recompute the statistics from the buffer (removes accumulated rounding)."""
        Y, tau = self.window_data()
        stats = RegressionStatistics(self.n, self.p)
        if self.forgetting < 1.0:
            weights = np.sqrt(self.forgetting ** np.arange(len(Y) - 1, -1, -1.0))
            stats.add(Y * weights[:, None, None], tau * weights[:, None])
            stats.ysum = np.einsum("s,sj->j", weights**2, tau)
            stats.count = float(np.sum(weights**2))
        else:
            stats.add(Y, tau)
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


@dataclass(frozen=True)
class GateConfig:
    """When the identified model may be used.

    Attributes:
        r2_threshold: open when every joint's R^2 reaches it (Kolathaya et al. 2016: 0.95).
        r2_hysteresis: close only when some joint's R^2 falls below threshold - hysteresis.
        max_condition_number: refuse a window whose regressor is worse conditioned.
        require_full_buffer: Kolathaya et al. 2016 also required a full buffer.
        r2_definition: ``uncentred`` (Kolathaya et al. 2016, eq. 104) or ``centred``.
        require_consistent: open only for physically consistent estimates (checked when every
            other condition holds; ~20 ms per refit on the 4-link valkyrie_arm when the SDP runs).
        consistency_confidence: accept an estimate whose projection onto valid bodies costs a
            chi-square below this quantile (r degrees of freedom), in (0, 1).
    """

    r2_threshold: float = 0.95
    r2_hysteresis: float = 0.02
    max_condition_number: float = 1e4
    require_full_buffer: bool = True
    r2_definition: str = "uncentred"
    require_consistent: bool = True
    consistency_confidence: float = 0.99

    def __post_init__(self) -> None:
        if not 0.0 < self.r2_threshold <= 1.0:
            raise ConfigError(f"r2_threshold = {self.r2_threshold!r}: expected 0 < value <= 1")
        if not 0.0 <= self.r2_hysteresis < self.r2_threshold:
            raise ConfigError(f"r2_hysteresis = {self.r2_hysteresis!r}: expected 0 <= value < r2_threshold")
        if not self.max_condition_number > 1.0:
            raise ConfigError(f"max_condition_number = {self.max_condition_number!r}: expected > 1")
        if self.r2_definition not in ("uncentred", "centred"):
            raise ConfigError(f"r2_definition = {self.r2_definition!r}: expected 'uncentred' or 'centred'")
        if not 0.0 < self.consistency_confidence < 1.0:
            raise ConfigError(f"consistency_confidence = {self.consistency_confidence!r}: expected 0 < value < 1")


class ModelGate:
    """Hysteresis gate over window fits. `reason` says why it is closed; `consistency` holds the
    latest physical-validity verdict (None when it was not checked)."""

    def __init__(self, config: GateConfig) -> None:
        self.config = config
        self.open = False
        self.reason = "no estimate yet"
        self.forced_nominal = False
        self.consistency: ConsistencyResult | None = None

    def reset(self) -> None:
        """Close the gate (buffers were reset)."""
        self.open = False
        self.reason = "buffer reset"
        self.consistency = None

    def update(
        self,
        fit: WindowFit | None,
        window_full: bool,
        check: Callable[[WindowFit], ConsistencyResult] | None = None,
    ) -> bool:
        """Feed the latest window fit (None when there is none); returns whether the gate is open.

        ``check`` tells physical validity; it is called only when every other condition holds
        (it may cost an SDP solve) and an error it raises closes the gate with its message.
        """
        cfg = self.config
        self.consistency = None
        if self.forced_nominal:
            self.open, self.reason = False, "nominal model forced by the user (~/use_nominal)"
            return False
        if fit is None:
            self.open, self.reason = False, "no estimate yet"
            return False
        r2 = fit.r2_uncentred if cfg.r2_definition == "uncentred" else fit.r2
        worst = float(np.min(r2))
        threshold = cfg.r2_threshold - (cfg.r2_hysteresis if self.open else 0.0)
        if cfg.require_full_buffer and not window_full:
            self.open, self.reason = False, f"buffer filling ({fit.count} samples)"
        elif not np.all(np.isfinite(fit.theta)):
            self.open, self.reason = False, "estimate is not finite"
        elif fit.condition_number > cfg.max_condition_number:
            self.open, self.reason = (
                False,
                f"condition number {fit.condition_number:.3g} > {cfg.max_condition_number:.3g}",
            )
        elif worst < threshold:
            self.open, self.reason = False, f"R2 {worst:.3f} < {threshold:.3f} (joint {int(np.argmin(r2))})"
        else:
            self.open, self.reason = self._physical(fit, check)
        return self.open

    def _physical(self, fit: WindowFit, check: Callable[[WindowFit], ConsistencyResult] | None) -> tuple[bool, str]:
        if check is None:
            return True, "identified model active"
        try:
            self.consistency = check(fit)
        except EstimationError as exc:
            return False, f"consistency check failed: {exc}"
        if not self.consistency.consistent:
            return False, f"physically inconsistent: {self.consistency.reason}"
        return True, f"identified model active ({self.consistency.reason})"


class DelayLine:
    """Fixed delay of ``delay`` samples for vectors of length n (aligns signals with a filter's lag)."""

    def __init__(self, n: int, delay: int) -> None:
        self.delay = max(int(delay), 0)
        self._buf = np.zeros((self.delay + 1, n))
        self._k = 0
        self._filled = 0

    def reset(self) -> None:
        """Forget the history."""
        self._k = self._filled = 0

    def push(self, x: ArrayLike) -> FloatArray | None:
        """Insert ``x``; return the value from ``delay`` samples ago (None until that exists)."""
        self._buf[self._k] = x
        self._k = (self._k + 1) % self._buf.shape[0]
        self._filled = min(self._filled + 1, self._buf.shape[0])
        if self._filled < self._buf.shape[0]:
            return None
        return self._buf[self._k]


@dataclass(frozen=True)
class IdentifierConfig:
    """Settings of the online identifier (the ``identifier`` node's parameters).

    Attributes:
        window: samples in the sliding buffer (Kolathaya et al. 2016 used 50).
        decimation: use every k-th incoming sample (1 kHz states, decimation 10 -> 100 Hz).
        refit_every: refit after this many accepted samples (1 = every sample).
        velocity_cutoff_hz: EMA cutoff for velocity and acceleration [Hz].
        alpha: data weight of the pull toward the nominal model (Kolathaya et al. 2016, eq. 105), in (0, 1].
        gate: when the identified model may be used.
    """

    window: int = 500
    decimation: int = 10
    refit_every: int = 10
    velocity_cutoff_hz: float = 15.0
    alpha: float = 0.999
    gate: GateConfig = GateConfig()

    def __post_init__(self) -> None:
        for key in ("window", "decimation", "refit_every"):
            if int(getattr(self, key)) < 1:
                raise ConfigError(f"{key} = {getattr(self, key)!r}: expected an integer >= 1")
        if not self.velocity_cutoff_hz > 0.0:
            raise ConfigError(f"velocity_cutoff_hz = {self.velocity_cutoff_hz!r}: expected > 0")
        if not 0.0 < self.alpha <= 1.0:
            raise ConfigError(f"alpha = {self.alpha!r}: expected 0 < alpha <= 1")


class OnlineIdentifier:
    """Samples in, gated model out: the logic of the ``identifier`` node, free of ROS.

    Each accepted sample goes through: acceleration from EMA-filtered velocity (Kolathaya et al. 2016) -> a
    delay line that holds q, qd and tau back by the filter's lag so all four describe the same
    instant -> decimation -> base regressor row -> sliding window. Every
    ``refit_every`` samples the window is solved and the gate updated. A timestamp that does not
    increase resets everything (bag loop, simulator reset).
    """

    def __init__(
        self, regressor: Regressor, base: BaseParameters, theta_nominal: ArrayLike, config: IdentifierConfig
    ) -> None:
        """Args: the robot's regressor, its base parameters, full nominal theta (p,), settings."""
        from motor_ident.core.estimation.signals import EmaDerivative

        self.regressor, self.base, self.config = regressor, base, config
        n = regressor.robot.n
        self.theta_nominal = base.to_base(theta_nominal)
        self._theta_nominal_full = np.asarray(theta_nominal, dtype=float).copy()
        self._checker: ConsistencyChecker | None = None
        self.window = SlidingWindowLS(
            n, base.n_base, config.window, theta_nominal=self.theta_nominal, alpha=config.alpha
        )
        self.gate = ModelGate(config.gate)
        self.filter = EmaDerivative(n, config.velocity_cutoff_hz)
        self._delay: DelayLine | None = None
        self._Y = np.zeros((1, n, regressor.n_parameters))
        self.fit: WindowFit | None = None
        self.last_time: float | None = None
        self.samples_seen = 0
        self.samples_used = 0
        self.dropped = 0
        self.resets = 0
        self._since_refit = 0

    @property
    def gate_open(self) -> bool:
        """True while the identified model is active."""
        return self.gate.open

    @property
    def active_theta(self) -> FloatArray:
        """Base parameters of the active model: when the gate is open the identified ones (their
        physically consistent projection when the gate checked validity), else nominal."""
        if not self.gate.open or self.fit is None:
            return self.theta_nominal
        consistency = self.gate.consistency
        return consistency.theta_base if consistency is not None else self.fit.theta

    def set_nominal(self, theta_base: ArrayLike) -> None:
        """Replace the nominal (fallback and prior) base parameters."""
        self.theta_nominal = np.asarray(theta_base, dtype=float).copy()
        self.window.theta_nominal = self.theta_nominal
        self._theta_nominal_full = self.base.to_full(self.theta_nominal, self._theta_nominal_full)
        if self._checker is not None:
            self._checker.theta_nominal = self._theta_nominal_full

    def check_consistency(self, fit: WindowFit) -> ConsistencyResult:
        """Physical validity of a window fit, in the metric of its information ``sum_j Y_j'Y_j / s_j^2``.

        s_j is the window's residual RMS of joint j, so the projection's cost is a chi-square with
        r degrees of freedom when the truth is consistent (`ConsistencyChecker`). The first call
        runs `prepare_consistency_check` unless that was done.
        """
        checker = self.prepare_consistency_check()
        return checker.check_within_noise(
            fit.theta, self.window.stats, fit.rmse, confidence=self.config.gate.consistency_confidence
        )

    def prepare_consistency_check(self) -> ConsistencyChecker:
        """Import cvxpy, compile the SDP and solve it once (1-2 s cold): call it at start-up so
        the first check does not stall the data path."""
        if self._checker is None:
            self._checker = ConsistencyChecker(
                physical_constraints(self.regressor), self.base, self._theta_nominal_full
            )
            self._checker.check(self.theta_nominal, fast=False)
        return self._checker

    def reset(self) -> None:
        """Empty the buffers and close the gate."""
        self.window.reset()
        self.filter.reset()
        if self._delay is not None:
            self._delay.reset()
        self.gate.reset()
        self.fit = None
        self._since_refit = 0
        self.resets += 1

    def add_sample(self, t: float, q: ArrayLike, qd: ArrayLike, tau: ArrayLike) -> bool:
        """Feed one measurement; returns False when it was dropped (non-finite, clock went back).

        Args:
            t: time stamp [s]; q, qd, tau: joint positions, velocities, torques (n,).
        """
        q, qd, tau = (np.asarray(x, dtype=float) for x in (q, qd, tau))
        if not (np.isfinite(t) and np.all(np.isfinite(q)) and np.all(np.isfinite(qd)) and np.all(np.isfinite(tau))):
            self.dropped += 1
            return False
        if self.last_time is not None and t <= self.last_time:
            self.dropped += 1
            if t < self.last_time:
                self.reset()
                self.last_time = t
            return False
        dt_in = None if self.last_time is None else t - self.last_time
        self.last_time = t
        self.samples_seen += 1
        # Filter and delay at the input rate, decimate afterwards: differentiating a decimated
        # velocity (Kolathaya et al. 2016 refit at 3 Hz) would alias and lag far more than the filter itself.
        _, qdd_f = self.filter.update(t, qd)
        if self._delay is None and dt_in is not None:
            self._delay = DelayLine(3 * q.size, int(round(self.filter.delay(dt_in) / dt_in)))
        if self._delay is None:
            return True
        aligned = self._delay.push(np.concatenate([q, qd, tau]))
        if aligned is None or (self.samples_seen - 1) % self.config.decimation:
            return True
        n = q.size
        Y = self.regressor.rows(aligned[:n], aligned[n : 2 * n], qdd_f, out=self._Y)[0]
        self.window.add(self.base.base_regressor(Y), aligned[2 * n :])
        self.samples_used += 1
        self._since_refit += 1
        if self._since_refit >= self.config.refit_every:
            self.refit()
        return True

    def refit(self) -> WindowFit | None:
        """Solve the window now and update the gate."""
        self._since_refit = 0
        try:
            self.fit = self.window.solve() if self.window.count else None
        except EstimationError:
            self.fit = None
        check = self.check_consistency if self.config.gate.require_consistent else None
        self.gate.update(self.fit, self.window.full, check)
        return self.fit
