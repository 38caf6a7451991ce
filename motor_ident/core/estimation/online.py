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

The gate decides whether the identified model may be used. By default it is the improvement gate
(`motor_ident.core.estimation.heldout_gate.ImprovementGate`): the model's predictions of samples
not yet in the window, against the nominal model's, which holds under model error on real
robots. ``gate_criterion: r2`` selects `ModelGate` (Kolathaya et al. 2016: buffer full and
R^2 >= 0.95), adding a condition-number limit, hysteresis so it does not chatter, and physical
validity: the estimate must be explained by bodies with positive semidefinite pseudo-inertias and
friction of the right sign, exactly or within its noise (`motor_ident.core.estimation.consistency`). The
model then used is the consistent one (the estimate, or its projection when that is within noise),
so a controller never runs on parameters no robot could have.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.estimation.consistency import ConsistencyChecker, ConsistencyResult
from motor_ident.core.estimation.constraints import physical_constraints
from motor_ident.core.estimation.gate import GateConfig, ModelGate
from motor_ident.core.estimation.heldout_gate import (
    HeldOutEvidence,
    ImprovementGate,
    ImprovementGateConfig,
    prediction_change,
    window_scale,
)
from motor_ident.core.estimation.sliding_window import SlidingWindowLS, WindowFit
from motor_ident.core.rigid_body.base_params import BaseParameters
from motor_ident.core.rigid_body.regressor import Regressor
from motor_ident.errors import ConfigError, EstimationError
from motor_ident.schema import check, inline, setting

FloatArray = NDArray[np.float64]


class DelayLine:
    """Fixed delay of ``delay`` samples for vectors of length n (aligns signals with a filter's lag)."""

    def __init__(self, n: int, delay: int) -> None:
        self.delay = max(int(delay), 0)
        self._buf: FloatArray = np.zeros((self.delay + 1, n))
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
        oldest: FloatArray = self._buf[self._k]
        return oldest


class HeldOutR2:
    """Centred R^2 per joint of torques predicted before their sample entered the window.

    Each sample's torque is compared with ``Y theta`` of the latest fit made without it (the
    nominal model before the first fit), over the last ``window`` samples: data the parameters
    were not fitted to, so it stays low while the fits do not generalise, unlike the in-sample
    R^2 of a window with few samples per parameter.
    """

    def __init__(self, n: int, window: int) -> None:
        self._tau: FloatArray = np.full((window, n), np.nan)
        self._error: FloatArray = np.full((window, n), np.nan)
        self._k = 0

    def reset(self) -> None:
        """Forget the predictions."""
        self._tau[:] = np.nan
        self._error[:] = np.nan
        self._k = 0

    def add(self, tau: FloatArray, predicted: FloatArray, mask: NDArray[np.bool_] | None = None) -> None:
        """One sample's torques and their prediction (n,) [N m]; joints outside ``mask`` are not counted."""
        keep = np.ones(tau.shape, dtype=bool) if mask is None else mask
        self._tau[self._k] = np.where(keep, tau, np.nan)
        self._error[self._k] = np.where(keep, tau - predicted, np.nan)
        self._k = (self._k + 1) % self._tau.shape[0]

    def r2(self) -> FloatArray:
        """R^2 per joint (n,); NaN for a joint without two predictions or with constant torque."""
        valid = np.isfinite(self._tau)
        count = valid.sum(axis=0)
        tau = np.where(valid, self._tau, 0.0)
        mean = tau.sum(axis=0) / np.maximum(count, 1)
        sst = np.where(valid, (tau - mean) ** 2, 0.0).sum(axis=0)
        sse = np.where(valid, self._error, 0.0) ** 2
        ok = (count >= 2) & (sst > 0.0)
        return np.where(ok, 1.0 - sse.sum(axis=0) / np.where(ok, sst, 1.0), np.nan)


