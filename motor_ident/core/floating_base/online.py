"""Total mass and whole-body CoM while the robot stands: the floating-base fit, chunk by chunk.

`OnlineFloatingBase` keeps the raw sensor samples of the last ``chunk_s`` seconds plus a margin.
Each time a chunk is complete it turns the buffer into regressor samples exactly as the offline
path does (`floating_samples`: zero-phase filter, base pose from the feet), adds the chunk's
middle part to forgetting base-row statistics and refits (WLS), so the online estimate is the
offline one of the recent past, ``chunk_s`` plus the margin late. State: the buffer, the
statistics and the latest estimate. A node calls `add_sample` per synchronised message set.

The fixed-base identifier's gate (`motor_ident.core.estimation.gate.ModelGate`) decides whether
the estimate may replace the nominal (URDF) one, with the six base rows (the total wrench's
components) in the place of the joints: R^2 per row (in-sample on the accumulated statistics, or
``predicted``: each chunk predicted by the fit made before it), the scaled condition number of
the base-row regressor, and a "full buffer" meaning at least one chunk in the fit. The physical
consistency check is not run: what is published is a total mass and a CoM, not a model to control
with. `active` gives the gate's choice.

The standard deviations of the mass and CoM are residual-based, as offline
(`motor_ident.core.estimation.covariance`): ``H^-1 S H^-1`` with S the long-run covariance of
the scores ``Y_k' W e_k``, accumulated chunk by chunk (`ChunkedSandwich`: each chunk a segment,
forgotten with the statistics; memory p x p, about 10 ms per refit for iCub's 213 base
parameters). A chunk is scored once, with the residuals and weights of the fit made after adding
it: the scores of the final fit would need every chunk's regressor kept, and the fit made before
it (the chunk held out) adds that fit's own error, which in the first refits of a standing robot
(213 parameters from 2-4 s) made the standard deviations hundreds of times the errors. The price is
that each fit absorbs part of the chunk's slow residual; the degrees-of-freedom factor counts it
(the chunk's leverage times the kernel's span) and is capped as offline. The published std are
never below the white-noise ones, which `OnlineEstimate` keeps beside them (``mass_white``,
``com_white``).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.estimation.covariance import ChunkedSandwich
from motor_ident.core.estimation.gate import GateConfig, ModelGate
from motor_ident.core.estimation.least_squares import RegressionStatistics
from motor_ident.core.estimation.online import HeldOutR2
from motor_ident.core.estimation.sliding_window import WindowFit, scaled_condition_number
from motor_ident.core.floating_base.identification import Estimate, centre_of_mass, total_mass
from motor_ident.core.floating_base.model import FloatingBaseRegressor
from motor_ident.core.floating_base.samples import floating_samples
from motor_ident.core.rigid_body.base_params import BaseParameters
from motor_ident.errors import ConfigError, DataError, EstimationError
from motor_ident.schema import check, inline, setting

FloatArray = NDArray[np.float64]

MAX_GAP_S = 0.02
"""[s] missing samples up to this long are interpolated; a longer gap starts the buffer again."""

Sample = tuple[float, FloatArray, FloatArray, FloatArray, FloatArray]
"""t [s], joint positions (n,), IMU quaternion (4,), gyro (3,), wrenches (c, 6)."""


def _interpolated(a: Sample, b: Sample, w: float) -> Sample:
    """The sample a fraction ``w`` of the way from ``a`` to ``b`` (quaternion renormalised)."""
    quat = (1.0 - w) * a[2] + w * b[2]
    return (
        (1.0 - w) * a[0] + w * b[0],
        (1.0 - w) * a[1] + w * b[1],
        quat / np.linalg.norm(quat),
        (1.0 - w) * a[3] + w * b[3],
        (1.0 - w) * a[4] + w * b[4],
    )


@dataclass(frozen=True)
class FloatingOnlineConfig:
    """Settings of `OnlineFloatingBase` (the ``floating_identifier`` node's parameters).

    Attributes:
        rate_hz: sample rate of the synchronised samples [Hz].
        decimation: average blocks of k samples (the fit filters at 5 Hz anyway).
        chunk_s: seconds of new data per refit; margin_s: filter margin kept on each side [s].
        forgetting_s: time constant of the exponential forgetting of old chunks [s] (0: keep all).
        gate: when the identified mass and CoM replace the nominal ones (``require_consistent``
            and ``consistency_confidence`` are not used here).
    """

    rate_hz: float = setting(1000.0, "sample rate of joint_states (and of the IMU and wrenches)", unit="Hz", low=1.0)
    decimation: int = setting(5, "average blocks of k samples (1 kHz, 5 -> 200 Hz)", low=1, high=1000)
    chunk_s: float = setting(2.0, "seconds of new data per refit", unit="s", low=0.0, open=(True, False))
    margin_s: float = setting(0.5, "filter margin kept on each side of a chunk", unit="s", low=0.0, open=(True, False))
    forgetting_s: float = setting(0.0, "time constant of forgetting old chunks (0: keep all)", unit="s", low=0.0)
    gate: GateConfig = inline(GateConfig)

    def __post_init__(self) -> None:
        check(self)


@dataclass(frozen=True)
class OnlineEstimate:
    """A refit: time of the newest sample used [s], total mass, CoM at that sample (world axes,
    origin at the base position of the refit's first buffered sample), both with residual-based
    std, the same with the white-noise std, samples in the fit, the configuration the CoM is taken
    at (7 + n,), the fit the gate judged (its "joints" are the six base rows) and the CPU time of
    the refit [s]."""

    t: float
    mass: Estimate
    com: Estimate
    mass_white: Estimate
    com_white: Estimate
    samples: float
    q_reference: FloatArray = field(default_factory=lambda: np.zeros(0))
    fit: WindowFit | None = None
    cpu_s: float = 0.0


class OnlineFloatingBase:
    """Sliding floating-base identification of the base rows (module docstring).

    Args:
        regressor: of the floating-base model.
        base: base-parameter map (e.g. `structural_base_parameters` with ``stance``).
        imu_frame, sole_frames: from the robot config's ``floating_base`` section.
        rate_hz: sample rate of `add_sample` calls [Hz].
        decimation: average blocks of k samples (`add_sample`); the chunks then hold
            ``rate_hz / k`` samples per second.
        chunk_s: seconds of new data per refit; margin_s: filter margin kept on each side [s].
        forgetting_s: time constant of the exponential forgetting of old chunks [s] (0: keep all).
        gate: the gate's settings (module docstring); the default one when None.
    """

    def __init__(
        self,
        regressor: FloatingBaseRegressor,
        base: BaseParameters,
        *,
        imu_frame: str,
        sole_frames: Sequence[str],
        rate_hz: float,
        chunk_s: float = 2.0,
        margin_s: float = 0.5,
        forgetting_s: float = 0.0,
        gate: GateConfig | None = None,
        decimation: int = 1,
    ) -> None:
        if not (rate_hz > 0.0 and chunk_s > 0.0 and margin_s > 0.0 and forgetting_s >= 0.0 and decimation >= 1):
            raise ConfigError("rate_hz, chunk_s, margin_s > 0, forgetting_s >= 0 and decimation >= 1 expected")
        self._input_rate, self._decimation = float(rate_hz), int(decimation)
        self._block: list[Sample] = []
        self._block_index = 0
        rate_hz = rate_hz / decimation
        self.regressor, self.base = regressor, base
        self.imu_frame, self.sole_frames = imu_frame, tuple(sole_frames)
        self._rate = float(rate_hz)
        self._chunk = int(round(chunk_s * rate_hz))
        self._margin = int(round(margin_s * rate_hz))
        self._buffer: deque[Sample] = deque(maxlen=self._chunk + 2 * self._margin)
        self._new = 0
        self._decay = float(np.exp(-chunk_s / forgetting_s)) if forgetting_s > 0.0 else 1.0
        self.statistics = RegressionStatistics(6, base.n_base)
        self.sandwich = ChunkedSandwich(base.n_base)
        self.estimate: OnlineEstimate | None = None
        self.gate = ModelGate(gate or GateConfig())
        self.heldout = HeldOutR2(6, 2 * self._chunk)
        self.theta_nominal = regressor.floating.inertial_parameters()
        self.nominal_mass = float(self.theta_nominal[0::10].sum())
        self.refits = 0
        self.resets = 0
        self.filled = 0  # samples interpolated over short gaps
        self.gaps = 0  # buffer restarts: a gap longer than MAX_GAP_S, a stamp that did not advance
        self.skipped = 0  # chunks the offline path refused (DataError)

    @classmethod
    def from_config(
        cls,
        regressor: FloatingBaseRegressor,
        base: BaseParameters,
        config: FloatingOnlineConfig,
        *,
        imu_frame: str,
        sole_frames: Sequence[str],
    ) -> OnlineFloatingBase:
        """The estimator of a `FloatingOnlineConfig`."""
        return cls(
            regressor,
            base,
            imu_frame=imu_frame,
            sole_frames=sole_frames,
            rate_hz=config.rate_hz,
            decimation=config.decimation,
            chunk_s=config.chunk_s,
            margin_s=config.margin_s,
            forgetting_s=config.forgetting_s,
            gate=config.gate,
        )

    @property
    def gate_open(self) -> bool:
        """Whether the identified mass and CoM are in use."""
        return self.gate.open

    def reset(self) -> None:
        """Forget every sample and statistic, close the gate (a clock restart, a silent input)."""
        self._buffer.clear()
        self._block.clear()
        self._new = 0
        self.statistics = RegressionStatistics(6, self.base.n_base)
        self.sandwich = ChunkedSandwich(self.base.n_base)
        self.estimate = None
        self.heldout.reset()
        self.gate.reset()
        self.resets += 1

    def set_gate(self, gate: GateConfig) -> None:
        """New gate settings; the next refit uses them."""
        self.gate.config = gate

    def regate(self) -> bool:
        """Judge the latest fit again (after `set_gate` or a forced nominal); returns whether the gate is open."""
        return self.gate.update(None if self.estimate is None else self.estimate.fit, True)

    def active(self) -> tuple[Estimate, Estimate | None]:
        """Total mass and CoM in use: the latest estimate while the gate is open, else the nominal
        model's (std 0) at the latest refit's configuration (CoM None before the first refit)."""
        estimate = self.estimate
        if estimate is not None and self.gate.open:
            return estimate.mass, estimate.com
        mass = Estimate(np.array(self.nominal_mass), np.array(0.0), np.array([True]))
        if estimate is None:
            return mass, None
        covariance = np.zeros((self.base.n_base, self.base.n_base))
        return mass, centre_of_mass(self.regressor, estimate.q_reference, self.base, covariance, self.theta_nominal)

    def add_sample(
        self, t: float, q: ArrayLike, imu_quaternion: ArrayLike, imu_gyro: ArrayLike, wrench: ArrayLike
    ) -> bool:
        """Add one sample: joint positions (n,), IMU [qx, qy, qz, qw] and gyro (3,), wrenches (c, 6).

        With ``decimation`` k > 1 the samples of each block of k periods (by stamp,
        ``round(t rate_hz) // k``) are averaged into one (an anti-aliasing filter; a lost message
        only shortens its block's average). The chunk's filters need uniform sampling: up to
        `MAX_GAP_S` of missing samples are filled by linear interpolation (``filled`` counts them);
        a longer gap or a stamp that does not advance starts the buffer again (``gaps``; the
        statistics stay).

        Returns:
            True when this sample completed a chunk and `estimate` was refitted.
        """
        sample = (
            float(t),
            np.asarray(q, dtype=float),
            np.asarray(imu_quaternion, dtype=float),
            np.asarray(imu_gyro, dtype=float),
            np.asarray(wrench, dtype=float),
        )
        if self._decimation == 1:
            return self._add_uniform(sample)
        block = int(round(sample[0] * self._input_rate)) // self._decimation
        refitted = False
        if self._block and block != self._block_index:
            refitted = self._flush_block()
        self._block_index = block
        self._block.append(sample)
        return refitted

    def _flush_block(self) -> bool:
        """The average of the current decimation block, stamped at the block's centre."""
        _, q, quat, gyro, wrench = (np.mean(np.array(column), axis=0) for column in zip(*self._block))
        self._block.clear()
        t = (self._block_index * self._decimation + 0.5 * (self._decimation - 1)) / self._input_rate
        return self._add_uniform((t, q, quat / np.linalg.norm(quat), gyro, wrench))

    def _add_uniform(self, sample: Sample) -> bool:
        refitted = False
        if self._buffer:
            last = self._buffer[-1]
            missing = int(round((sample[0] - last[0]) * self._rate)) - 1
            if missing < 0 or missing > MAX_GAP_S * self._rate:
                self._buffer.clear()
                self._new = 0
                self.gaps += 1
            elif missing > 0:
                for j in range(1, missing + 1):
                    refitted |= self._append(_interpolated(last, sample, j / (missing + 1)))
                self.filled += missing
        return self._append(sample) or refitted

    def _append(self, sample: Sample) -> bool:
        self._buffer.append(sample)
        self._new += 1
        if len(self._buffer) < self._buffer.maxlen or self._new < self._chunk:  # type: ignore[operator]
            return False
        self._new = 0
        self._refit()
        return True

    def _refit(self) -> None:
        start = time.thread_time()
        t, q, quat, gyro, wrench = (np.array(column) for column in zip(*self._buffer))
        try:
            samples = floating_samples(
                self.regressor,
                t,
                q,
                quat,
                gyro,
                wrench,
                imu_frame=self.imu_frame,
                sole_frames=self.sole_frames,
                trim_s=self._margin / max(self._chunk + 2 * self._margin - 1, 1) * (t[-1] - t[0]),
            )
        except DataError:  # e.g. stamps jittering beyond the filter's tolerance: this chunk is not used
            self.skipped += 1
            return
        Y = self.base.base_regressor(self.regressor.rows(samples.Q, samples.V, samples.A, count=6))
        F = samples.F[:, :6]
        previous = self.estimate.fit if self.estimate is not None else None
        if previous is not None:  # the chunk predicted by the fit made without it (held out)
            predicted = Y @ previous.theta
            for k in range(F.shape[0]):
                self.heldout.add(F[k], predicted[k])
        chunk = RegressionStatistics(6, self.base.n_base)
        chunk.add(Y, F)
        self.statistics.scale(self._decay)
        self.statistics.merge(chunk)
        self.sandwich.scale(self._decay)
        if self.statistics.count * 6 < 2 * self.base.n_base:
            return
        try:
            fit = self.statistics.wls()
        except EstimationError as exc:
            self.gate.open, self.gate.reason = False, f"not excited enough: {exc}"
            return  # keep the previous estimate
        self.sandwich.add(Y, F, fit, chunk)
        covariance = (
            self.sandwich.covariance(fit, self.statistics.equations) if self.sandwich.scored > 0.0 else fit.covariance
        )
        theta = self.base.to_full(fit.theta, self.theta_nominal)
        window = WindowFit(
            theta=fit.theta,
            r2=fit.r2,
            r2_uncentred=fit.r2_uncentred,
            rmse=fit.rmse,
            condition_number=scaled_condition_number(self.statistics.A.sum(axis=0)),
            count=int(round(self.statistics.count)),
            r2_predicted=self.heldout.r2() if previous is not None else None,
        )
        self.gate.update(window, True)
        self.refits += 1
        mass_white = total_mass(self.base, fit.covariance, theta)
        com_white = centre_of_mass(self.regressor, samples.Q[-1], self.base, fit.covariance, theta)
        mass = total_mass(self.base, covariance, theta)
        com = centre_of_mass(self.regressor, samples.Q[-1], self.base, covariance, theta)
        self.estimate = OnlineEstimate(
            t=float(samples.t[-1]),
            mass=replace(mass, std=np.maximum(mass.std, mass_white.std)),
            com=replace(com, std=np.maximum(com.std, com_white.std)),
            mass_white=mass_white,
            com_white=com_white,
            samples=float(self.statistics.count),
            q_reference=np.asarray(samples.Q[-1], dtype=float),
            fit=window,
            cpu_s=time.thread_time() - start,
        )
