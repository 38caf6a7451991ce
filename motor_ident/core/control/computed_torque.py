"""Computed-torque feedforward with friction compensation, saturation and a safe fallback.

Kolathaya et al. 2016, eq. 109 drives the robot with ``U = Y(q, qd, qdd_cmd) theta``; with the base regressor
this is ``tau = Y_base(q, qd, qdd_cmd) theta_base``. The commanded acceleration adds optional PD
feedback to the reference's: ``qdd_cmd = qdd_ref + kd (qd_ref - qd) + kp (q_ref - q)``. Friction
compensation is part of Y (its friction columns, evaluated at the measured velocity). The same
torque by RNEA on the full parameters, without regressor rows, is
`motor_ident.core.control.model_torque.RneaComputedTorque` (the feedforward node's 1 kHz path).

Every command leaves through `saturate`: finite, within +-effort_limit and within the rate limit.

A new model (the identifier's gate opening or closing, every refit while it is open) is not
switched in at once: `ModelBlend` moves the parameters over a short blend whose torque change is
bounded per second, so a switch never steps the command.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import cast

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

    The arrays are read-only: `saturate` reads the limits from plain floats made once here.
    """

    kp: FloatArray
    kd: FloatArray
    effort_limit: FloatArray
    rate_limit: FloatArray
    safe_mode: str = "gravity"
    limits: tuple[tuple[float, float], ...] = field(init=False, repr=False, compare=False)
    """(rate_limit, effort_limit) per joint as floats."""

    def __post_init__(self) -> None:
        n = np.asarray(self.kp).shape
        for key in ("kp", "kd", "effort_limit", "rate_limit"):
            value = np.array(getattr(self, key), dtype=float)  # a copy: made read-only below
            if value.shape != n:
                raise ConfigError(f"{key} has shape {value.shape}: expected {n}, one value per joint")
            if np.any(np.isnan(value)) or np.any(value < 0.0):
                raise ConfigError(f"{key} = {value.tolist()}: expected values >= 0")
            value.setflags(write=False)
            object.__setattr__(self, key, value)
        if np.any(self.effort_limit <= 0.0) or not np.all(np.isfinite(self.effort_limit)):
            raise ConfigError(f"effort_limit = {self.effort_limit.tolist()}: expected finite values > 0")
        if self.safe_mode not in ("zero", "gravity"):
            raise ConfigError(f"safe_mode = {self.safe_mode!r}: expected 'zero' or 'gravity'")
        object.__setattr__(self, "limits", tuple(zip(self.rate_limit.tolist(), self.effort_limit.tolist())))


def saturate(
    tau: ArrayLike, previous: ArrayLike, config: FeedforwardConfig, dt: float, out: FloatArray | None = None
) -> FloatArray:
    """Clip a command to the effort and rate limits; non-finite entries become the previous value.

    Args:
        tau: requested torques (n,) [N m].
        previous: last command sent (n,) [N m] (finite).
        config: limits.
        dt: time since the last command [s] (rate limit spans ``rate_limit * dt``).
        out: where to write the result (n,) (a new array when None).

    Plain float arithmetic joint by joint: on an arm's few joints several times cheaper than a
    dozen numpy calls of about half a microsecond each (the 1 kHz path).
    """
    commands = []
    for value, last, (rate, limit) in zip(
        np.asarray(tau, dtype=float).tolist(), np.asarray(previous, dtype=float).tolist(), config.limits, strict=True
    ):
        if not math.isfinite(value):
            value = last
        if dt > 0.0:
            step = rate * dt
        else:  # no time passed: only unlimited joints may move (inf * 0 would be NaN)
            step = math.inf if rate == math.inf else 0.0
        value = min(max(value, last - step), last + step)
        commands.append(min(max(value, -limit), limit))
    if out is None:
        return np.array(commands)
    out[:] = commands
    return out


def commanded_acceleration(
    config: FeedforwardConfig,
    q: ArrayLike,
    qd: ArrayLike,
    q_ref: ArrayLike,
    qd_ref: ArrayLike,
    qdd_ref: ArrayLike,
    out: FloatArray | None = None,
) -> FloatArray:
    """``qdd_cmd = qdd_ref + kd (qd_ref - qd) + kp (q_ref - q)`` (n,) [rad/s^2], into ``out`` when given.

    Args:
        config: the gains kp [1/s^2] and kd [1/s] (n,).
        q, qd: measured positions and velocities (n,) [rad, rad/s].
        q_ref, qd_ref, qdd_ref: the reference at the same instant (n,).
        out: optional preallocated result (n,).
    """
    out = np.empty(config.kp.shape) if out is None else out
    np.subtract(q_ref, q, out=out)
    out *= config.kp
    out += cast(FloatArray, qdd_ref)
    out += config.kd * cast(FloatArray, np.subtract(qd_ref, qd))
    return out