@dataclass(frozen=True)
class IdentifierConfig:
    """Settings of the online identifier (the ``identifier`` node's parameters).

    The buffer is set in time, not in samples, so the same settings serve a 1 kHz robot and a
    100 Hz log: the identifier measures the rate of its stream (`RATE_STEPS` stamp steps, or the
    rate it is given) and derives the sample counts from it (`WindowCounts`).

    Attributes:
        window_duration: time span of the sliding buffer [s] (Kolathaya et al. 2016: 50 samples
            at their 3 Hz refit rate, about 17 s).
        sample_rate: rate of the samples the buffer keeps [Hz]: the stream is decimated to the
            nearest rate at or above it (1 kHz states at 100 Hz: blocks of 10); a slower stream
            is kept whole.
        decimation: how a block becomes one sample: ``average`` (its samples' base regressor
            rows and torques averaged: tau = Y theta holds for the averages exactly, and white
            torque noise drops by the square root of the block's length) or ``first`` (its first
            sample, the rest discarded: a buffer sampled at a low rate, as Kolathaya et al. 2016
            sample theirs at 3 Hz).
        refit_period: time between refits [s] (0: at every kept sample).
        velocity_cutoff_hz: EMA cutoff for velocity and acceleration [Hz].
        alpha: data weight of the pull toward the nominal model (Kolathaya et al. 2016, eq. 105), in (0, 1].
        min_velocity: the equation of a joint slower than this [rad/s] (delay-aligned velocity)
            stays out of the window, the other joints' equations of that sample are kept: near
            rest, dry friction is anywhere between its static limits (a sticking joint fits no
            friction model); 0 keeps every equation.
        gate: when the identified model may be used (the conditions every gate checks, and the
            R^2 gate's settings).
        improvement: which gate decides, and the improvement gate's settings.
    """

    window_duration: float = setting(
        5.0, "time span of the sliding buffer", unit="s", low=0.0, high=3600.0, open=(True, False)
    )
    sample_rate: float = setting(
        100.0,
        "rate of the samples the buffer keeps: the stream is decimated to about this rate (a slower one is kept whole)",
        unit="Hz",
        low=0.0,
        high=100000.0,
        open=(True, False),
    )
    decimation: str = setting(
        "average",
        "a block of samples becomes its average (anti-aliasing) or its first sample",
        choices=("average", "first"),
    )
    refit_period: float = setting(0.1, "time between refits (0: at every kept sample)", unit="s", low=0.0, high=3600.0)
    velocity_cutoff_hz: float = setting(
        15.0, "EMA cutoff for velocity and acceleration", unit="Hz", low=0.0, open=(True, False)
    )
    alpha: float = setting(
        0.999,
        "data weight of the pull toward nominal (Kolathaya et al. 2016, eq. 105)",
        low=0.0,
        high=1.0,
        open=(True, False),
    )
    min_velocity: float = setting(
        0.0, "a joint slower than this leaves its equation out of the window (0: keep all)", unit="rad/s", low=0.0
    )
    gate: GateConfig = inline(GateConfig)
    improvement: ImprovementGateConfig = inline(ImprovementGateConfig)

    def __post_init__(self) -> None:
        check(self)


RATE_STEPS = 10
"""Stamp steps whose median gives a stream's rate, before its first sample enters the buffer."""


