"""Velocity and acceleration from sampled joint signals, online and offline.

Online (causal): `EmaDerivative` filters velocity with an exponential moving average and
differentiates it, as Kolathaya et al. 2016 did for accelerations. An EMA with smoothing factor alpha delays
a slow signal by ``(1 - alpha) / alpha`` samples; the finite difference adds half a sample. Both
are reported by `EmaDerivative.delay`, so a user can align torque samples with the derivative.

Offline (non-causal, zero phase, no delay): `savgol_derivatives` (Savitzky-Golay polynomial
fit, derivatives analytic) and `butterworth_derivatives` (forward-backward Butterworth
low-pass, then central differences). Both need uniformly sampled data: `resample_uniform` puts
a logger's jittered stamps onto a uniform grid first (cubic spline for positions, linear
otherwise). `local_polynomial_derivatives` is the Savitzky-Golay fit on the recorded,
non-uniform stamps themselves (a least-squares cubic over the neighbours of each sample), for
work without resampling. `Differentiation`
is the user's choice between the two (``motor-ident identify --derivative``, a data spec's
``differentiation:`` block), with the option to pass the measured torque through the same
zero-phase filter as the positions.

Which to filter: the positions are differentiated twice, so they always need a low-pass (the
noise of a second difference grows as 1 / dt^2). Torque enters the least squares linearly and
its white noise averages out, so filtering it is optional; it helps when the torque carries
content above the cut-off that the differentiated positions cannot show (the same filter on
both sides keeps them consistent: "parallel filtering").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.interpolate
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


def local_polynomial_derivatives(
    t: ArrayLike, x: ArrayLike, *, window_s: float = 0.05, order: int = 3, chunk: int = 20000
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Savitzky-Golay on non-uniform stamps: a least-squares polynomial over each sample's neighbours.

    Each sample's value and derivatives are those of the polynomial of degree ``order`` fitted to
    the K nearest samples in index (K = the window over the median step, odd; near the ends the
    first or last K), evaluated at the sample's own stamp. On uniform stamps this is
    `savgol_derivatives` (same window, ``mode="interp"``).

    Args:
        t: strictly increasing stamps (N,) [s], any steps.
        x: signal (N,) or (N, n).
        window_s: window [s]; order: polynomial degree; chunk: samples solved at once (memory).

    Returns:
        Smoothed x, dx/dt and d2x/dt2, each of the shape of ``x``.

    Raises:
        DataError: stamps not increasing, or fewer samples than the window.
    """
    t = np.asarray(t, dtype=float)
    x = np.asarray(x, dtype=float)
    if t.ndim != 1 or t.size != x.shape[0] or t.size < 3:
        raise DataError(f"time stamps have shape {t.shape}: expected ({x.shape[0]},) with at least 3 samples")
    steps = np.diff(check_increasing(t))
    dt = float(np.median(steps))
    K = max(int(round(window_s / dt)) | 1, order + 2 | 1)
    N = t.size
    if K > N:
        raise DataError(f"{N} samples are fewer than the {K}-sample Savitzky-Golay window")
    flat = x.reshape(N, -1)
    out = [np.empty_like(flat) for _ in range(3)]
    h = 0.5 * K * dt  # time scale of the powers: keeps the normal equations well conditioned
    powers = np.arange(order + 1)
    for lo in range(0, N, chunk):
        i = np.arange(lo, min(lo + chunk, N))
        start = np.clip(i - K // 2, 0, N - K)
        idx = start[:, None] + np.arange(K)[None, :]  # (c, K)
        u = (t[idx] - t[i][:, None]) / h
        V = u[:, :, None] ** powers[None, None, :]  # (c, K, order+1)
        coef = np.linalg.pinv(V) @ flat[idx]  # (c, order+1, columns)
        out[0][i], out[1][i], out[2][i] = coef[:, 0], coef[:, 1] / h, 2.0 * coef[:, 2] / h**2
    smooth, dx, ddx = (o.reshape(x.shape) for o in out)
    return smooth, dx, ddx


UNIFORM_TOLERANCE = 0.05
"""Largest step deviation from the median step, relative, that still counts as uniform sampling."""


def is_uniform(t: ArrayLike) -> bool:
    """True when the steps of ``t`` (N,) [s] are within `UNIFORM_TOLERANCE` of their median."""
    steps = np.diff(np.asarray(t, dtype=float))
    if steps.size == 0:
        return True
    dt = float(np.median(steps))
    return bool(dt > 0.0 and np.max(np.abs(steps - dt)) <= UNIFORM_TOLERANCE * dt)


MAX_GRID_SAMPLES = 1e8
"""Most samples of a uniform grid (`uniform_grid`): more means a damaged or mis-scaled time column."""


def check_increasing(t: FloatArray) -> FloatArray:
    """``t`` (N,) [s] itself when strictly increasing.

    Raises:
        DataError: a stamp does not increase (the message gives the first one and its index).
    """
    steps = np.diff(t)
    if np.any(steps <= 0.0):
        k = int(np.flatnonzero(steps <= 0.0)[0])
        raise DataError(
            f"time stamps must be strictly increasing: t[{k + 1}] = {float(t[k + 1])!r} after t[{k}] = {float(t[k])!r}"
        )
    return t


def uniform_grid(t: ArrayLike, rate_hz: float | None = None) -> FloatArray:
    """A uniform grid over the span of the stamps ``t`` (N,) [s].

    Args:
        t: strictly increasing stamps [s].
        rate_hz: grid rate [Hz]; the inverse of the median step of ``t`` when None (the logger's
            nominal rate).

    Raises:
        DataError: fewer than 3 stamps, stamps that do not increase, or a grid of more than
            `MAX_GRID_SAMPLES` samples.
    """
    t = np.asarray(t, dtype=float)
    if t.ndim != 1 or t.size < 3:
        raise DataError(f"time stamps have shape {t.shape}: expected (N,) with at least 3 samples")
    steps = np.diff(check_increasing(t))
    if rate_hz is not None and not rate_hz > 0.0:
        raise ConfigError(f"resample rate {rate_hz!r} Hz: expected > 0")
    dt = 1.0 / rate_hz if rate_hz is not None else float(np.median(steps))
    with np.errstate(over="ignore", invalid="ignore"):
        steps_in_span = (t[-1] - t[0]) / dt
    if not steps_in_span < MAX_GRID_SAMPLES:  # NaN too: stamps of +-1e300 or Inf
        raise DataError(
            f"time stamps from {float(t[0])!r} to {float(t[-1])!r} s at a step of {dt:g} s make more than "
            f"{MAX_GRID_SAMPLES:.0e} samples: check the time column (its unit, a damaged stamp)"
        )
    count = int(np.floor(steps_in_span + 1e-9)) + 1
    grid: FloatArray = t[0] + dt * np.arange(count)
    return grid


def resample_uniform(t: ArrayLike, x: ArrayLike, grid: ArrayLike, *, cubic: bool = False) -> FloatArray:
    """Values of ``x`` sampled at ``t`` interpolated onto ``grid``, linearly or by a cubic spline.

    Linear interpolation neither overshoots nor needs a model of the signal; its error on a
    smooth signal is at most ``dt^2 / 8 max|x''|`` (10 ms steps, 10 rad/s^2: 1.3e-4 rad), but its
    kinks at the old stamps show in a second derivative: on sin(2 t) with 8-13 ms steps, the
    Savitzky-Golay acceleration (0.05 s) is off by up to 0.31 rad/s^2 after linear interpolation
    and by 6e-4 after a cubic spline (not-a-knot). Positions are therefore resampled with
    ``cubic=True``; torques and other measurements linearly.

    Args:
        t: original stamps (N,) [s], strictly increasing.
        x: values (N,) or (N, k).
        grid: new stamps (M,) [s] within [t[0], t[-1]].
        cubic: cubic spline through the samples instead of straight lines.

    Returns:
        Values of shape (M,) or (M, k).
    """
    t = np.asarray(t, dtype=float)
    x = np.asarray(x, dtype=float)
    grid = np.asarray(grid, dtype=float)
    if cubic:
        spline: FloatArray = scipy.interpolate.CubicSpline(t, x, axis=0)(grid)
        return spline
    if x.ndim == 1:
        out: FloatArray = np.interp(grid, t, x)
        return out
    columns: FloatArray = np.column_stack([np.interp(grid, t, x[:, k]) for k in range(x.shape[1])])
    return columns.reshape(grid.size, -1)


DERIVATIVE_METHODS = ("savgol", "butterworth")

DEFAULT_WINDOW_S = 0.05
"""Savitzky-Golay window of the default differentiation where it holds `MIN_WINDOW_SAMPLES` [s]."""

MIN_WINDOW_SAMPLES = 11
"""Samples the default Savitzky-Golay window holds at least (a cubic over 5 samples barely smooths) [-]."""


def sample_step(t: ArrayLike) -> float:
    """The median step of the stamps ``t`` (N,) [s] (0 with fewer than 2)."""
    t = np.asarray(t, dtype=float)
    return float(np.median(np.diff(t))) if t.size > 1 else 0.0


@dataclass(frozen=True)
class Differentiation:
    """How offline velocity and acceleration are computed from positions.

    Attributes:
        method: ``savgol`` (Savitzky-Golay: a cubic fitted over a sliding window, derivatives
            analytic; the default, it keeps the shape of fast motions) or ``butterworth``
            (forward-backward low-pass, then central differences; a sharper frequency cut-off).
        window_s: Savitzky-Golay window [s]; None (default): `DEFAULT_WINDOW_S`, lengthened to
            `MIN_WINDOW_SAMPLES` samples at the record's rate (0.05 s at 1 kHz, 0.11 s at 100 Hz).
            0.05 s passes motions up to about 10 Hz at the third order; longer windows smooth more
            and flatten fast reversals. A cubic over 5 samples (0.05 s at 100 Hz) barely smooths:
            on the 100 Hz example log the validation error per joint fell from 4.3, 7.3, 17.7,
            8.9 % to 3.8, 6.8, 17.2, 8.2 % with 11 samples (9 and 15 gave about the same).
        cutoff_hz: Butterworth cut-off [Hz] (4th order, doubled by the forward-backward pass).
            Excitation trajectories rarely go above 2-5 Hz; 10 Hz keeps them and drops sensor noise.
        filter_torque: pass the measured torque through the same zero-phase filter.
    """

    method: str = "savgol"
    window_s: float | None = None
    cutoff_hz: float = 10.0
    filter_torque: bool = False

    def __post_init__(self) -> None:
        if self.method not in DERIVATIVE_METHODS:
            raise ConfigError(f"differentiation method {self.method!r}: expected one of {list(DERIVATIVE_METHODS)}")
        if self.window_s is not None and not (np.isfinite(self.window_s) and self.window_s > 0.0):
            raise ConfigError(f"Savitzky-Golay window {self.window_s!r} s: expected > 0")
        if not (np.isfinite(self.cutoff_hz) and self.cutoff_hz > 0.0):
            raise ConfigError(f"Butterworth cut-off {self.cutoff_hz!r} Hz: expected > 0")

    def window_at(self, step: float) -> float:
        """The Savitzky-Golay window [s] on stamps ``step`` seconds apart (``window_s``, or the default's rule)."""
        if self.window_s is not None:
            return self.window_s
        return max(DEFAULT_WINDOW_S, MIN_WINDOW_SAMPLES * step)

    def derivatives(self, t: ArrayLike, x: ArrayLike) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Smoothed ``x``, dx/dt and d2x/dt2 (each of the shape of ``x`` (N,) or (N, n)), stamps ``t`` [s].

        Non-uniform stamps: Savitzky-Golay as a local polynomial on the stamps themselves
        (`local_polynomial_derivatives`); Butterworth needs uniform steps.

        Raises:
            ConfigError: Butterworth on non-uniform stamps.
        """
        window_s = self.window_at(sample_step(t))
        if not is_uniform(t):
            if self.method == "butterworth":
                raise ConfigError(
                    "Butterworth differentiation needs uniform time steps: resample the record, or use Savitzky-Golay "
                    "(it fits on the recorded stamps)"
                )
            return local_polynomial_derivatives(t, x, window_s=window_s)
        if self.method == "butterworth":
            return butterworth_derivatives(t, x, cutoff_hz=self.cutoff_hz)
        return savgol_derivatives(t, x, window_s=window_s)

    def describe(self, step: float | None = None) -> str:
        """One line for reports, e.g. ``Savitzky-Golay, 0.11 s window (11 samples at 100 Hz), cubic``;
        ``step``: the record's sample step [s], to say how many samples the window holds."""
        if self.method == "butterworth":
            text = f"Butterworth low-pass at {self.cutoff_hz:g} Hz, forward-backward"
        elif step is None or not step > 0.0:
            window = "the default window" if self.window_s is None else f"{self.window_s:g} s window"
            text = f"Savitzky-Golay, {window}, cubic"
        else:
            window_s = self.window_at(step)
            samples = max(int(round(window_s / step)) | 1, 5)
            if self.window_s is not None:
                chosen = ""
            elif window_s > DEFAULT_WINDOW_S:
                chosen = f"; the default {DEFAULT_WINDOW_S:g} s lengthened to {MIN_WINDOW_SAMPLES} samples for the rate"
            else:
                chosen = f"; the default, at least {MIN_WINDOW_SAMPLES} samples at this rate"
            text = f"Savitzky-Golay, {window_s:.3g} s window ({samples} samples at {1.0 / step:.4g} Hz{chosen}), cubic"
        return text + ("; torque filtered the same way" if self.filter_torque else "")

    def few_samples(self, step: float) -> str | None:
        """A note when a window set explicitly holds fewer than `MIN_WINDOW_SAMPLES` samples at ``step`` [s]."""
        if self.method != "savgol" or self.window_s is None or not step > 0.0:
            return None
        samples = max(int(round(self.window_s / step)) | 1, 5)
        if samples >= MIN_WINDOW_SAMPLES:
            return None
        return (
            f"the Savitzky-Golay window {self.window_s:g} s holds {samples} samples at {1.0 / step:.4g} Hz: "
            "a cubic over so few barely smooths the derivatives; without window_s (or --savgol-window) it would be "
            f"{Differentiation(method=self.method).window_at(step):.3g} s ({MIN_WINDOW_SAMPLES} samples)"
        )
