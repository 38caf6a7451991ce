"""Finite Fourier series excitation trajectories (Szabó & Szádeczky-Kardoss 2021, eq. 22, Liu et al. 2023, eq. 15).

For joint i with M harmonics of the fundamental pulsation w_f = 2 pi f_f:

    q_i(t)   = q0_i + sum_l  a_il / (w_f l) sin(w_f l t) - b_il / (w_f l) cos(w_f l t)
    qd_i(t)  =        sum_l  a_il cos(w_f l t) + b_il sin(w_f l t)
    qdd_i(t) =        sum_l -a_il w_f l sin(w_f l t) + b_il w_f l cos(w_f l t)

The trajectory is periodic with period 1 / f_f, and q, qd, qdd are exact derivatives of each other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.errors import ConfigError

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class FourierTrajectory:
    """Coefficients of a finite Fourier series trajectory.

    Attributes:
        a: sine-velocity coefficients, shape (n, M) [rad/s].
        b: cosine-velocity coefficients, shape (n, M) [rad/s].
        q0: offsets, shape (n,) [rad].
        base_frequency: f_f [Hz].
    """

    a: FloatArray
    b: FloatArray
    q0: FloatArray
    base_frequency: float

    def __post_init__(self) -> None:
        a = np.atleast_2d(np.asarray(self.a, dtype=float))
        b = np.atleast_2d(np.asarray(self.b, dtype=float))
        q0 = np.atleast_1d(np.asarray(self.q0, dtype=float))
        if a.shape != b.shape or q0.shape != (a.shape[0],):
            raise ConfigError(
                f"Fourier coefficients a {a.shape}, b {b.shape}, q0 {q0.shape}: expected (n, M), (n, M), (n,)"
            )
        if not self.base_frequency > 0.0:
            raise ConfigError(f"base_frequency = {self.base_frequency!r}: expected > 0 Hz")
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "q0", q0)

    @property
    def period(self) -> float:
        """Period of the trajectory [s]."""
        return 1.0 / self.base_frequency

    def evaluate(self, t: ArrayLike) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Positions, velocities, accelerations at times ``t`` (N,), each shape (N, n)."""
        t = np.atleast_1d(np.asarray(t, dtype=float))
        M = self.a.shape[1]
        w = 2.0 * np.pi * self.base_frequency * np.arange(1, M + 1)  # (M,)
        s = np.sin(np.outer(t, w))  # (N, M)
        c = np.cos(np.outer(t, w))
        q = self.q0 + (s / w) @ self.a.T - (c / w) @ self.b.T
        qd = c @ self.a.T + s @ self.b.T
        qdd = -(s * w) @ self.a.T + (c * w) @ self.b.T
        return q, qd, qdd


def random_fourier_trajectory(
    rng: np.random.Generator,
    *,
    n: int,
    harmonics: int = 5,
    base_frequency: float = 0.1,
    velocity_amplitude: float | ArrayLike = 1.0,
    q0: ArrayLike | None = None,
) -> FourierTrajectory:
    """A random trajectory whose velocity amplitude per joint is at most ``velocity_amplitude``.

    Coefficients are drawn uniformly and scaled so that sum_l |a_il| + |b_il| equals the
    amplitude, which bounds |qd_i| by it.
    """
    amp = np.broadcast_to(np.asarray(velocity_amplitude, dtype=float), (n,))
    a = rng.uniform(-1.0, 1.0, (n, harmonics))
    b = rng.uniform(-1.0, 1.0, (n, harmonics))
    scale = amp / (np.abs(a).sum(axis=1) + np.abs(b).sum(axis=1))
    return FourierTrajectory(
        a=a * scale[:, None],
        b=b * scale[:, None],
        q0=np.zeros(n) if q0 is None else np.asarray(q0, dtype=float),
        base_frequency=base_frequency,
    )


def ramp_in(
    t: ArrayLike, q_start: ArrayLike, trajectory: FourierTrajectory, ramp_time: float
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The trajectory blended in from rest at ``q_start`` over ``ramp_time`` seconds.

    ``q = q_start + s(t) (q_f(t) - q_start)`` with the quintic smoothstep s (s, s', s'' are 0 at
    t = 0 and s = 1, s' = s'' = 0 from ``ramp_time`` on), so the reference starts at rest where
    the robot is and becomes the Fourier trajectory exactly. Derivatives by the product rule.

    Args:
        t: times since the start, shape (N,) [s]; before 0 the robot is held at ``q_start``.
        q_start: initial positions (n,) [rad].
        trajectory: the excitation.
        ramp_time: blend duration [s] (> 0).

    Returns:
        q, qd, qdd, each (N, n).
    """
    if not ramp_time > 0.0:
        raise ConfigError(f"ramp_time = {ramp_time!r}: expected > 0 s")
    t = np.atleast_1d(np.asarray(t, dtype=float))
    q_start = np.asarray(q_start, dtype=float)
    qf, qdf, qddf = trajectory.evaluate(np.maximum(t, 0.0))
    x = np.clip(t / ramp_time, 0.0, 1.0)[:, None]
    inside = ((t > 0.0) & (t < ramp_time))[:, None]
    s = x**3 * (10.0 - 15.0 * x + 6.0 * x**2)
    ds = np.where(inside, 30.0 * x**2 * (1.0 - x) ** 2 / ramp_time, 0.0)
    dds = np.where(inside, 60.0 * x * (1.0 - x) * (1.0 - 2.0 * x) / ramp_time**2, 0.0)
    d = qf - q_start
    return q_start + s * d, s * qdf + ds * d, s * qddf + 2.0 * ds * qdf + dds * d