@dataclass(frozen=True)
class WindowCounts:
    """`IdentifierConfig`'s times in samples, for one stream.

    Attributes:
        input_rate_hz: the stream's rate [Hz].
        decimation: average blocks of k samples into one.
        window: samples in the buffer.
        refit_every: kept samples between refits.
    """

    input_rate_hz: float
    decimation: int
    window: int
    refit_every: int

    @classmethod
    def of(cls, config: IdentifierConfig, input_rate_hz: float) -> WindowCounts:
        """The counts of ``config`` for a stream at ``input_rate_hz`` [Hz]."""
        decimation = max(1, int(np.floor(input_rate_hz / config.sample_rate + 0.05)))  # 999.9 Hz / 100 Hz: 10
        kept = input_rate_hz / decimation
        return cls(
            input_rate_hz=float(input_rate_hz),
            decimation=decimation,
            window=max(1, int(round(config.window_duration * kept))),
            refit_every=max(1, int(round(config.refit_period * kept))),
        )

    @property
    def rate_hz(self) -> float:
        """Rate of the kept samples [Hz]."""
        return self.input_rate_hz / self.decimation

    def describe(self) -> str:
        """E.g. ``stream at 1000 Hz, blocks of 10 samples averaged (100 Hz): window 500 samples, refit every 10``."""
        kept = "every sample kept" if self.decimation == 1 else f"blocks of {self.decimation} samples averaged"
        return (
            f"stream at {self.input_rate_hz:.4g} Hz, {kept} ({self.rate_hz:.4g} Hz): window {self.window} "
            f"samples ({self.window / self.rate_hz:.3g} s), refit every {self.refit_every}"
        )


