"""Computed-torque feedforward with friction compensation, saturation and a safe fallback.

Kolathaya et al. 2016, eq. 109 drives the robot with ``U = Y(q, qd, qdd_cmd) theta``; with the base regressor
this is ``tau = Y_base(q, qd, qdd_cmd) theta_base``. The commanded acceleration adds optional PD
feedback to the reference's: ``qdd_cmd = qdd_ref + kd (qd_ref - qd) + kp (q_ref - q)``. Friction
compensation is part of Y (its friction columns, evaluated at the measured velocity).

Every command leaves through `saturate`: finite, within +-effort_limit and within the rate limit.

A new model (the identifier's gate opening or closing, every refit while it is open) is not
switched in at once: `ModelBlend` moves the parameters over a short blend whose torque change is
bounded per second, so a switch never steps the command.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.rigid_body.base_params import BaseParameters
from motor_ident.core.rigid_body.regressor import Regressor
from motor_ident.errors import ConfigError

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class FeedforwardConfig:
    """Gains and limits of the feedforward controller (per joint arrays, shape (n,)).

    Attributes:
        kp: position gain of the commanded acceleration [1/s^2].
        kd: velocity gain of the commanded acceleration [1/s].
        effort_limit: |tau| bound [N m].
        rate_limit: |d tau / dt| bound [N m/s]; inf for none.
        safe_mode: output while state or reference are stale: ``zero`` or ``gravity``.
    """

    kp: FloatArray
    kd: FloatArray
    effort_limit: FloatArray
    rate_limit: FloatArray
    safe_mode: str = "gravity"

    def __post_init__(self) -> None:
        n = np.asarray(self.kp).shape
        for key in ("kp", "kd", "effort_limit", "rate_limit"):
            value = np.asarray(getattr(self, key), dtype=float)
            if value.shape != n:
                raise ConfigError(f"{key} has shape {value.shape}: expected {n}, one value per joint")
            if np.any(np.isnan(value)) or np.any(value < 0.0):
                raise ConfigError(f"{key} = {value.tolist()}: expected values >= 0")
            object.__setattr__(self, key, value)
        if np.any(self.effort_limit <= 0.0) or not np.all(np.isfinite(self.effort_limit)):
            raise ConfigError(f"effort_limit = {self.effort_limit.tolist()}: expected finite values > 0")
        if self.safe_mode not in ("zero", "gravity"):
            raise ConfigError(f"safe_mode = {self.safe_mode!r}: expected 'zero' or 'gravity'")


def saturate(tau: ArrayLike, previous: ArrayLike, config: FeedforwardConfig, dt: float) -> FloatArray:
    """Clip a command to the effort and rate limits; non-finite entries become the previous value.

    Args:
        tau: requested torques (n,) [N m].
        previous: last command sent (n,) [N m] (finite).
        config: limits.
        dt: time since the last command [s] (rate limit spans ``rate_limit * dt``).
    """
    tau = np.asarray(tau, dtype=float)
    prev = np.asarray(previous, dtype=float)
    out = np.where(np.isfinite(tau), tau, prev)
    step = np.where(np.isinf(config.rate_limit), np.inf, config.rate_limit * max(dt, 0.0))  # inf * 0 is NaN
    out = np.clip(out, prev - step, prev + step)
    return np.clip(out, -config.effort_limit, config.effort_limit)


class ComputedTorque:
    """Computed-torque law on base parameters, with preallocated work arrays."""

    def __init__(self, regressor: Regressor, base: BaseParameters, config: FeedforwardConfig) -> None:
        n = regressor.robot.n
        if config.kp.shape != (n,):
            raise ConfigError(f"feedforward gains are for {config.kp.size} joints: expected {n}")
        self.regressor = regressor
        self.base = base
        self.config = config
        self._Y = np.zeros((1, n, regressor.n_parameters))
        self._friction_cols = np.zeros(regressor.n_parameters, dtype=bool)
        for cols in regressor.layout.friction:
            self._friction_cols[cols] = True
        self._zeros = np.zeros(n)

    def torque(self, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, theta_base: ArrayLike) -> FloatArray:
        """Model torque ``Y_base(q, qd, qdd) theta_base`` (n,) [N m], friction included."""
        Y = self.regressor.rows(q, qd, qdd, out=self._Y)[0]
        return self.base.base_regressor(Y) @ np.asarray(theta_base, dtype=float)

    def gravity(self, q: ArrayLike, theta_base: ArrayLike) -> FloatArray:
        """Gravity torque of the model at ``q`` (n,) [N m]: no motion, friction columns zeroed."""
        Y = self.regressor.rows(q, self._zeros, self._zeros, out=self._Y)[0]
        Y[:, self._friction_cols] = 0.0
        return self.base.base_regressor(Y) @ np.asarray(theta_base, dtype=float)

    def command_rows(
        self, q: ArrayLike, qd: ArrayLike, q_ref: ArrayLike, qd_ref: ArrayLike, qdd_ref: ArrayLike
    ) -> FloatArray:
        """Base regressor rows ``Y_base(q, qd, qdd_cmd)`` (n, r) of the command: ``command = rows @ theta``."""
        q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
        qdd_cmd = (
            np.asarray(qdd_ref, dtype=float)
            + self.config.kd * (np.asarray(qd_ref, dtype=float) - qd)
            + self.config.kp * (np.asarray(q_ref, dtype=float) - q)
        )
        return self.base.base_regressor(self.regressor.rows(q, qd, qdd_cmd, out=self._Y)[0])

    def command(
        self,
        q: ArrayLike,
        qd: ArrayLike,
        q_ref: ArrayLike,
        qd_ref: ArrayLike,
        qdd_ref: ArrayLike,
        theta_base: ArrayLike,
    ) -> FloatArray:
        """Unsaturated computed torque for the measured state and the reference (n,) [N m]."""
        return self.command_rows(q, qd, q_ref, qd_ref, qdd_ref) @ np.asarray(theta_base, dtype=float)


class ModelBlend:
    """The model in use, switched to a new one without a torque step.

    Torque is linear in the base parameters, so blending parameters blends torques: during a
    switch the command uses ``theta(s) = (1 - s) theta_from + s theta_to`` with s rising from 0 to
    1 as fast as the bound allows: by ``rate * dt / max_j |rows_j @ (theta_to - theta_from)|`` per
    command, so the switch adds at most ``rate * dt`` [N m] to any joint's command step. A switch
    therefore lasts as long as its torque change needs: 0.2 s for 10 N m at 50 N m/s, one cycle
    for the small change of a refit. A new model during a switch starts from the parameters in use.

    Args:
        theta: base parameters in use at start (r,).
        rate: bound on the switch's share of |d tau / dt| [N m/s]; inf switches at once.
    """

    def __init__(self, theta: ArrayLike, rate: float = 50.0) -> None:
        if not rate > 0.0:
            raise ConfigError(f"blend_rate = {rate!r}: expected > 0 [N m/s] (inf switches at once)")
        self.rate = float(rate)
        self.theta = np.asarray(theta, dtype=float).copy()
        self._from = self._to = self.theta
        self._delta = np.zeros_like(self.theta)  # theta_to - theta_from, fixed for a switch
        self._s = 1.0

    @property
    def progress(self) -> float:
        """Fraction of the current switch done, in [0, 1] (1 when none is under way)."""
        return self._s

    def set_target(self, theta: ArrayLike) -> None:
        """Start switching from the parameters in use to ``theta`` (r,)."""
        self._from = self.theta
        self._to = np.array(theta, dtype=float)
        self._delta = self._to - self._from
        self._s = 0.0

    def step(self, rows: ArrayLike, dt: float) -> FloatArray:
        """Advance the switch for a command with base regressor rows (n, r), ``dt`` [s] after the
        previous one; returns the parameters to use for it (r,)."""
        if self._s >= 1.0:
            return self.theta
        difference = float(np.max(np.abs(np.asarray(rows) @ self._delta)))
        instant = difference == 0.0 or np.isinf(self.rate)
        ds = np.inf if instant else self.rate * max(float(dt), 0.0) / difference
        self._s = min(1.0, self._s + ds)
        self.theta = self._to if self._s >= 1.0 else self._from + self._s * self._delta
        return self.theta


class ReferenceBuffer:
    """Reference trajectory samples (time, q, qd, qdd), linearly interpolated at query times."""

    def __init__(self, n: int) -> None:
        self.n = n
        self._t = np.zeros(0)
        self._x = np.zeros((0, 3, n))

    def set(self, t: ArrayLike, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike) -> None:
        """Replace the reference by samples at absolute times ``t`` (K,) [s]; arrays (K, n)."""
        t = np.asarray(t, dtype=float)
        x = np.stack([np.asarray(a, dtype=float).reshape(t.size, self.n) for a in (q, qd, qdd)], axis=1)
        if t.size and np.any(np.diff(t) <= 0.0):
            raise ConfigError("reference times must be strictly increasing")
        self._t, self._x = t, x

    @property
    def end_time(self) -> float:
        """Time of the last sample (-inf when empty)."""
        return float(self._t[-1]) if self._t.size else float("-inf")

    def sample(self, t: float) -> tuple[FloatArray, FloatArray, FloatArray] | None:
        """q, qd, qdd at time ``t``, or None when ``t`` is outside the samples."""
        if self._t.size == 0 or t < self._t[0] or t > self._t[-1]:
            return None
        k = int(np.searchsorted(self._t, t, side="right")) - 1
        if k >= self._t.size - 1:
            x = self._x[-1]
        else:
            w = (t - self._t[k]) / (self._t[k + 1] - self._t[k])
            x = (1.0 - w) * self._x[k] + w * self._x[k + 1]
        return x[0], x[1], x[2]
