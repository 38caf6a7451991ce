"""Velocity and acceleration from sampled joint signals, online and offline.

Online (causal): `EmaDerivative` filters velocity with an exponential moving average and
differentiates it, as Kolathaya et al. 2016 did for accelerations. An EMA with smoothing factor alpha delays
a slow signal by ``(1 - alpha) / alpha`` samples; the finite difference adds half a sample. Both
are reported by `EmaDerivative.delay`, so a user can align torque samples with the derivative.

Offline (non-causal, zero phase, no delay): `savgol_derivatives` (Savitzky-Golay polynomial
fit, derivatives analytic) and `butterworth_derivatives` (forward-backward Butterworth
low-pass, then central differences). Both need uniformly sampled data.
"""

from __future__ import annotations

import numpy as np
import scipy.signal
from numpy.typing import ArrayLike, NDArray

from motor_ident.errors import ConfigError, DataError

FloatArray = NDArray[np.float64]


def ema_alpha(cutoff_hz: float, dt: float) -> float:
    """EMA smoothing factor whose -3 dB frequency is about ``cutoff_hz`` at sample period ``dt``.

    alpha = 1 - exp(-2 pi f_c dt), the discretisation of a first-order low-pass.
    """
    if not cutoff_hz > 0.0 or not dt > 0.0:
        raise ConfigError(f"cutoff {cutoff_hz!r} Hz and period {dt!r} s must both be > 0")
    return float(1.0 - np.exp(-2.0 * np.pi * cutoff_hz * dt))


class EmaDerivative:
    """Causal velocity smoothing and acceleration estimate for n joints.

    Call `update` with each new sample; it returns the filtered velocity and the acceleration.
    A non-increasing timestamp resets the filter (bag loop, simulator reset).
    """

    def __init__(self, n: int, cutoff_hz: float, acceleration_cutoff_hz: float | None = None) -> None:
        """Args: joints, velocity low-pass cutoff [Hz], acceleration low-pass cutoff [Hz]."""
        if n <= 0:
            raise ConfigError(f"n = {n}: expected at least one joint")
        if not cutoff_hz > 0.0:
            raise ConfigError(f"velocity_cutoff_hz = {cutoff_hz!r}: expected > 0")
        self.cutoff_hz = float(cutoff_hz)
        self.acceleration_cutoff_hz = float(acceleration_cutoff_hz or cutoff_hz)
        self._v = np.zeros(n)
        self._a = np.zeros(n)
        self._t: float | None = None
        self._alpha = 1.0

    def reset(self) -> None:
        """Forget the history; the next sample starts the filter again."""
        self._t = None
        self._a[:] = 0.0

    @property
    def initialised(self) -> bool:
        """True once two samples have been seen since the last reset."""
        return self._t is not None

    def delay(self, dt: float) -> float:
        """Group delay of the acceleration estimate at sample period ``dt`` [s] (low frequency)."""
        av = ema_alpha(self.cutoff_hz, dt)
        aa = ema_alpha(self.acceleration_cutoff_hz, dt)
        return dt * ((1.0 - av) / av + (1.0 - aa) / aa + 0.5)

    def update(self, t: float, v: ArrayLike) -> tuple[FloatArray, FloatArray]:
        """Feed the velocity sample ``v`` (n,) taken at time ``t`` [s].

        Returns:
            Filtered velocity and acceleration, each shape (n,) (views of internal state: copy to keep).
        """
        v = np.asarray(v, dtype=float)
        if self._t is None or t <= self._t:
            self._v[:] = v
            self._a[:] = 0.0
            self._t = float(t)
            return self._v, self._a
        dt = float(t) - self._t
        self._t = float(t)
        av = ema_alpha(self.cutoff_hz, dt)
        aa = ema_alpha(self.acceleration_cutoff_hz, dt)
        v_prev = self._v.copy()
        self._v += av * (v - self._v)
        self._a += aa * ((self._v - v_prev) / dt - self._a)
        return self._v, self._a


def _uniform_dt(t: ArrayLike, count: int) -> float:
    t = np.asarray(t, dtype=float)
    if t.ndim != 1 or t.size != count or t.size < 3:
        raise DataError(f"time stamps have shape {t.shape}: expected ({count},) with at least 3 samples")
    steps = np.diff(t)
    if np.any(steps <= 0.0):
        raise DataError("time stamps must be strictly increasing")
    dt = float(np.median(steps))
    if np.max(np.abs(steps - dt)) > 0.05 * dt:
        raise DataError(
            f"sampling is not uniform (steps from {steps.min():.3g} to {steps.max():.3g} s): resample first"
        )
    return dt


def savgol_derivatives(
    t: ArrayLike, x: ArrayLike, *, window_s: float = 0.05, order: int = 3
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Zero-phase Savitzky-Golay smoothing with first and second derivatives.

    Args:
        t: time stamps, shape (N,) [s], uniform.
        x: signal, shape (N,) or (N, n).
        window_s: window length [s] (rounded to an odd number of samples > order).
        order: polynomial order.

    Returns:
        Smoothed x, dx/dt and d2x/dt2, each of the shape of ``x``. No delay.
    """
    x = np.asarray(x, dtype=float)
    dt = _uniform_dt(t, x.shape[0])
    window = max(int(round(window_s / dt)) | 1, order + 2 | 1)
    if window > x.shape[0]:
        raise DataError(f"{x.shape[0]} samples are fewer than the {window}-sample Savitzky-Golay window")
    kw = {"window_length": window, "polyorder": order, "axis": 0, "mode": "interp"}
    return (
        scipy.signal.savgol_filter(x, deriv=0, **kw),
        scipy.signal.savgol_filter(x, deriv=1, delta=dt, **kw),
        scipy.signal.savgol_filter(x, deriv=2, delta=dt, **kw),
    )


def butterworth_derivatives(
    t: ArrayLike, x: ArrayLike, *, cutoff_hz: float = 20.0, order: int = 4
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Zero-phase Butterworth low-pass (forward-backward), then central differences.

    Args:
        t: time stamps, shape (N,) [s], uniform.
        x: signal, shape (N,) or (N, n).
        cutoff_hz: low-pass cutoff [Hz], below the Nyquist frequency.
        order: filter order (the forward-backward pass doubles it).

    Returns:
        Filtered x, dx/dt and d2x/dt2, each of the shape of ``x``. No delay.
    """
    x = np.asarray(x, dtype=float)
    dt = _uniform_dt(t, x.shape[0])
    nyquist = 0.5 / dt
    if not 0.0 < cutoff_hz < nyquist:
        raise ConfigError(f"cutoff_hz = {cutoff_hz!r}: expected between 0 and the Nyquist frequency {nyquist:g} Hz")
    sos = scipy.signal.butter(order, cutoff_hz / nyquist, output="sos")
    smooth = scipy.signal.sosfiltfilt(sos, x, axis=0)
    dx = np.gradient(smooth, dt, axis=0)
    ddx = np.gradient(dx, dt, axis=0)
    return smooth, dx, ddx