class OnlineIdentifier:
    """Samples in, gated model out: the logic of the ``identifier`` node, free of ROS.

    Each accepted sample goes through: acceleration from EMA-filtered velocity (Kolathaya et al. 2016) -> a
    delay line that holds q, qd and tau back by the filter's lag so all four describe the same
    instant -> base regressor rows -> decimation (the average of a block) -> sliding window. Every
    ``refit_every`` kept samples the window is solved and the gate updated. A timestamp that does not
    increase resets everything (bag loop, simulator reset). The sample counts (`counts`) come
    from the settings' times and the stream's rate: given, or measured over its first
    `RATE_STEPS` steps (those samples only warm the filter up).
    """

    def __init__(
        self,
        regressor: Regressor,
        base: BaseParameters,
        theta_nominal: ArrayLike,
        config: IdentifierConfig,
        *,
        input_rate_hz: float | None = None,
    ) -> None:
        """Args: the robot's regressor, its base parameters, full nominal theta (p,), settings, the
        stream's rate [Hz] when known (else measured from its stamps)."""
        from motor_ident.core.estimation.signals import EmaDerivative

        self.regressor, self.base, self.config = regressor, base, config
        n = regressor.robot.n
        self.theta_nominal = base.to_base(theta_nominal)
        self._theta_nominal_full = np.asarray(theta_nominal, dtype=float).copy()
        self._checker: ConsistencyChecker | None = None
        counts = WindowCounts.of(config, input_rate_hz or config.sample_rate)
        self.counts: WindowCounts | None = counts if input_rate_hz is not None else None
        self._steps: list[float] = []
        self._block_Y = np.zeros((n, base.n_base))  # sums over the decimation block being averaged
        self._block_tau = np.zeros(n)
        self._block_count = np.zeros(n)  # samples per joint in the block's sums (min_velocity)
        self._block_speed = np.zeros(n)  # fastest |qd| in the block (the improvement gate's rest test)
        self._aligned = 0  # delay-aligned samples since the start or the last reset
        self.window = SlidingWindowLS(
            n, base.n_base, counts.window, theta_nominal=self.theta_nominal, alpha=config.alpha
        )
        self.gate = (
            ImprovementGate(config.gate, config.improvement, regressor.robot.joint_names)
            if config.improvement.gate_criterion == "improvement"
            else ModelGate(config.gate)
        )
        self.heldout = HeldOutR2(n, counts.window)
        self.evidence = HeldOutEvidence(n, counts.window)
        self._candidate: FloatArray | None = None  # base parameters the improvement gate would switch to
        self.filter = EmaDerivative(n, config.velocity_cutoff_hz)
        self._delay: DelayLine | None = None
        self._Y = np.zeros((1, n, regressor.n_parameters))
        self.fit: WindowFit | None = None
        self.last_time: float | None = None
        self.samples_seen = 0
        self.samples_used = 0
        # equations left out by min_velocity per joint, (n,); a sample with none left still takes
        # its slot in the window, so the window spans the same time whatever min_velocity is
        self.samples_near_rest = np.zeros(n, dtype=int)
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

    @property
    def active_theta_full(self) -> FloatArray:
        """Full parameters (p,) of the active model, ``P active_theta_full = active_theta``: the
        gate's physically valid set when it checked validity, else `active_theta` completed with
        the nominal model's dependent parameters (what the feedforward's RNEA runs on)."""
        consistency = self.gate.consistency
        if self.gate.open and self.fit is not None and consistency is not None:
            return consistency.theta
        return self.base.to_full(self.active_theta, self._theta_nominal_full)

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

    def set_gate(self, gate: GateConfig, improvement: ImprovementGateConfig | None = None) -> None:
        """Use new gate settings from the next refit on (the window and its fit are kept); the
        criterion (``gate_criterion``) stays the one the identifier was built with."""
        improvement = self.config.improvement if improvement is None else improvement
        if improvement.gate_criterion != self.config.improvement.gate_criterion:
            raise ConfigError(
                f"gate_criterion {improvement.gate_criterion!r}: the identifier was built with "
                f"{self.config.improvement.gate_criterion!r} (restart to change it)"
            )
        self.config = dataclasses.replace(self.config, gate=gate, improvement=improvement)
        self.gate.config = gate
        if isinstance(self.gate, ImprovementGate):
            self.gate.improvement = improvement

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
        self.heldout.reset()
        self.evidence.reset()
        self._candidate = None
        self.filter.reset()
        if self._delay is not None:
            self._delay.reset()
        self.gate.reset()
        self.fit = None
        self._since_refit = 0
        self._aligned = 0
        self._empty_block()
        self.resets += 1

    def _add_to_block(self, aligned: FloatArray, qdd: FloatArray) -> None:
        """Add one delay-aligned sample ([q, qd, tau], (3n,); qdd (n,)) to the block's sums: its
        base regressor rows and torques, each joint's only when min_velocity keeps it."""
        n = qdd.size
        q, qd, tau = aligned[:n], aligned[n : 2 * n], aligned[2 * n :]
        np.maximum(self._block_speed, np.abs(qd), out=self._block_speed)
        Y = self.base.base_regressor(self.regressor.rows(q, qd, qdd, out=self._Y)[0])
        if self.config.min_velocity > 0.0:
            keep = np.abs(qd) >= self.config.min_velocity
            self._block_Y[keep] += Y[keep]
            self._block_tau[keep] += tau[keep]
            self._block_count += keep
        else:
            self._block_Y += Y
            self._block_tau += tau
            self._block_count += 1.0

    def _empty_block(self) -> None:
        self._block_Y[:] = 0.0
        self._block_tau[:] = 0.0
        self._block_count[:] = 0.0
        self._block_speed[:] = 0.0

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
        if self.counts is None and dt_in is not None:
            self._steps.append(dt_in)
            if len(self._steps) >= RATE_STEPS:
                self.set_input_rate(1.0 / float(np.median(self._steps)))
        # Filter and delay at the input rate, decimate afterwards: differentiating a decimated
        # velocity (Kolathaya et al. 2016 refit at 3 Hz) would alias and lag far more than the filter itself.
        _, qdd_f = self.filter.update(t, qd)
        if self._delay is None and dt_in is not None:
            self._delay = DelayLine(3 * q.size, int(round(self.filter.delay(dt_in) / dt_in)))
        if self._delay is None:
            return True
        aligned = self._delay.push(np.concatenate([q, qd, tau]))
        if aligned is None:
            return True
        self._aligned += 1  # the blocks' phase starts at the first aligned sample, rate known or not
        if self.counts is None:
            return True
        position = (self._aligned - 1) % self.counts.decimation  # in its block
        if self.config.decimation == "first":
            if position:
                return True  # only the block's first sample is kept
        elif position < self.counts.decimation - 1:
            self._add_to_block(aligned, qdd_f)
            return True
        self._add_to_block(aligned, qdd_f)
        used = self._block_count > 0
        weight = 1.0 / np.maximum(self._block_count, 1)
        Y, tau = self._block_Y * weight[:, None], self._block_tau * weight
        moving = self._block_speed >= self.config.improvement.rest_velocity
        self._empty_block()
        mask = None
        if self.config.min_velocity > 0.0:
            mask = used
            self.samples_near_rest += ~mask
        theta = self.theta_nominal if self.fit is None else self.fit.theta
        self.heldout.add(tau, Y @ theta, mask)  # predicted before the sample is fitted
        if self._candidate is not None:
            self.evidence.add(
                tau, Y @ self._candidate, Y @ self.theta_nominal, moving if mask is None else moving & mask
            )
        self.window.add(Y, tau, mask)
        self.samples_used += 1
        self._since_refit += 1
        if self._since_refit >= self.counts.refit_every:
            self.refit()
        return True

    def set_input_rate(self, rate_hz: float) -> WindowCounts:
        """Derive the sample counts from the stream's rate [Hz]; an empty buffer is resized to them.

        Raises:
            ConfigError: a rate that is not positive.
        """
        if not (np.isfinite(rate_hz) and rate_hz > 0.0):
            raise ConfigError(f"stream rate {rate_hz!r} Hz: expected > 0")
        self.counts = WindowCounts.of(self.config, rate_hz)
        if self.counts.window != self.window.window and self.window.count == 0:
            n, config = self.regressor.robot.n, self.config
            self.window = SlidingWindowLS(
                n, self.base.n_base, self.counts.window, theta_nominal=self.theta_nominal, alpha=config.alpha
            )
            self.heldout = HeldOutR2(n, self.counts.window)
            self.evidence = HeldOutEvidence(n, self.counts.window)
        return self.counts

    def refit(self) -> WindowFit | None:
        """Solve the window now and update the gate."""
        self._since_refit = 0
        try:
            fit = self.window.solve() if self.window.count else None
        except EstimationError:
            fit = None
        self.fit = None if fit is None else dataclasses.replace(fit, r2_predicted=self.heldout.r2())
        if isinstance(self.gate, ImprovementGate):
            self._judge_improvement(self.gate, self.fit)
            return self.fit
        check = self.check_consistency if self.config.gate.require_consistent else None
        self.gate.update(self.fit, self.window.full, check)
        return self.fit

    def _judge_improvement(self, gate: ImprovementGate, fit: WindowFit | None) -> None:
        """Update the improvement gate on the held-out evidence, then make this fit (or its nearest
        consistent parameters) the candidate that predicts the next samples."""
        projection, failure, candidate = None, "", None
        usable = fit is not None and np.all(np.isfinite(fit.theta))
        if fit is not None and usable and fit.condition_number <= self.config.gate.max_condition_number:
            candidate = fit.theta
            if self.config.gate.require_consistent:
                try:
                    projection = self.check_consistency(fit)
                    candidate = projection.theta_base
                except EstimationError as exc:
                    failure, candidate = str(exc), None
        rate = self.counts.rate_hz if self.counts is not None else self.config.sample_rate
        needed = max(2, min(int(round(self.config.improvement.evidence_duration * rate)), self.window.window))
        stats, cost, drift = self.window.stats, None, None
        scale = window_scale(stats, self.config.improvement.torque_floor_fraction)
        if fit is not None and projection is not None:
            cost = (stats.metrics(projection.theta_base).rmse - fit.rmse) / scale
        earlier = gate.candidate_before(self.samples_used - needed)
        if candidate is not None and earlier is not None:
            drift = prediction_change(stats, candidate - earlier) / scale
        gate.evidence, gate.evidence_needed = self.evidence.summary(needed), needed
        refit_every = self.counts.refit_every if self.counts is not None else 1
        gate.passes_needed = 1 + int(self.config.improvement.stable_duration * rate / refit_every + 1e-9)
        gate.projection, gate.projection_failure, gate.consistency_cost = projection, failure, cost
        gate.drift = drift
        gate.update(fit, self.window.full)
        if candidate is not None:
            gate.remember(self.samples_used, candidate)
        self._candidate = candidate
