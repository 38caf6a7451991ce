"""Total mass and whole-body CoM while the robot stands: the floating-base fit, chunk by chunk.

`OnlineFloatingBase` keeps the raw sensor samples of the last ``chunk_s`` seconds plus a margin.
Each time a chunk is complete it turns the buffer into regressor samples exactly as the offline
path does (`floating_samples`: zero-phase filter, base pose from the feet), adds the chunk's
middle part to forgetting base-row statistics and refits (WLS), so the online estimate is the
offline one of the recent past, ``chunk_s`` plus the margin late. State: the buffer, the
statistics and the latest estimate. A node calls `add_sample` per synchronised message set.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.estimation.least_squares import RegressionStatistics
from motor_ident.core.floating_base.identification import Estimate, centre_of_mass, total_mass
from motor_ident.core.floating_base.model import FloatingBaseRegressor
from motor_ident.core.floating_base.samples import floating_samples
from motor_ident.core.rigid_body.base_params import BaseParameters
from motor_ident.errors import ConfigError, EstimationError

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class OnlineEstimate:
    """The latest refit: time of the newest sample used [s], total mass, CoM at that sample (world
    axes, origin at the base position of the refit's first buffered sample) and samples in the fit."""

    t: float
    mass: Estimate
    com: Estimate
    samples: float


class OnlineFloatingBase:
    """Sliding floating-base identification of the base rows (module docstring).

    Args:
        regressor: of the floating-base model.
        base: base-parameter map (e.g. `structural_base_parameters` with ``stance``).
        imu_frame, sole_frames: from the robot config's ``floating_base`` section.
        rate_hz: sample rate of `add_sample` calls [Hz].
        chunk_s: seconds of new data per refit; margin_s: filter margin kept on each side [s].
        forgetting_s: time constant of the exponential forgetting of old chunks [s] (0: keep all).
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
    ) -> None:
        if not (rate_hz > 0.0 and chunk_s > 0.0 and margin_s > 0.0 and forgetting_s >= 0.0):
            raise ConfigError("rate_hz, chunk_s, margin_s > 0 and forgetting_s >= 0 expected")
        self.regressor, self.base = regressor, base
        self.imu_frame, self.sole_frames = imu_frame, tuple(sole_frames)
        self._chunk = int(round(chunk_s * rate_hz))
        self._margin = int(round(margin_s * rate_hz))
        self._buffer: deque[tuple[float, FloatArray, FloatArray, FloatArray, FloatArray]] = deque(
            maxlen=self._chunk + 2 * self._margin
        )
        self._new = 0
        self._decay = float(np.exp(-chunk_s / forgetting_s)) if forgetting_s > 0.0 else 1.0
        self.statistics = RegressionStatistics(6, base.n_base)
        self.estimate: OnlineEstimate | None = None

    def add_sample(
        self, t: float, q: ArrayLike, imu_quaternion: ArrayLike, imu_gyro: ArrayLike, wrench: ArrayLike
    ) -> bool:
        """Add one sample: joint positions (n,), IMU [qx, qy, qz, qw] and gyro (3,), wrenches (c, 6).

        Returns:
            True when this sample completed a chunk and `estimate` was refitted.
        """
        self._buffer.append(
            (
                float(t),
                np.asarray(q, dtype=float),
                np.asarray(imu_quaternion, dtype=float),
                np.asarray(imu_gyro, dtype=float),
                np.asarray(wrench, dtype=float),
            )
        )
        self._new += 1
        if len(self._buffer) < self._buffer.maxlen or self._new < self._chunk:  # type: ignore[operator]
            return False
        self._new = 0
        self._refit()
        return True

    def _refit(self) -> None:
        t, q, quat, gyro, wrench = (np.array(column) for column in zip(*self._buffer))
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
        Y = self.base.base_regressor(self.regressor.rows(samples.Q, samples.V, samples.A)[:, :6])
        self.statistics.scale(self._decay)
        self.statistics.add(Y, samples.F[:, :6])
        if self.statistics.count * 6 < 2 * self.base.n_base:
            return
        try:
            fit = self.statistics.wls()
        except EstimationError:
            return  # not excited enough yet: keep the previous estimate
        theta = self.base.to_full(fit.theta, self.regressor.floating.inertial_parameters())
        self.estimate = OnlineEstimate(
            t=float(samples.t[-1]),
            mass=total_mass(self.base, fit.covariance, theta),
            com=centre_of_mass(self.regressor, samples.Q[-1], self.base, fit.covariance, theta),
            samples=float(self.statistics.count),
        )