class ComputedTorque:
    """Computed-torque law on base parameters by the regressor, with preallocated work arrays.

    The feedforward node uses `motor_ident.core.control.model_torque.RneaComputedTorque` (the
    same torques by RNEA on full parameters, without building regressor rows); this form serves
    where base parameters are what is at hand: the ROS-free closed loop, which blends the
    identifier's base estimate, and `ResidualFeedforward`'s composition.
    """

    def __init__(self, regressor: Regressor, base: BaseParameters, config: FeedforwardConfig) -> None:
        n = regressor.robot.n
        if config.kp.shape != (n,):
            raise ConfigError(f"feedforward gains are for {config.kp.size} joints: expected {n}")
        self.regressor = regressor
        self.base = base
        self.config = config
        self._Y = np.zeros((1, n, regressor.n_parameters))
        self._friction_cols = np.zeros(regressor.n_parameters, dtype=bool)
        for cols in (*regressor.layout.friction, *regressor.layout.motor_friction):
            self._friction_cols[cols] = True
        self._zeros = np.zeros(n)

    def torque(self, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike, theta_base: ArrayLike) -> FloatArray:
        """Model torque ``Y_base(q, qd, qdd) theta_base`` (n,) [N m], friction included."""
        Y = self.regressor.rows(q, qd, qdd, out=self._Y)[0]
        return cast(FloatArray, self.base.base_regressor(Y) @ np.asarray(theta_base, dtype=float))

    def gravity(self, q: ArrayLike, theta_base: ArrayLike) -> FloatArray:
        """Gravity torque of the model at ``q`` (n,) [N m]: no motion, friction columns zeroed."""
        Y = self.regressor.rows(q, self._zeros, self._zeros, out=self._Y)[0]
        Y[:, self._friction_cols] = 0.0
        return cast(FloatArray, self.base.base_regressor(Y) @ np.asarray(theta_base, dtype=float))

    def command_rows(
        self, q: ArrayLike, qd: ArrayLike, q_ref: ArrayLike, qd_ref: ArrayLike, qdd_ref: ArrayLike
    ) -> FloatArray:
        """Base regressor rows ``Y_base(q, qd, qdd_cmd)`` (n, r) of the command: ``command = rows @ theta``."""
        q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
        qdd_cmd = commanded_acceleration(self.config, q, qd, q_ref, qd_ref, qdd_ref)
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
        return cast(FloatArray, self.command_rows(q, qd, q_ref, qd_ref, qdd_ref) @ np.asarray(theta_base, dtype=float))


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
        return self.advance(float(np.max(np.abs(np.asarray(rows) @ self._delta))), dt)

    def advance(self, difference: float, dt: float) -> FloatArray:
        """Advance the switch for a command whose torque the whole switch would change by
        ``difference`` = max_j |tau_j(theta_to) - tau_j(theta_from)| [N m] at this state, ``dt``
        [s] after the previous one; returns the parameters to use for it."""
        if self._s >= 1.0 or (dt <= 0.0 and np.isfinite(self.rate)):  # dt = 0: hold the switch where it is
            return self.theta
        instant = difference == 0.0 or np.isinf(self.rate)
        ds = np.inf if instant else self.rate * max(float(dt), 0.0) / difference
        self._s = min(1.0, self._s + ds)
        self.theta = self._to if self._s >= 1.0 else self._from + self._s * self._delta
        return self.theta


class ReferenceBuffer:
    """Reference trajectory samples (time, q, qd, qdd), linearly interpolated at query times.

    Queries usually move forward by one control period: the segment of the previous query is
    tried before a binary search, and the result is written into a preallocated array. The times
    are also kept as plain floats: comparing numpy scalars costs several times more, at 1 kHz.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self._t = np.zeros(0)
        self._times: list[float] = []
        self._x = np.zeros((0, 3, n))
        self._k = 0
        self._out = np.zeros((3, n))
        self._work = np.zeros((3, n))
        self._rows = (self._out[0], self._out[1], self._out[2])

    def set(self, t: ArrayLike, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike) -> None:
        """Replace the reference by samples at absolute times ``t`` (K,) [s]; arrays (K, n)."""
        t = np.asarray(t, dtype=float)
        x = np.stack([np.asarray(a, dtype=float).reshape(t.size, self.n) for a in (q, qd, qdd)], axis=1)
        if t.size and np.any(np.diff(t) <= 0.0):
            raise ConfigError("reference times must be strictly increasing")
        self._t, self._times, self._x, self._k = t, t.tolist(), x, 0

    @property
    def end_time(self) -> float:
        """Time of the last sample (-inf when empty)."""
        return float(self._t[-1]) if self._t.size else float("-inf")

    def sample(self, t: float) -> tuple[FloatArray, FloatArray, FloatArray] | None:
        """q, qd, qdd (n,) each at time ``t``, or None when ``t`` is outside the samples.

        The arrays are views of a work array of this buffer, overwritten by the next call.
        """
        times = self._times
        size = len(times)
        if size == 0 or t < times[0] or t > times[-1]:
            return None
        k = self._k
        if k + 1 < size and t >= times[k + 1]:
            k += 1  # the next segment (a query per control period, samples at least as far apart)
        if not (k + 1 < size and times[k] <= t < times[k + 1]):
            k = bisect.bisect_right(times, t) - 1
        self._k = k
        out = self._out
        if k >= size - 1:
            out[:] = self._x[-1]
        else:
            w = (t - times[k]) / (times[k + 1] - times[k])
            np.multiply(self._x[k + 1], w, out=out)
            out += np.multiply(self._x[k], 1.0 - w, out=self._work)
        return self._rows
