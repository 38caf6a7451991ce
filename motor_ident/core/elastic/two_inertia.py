"""Two-inertia elastic drive (Xin et al. 2020, eq. 1-3): model, transfer functions, FRF estimate and fit.

All quantities are referred to the link side of a gear of ratio N: motor angle ``theta_m`` here
is the motor encoder angle divided by N, ``J_m`` is N^2 times the rotor inertia, ``B_m`` is N^2
times the rotor viscous damping, and the motor torque is N times the torque at the rotor.

Model (Xin et al. 2020, eq. 1; velocities ``v = d theta / dt``)::

    J_m dv_m/dt + B_m v_m = tau_m - tau_j
    J_l dv_l/dt + B_l v_l = tau_j
    tau_j = K (theta_m - theta_l) + D (v_m - v_l)

Transfer functions, derived again (the extracted text of eq. 2-3 is garbled). With
``C(s) = D s + K``, ``A_m(s) = J_m s^2 + (B_m + D) s + K``, ``A_l(s) = J_l s^2 + (B_l + D) s + K``
the Laplace transform of the model in positions is ``A_m theta_m - C theta_l = tau_m`` and
``A_l theta_l = C theta_m``, so with ``Det = A_m A_l - C^2``::

    v_m / tau_m = s A_l / Det        v_l / tau_m = s C / Det        v_l / v_m = C / A_l   (P_ML)

``Det`` has the root s = 0 (rigid-body mode: ``Det(0) = K^2 - K^2``), so ``Det = s Det'`` and the
velocity responses are ``A_l / Det'`` and ``C / Det'`` (`transfer_polynomials`). Without damping
(B_m = B_l = D = 0), ``Det' = s (J_m J_l s^2 + K (J_m + J_l))`` and::

    v_m / tau_m = (s^2 + w_a^2) / (J_m s (s^2 + w_r^2))
                = 1 / ((J_m + J_l) s) * (s^2 + w_a^2) / (s^2 + w_r^2) * w_r^2 / w_a^2      (eq. 2)
    v_l / tau_m = 1 / ((J_m + J_l) s) * w_r^2 / (s^2 + w_r^2)
    w_a^2 = K / J_l  (anti-resonance),   w_r^2 = K (J_m + J_l) / (J_m J_l) = w_a^2 (1 + J_l / J_m)

using ``J_m = (J_m + J_l) w_a^2 / w_r^2``. The motor velocity shows the anti-resonance / resonance
pair, the link velocity only the resonance, as Xin et al. 2020, Figure 3 reports.

Test bench of Xin et al. 2020, Table 1: J_l = 2.26 kg m^2, B_l = 5 N m s/rad, K = 34000 N m/rad,
D = 10 N m s/rad, B_m = 33.28 N m s/rad, N = 160, 0.17 N m/A, 1 kHz. The anti-resonance is set by
K and J_l alone: f_a = sqrt(K / J_l) / 2 pi = 19.52 Hz (the paper's "19 Hz"). Table 1's J_m = 7.34
kg m^2 would put the resonance at 22.3 Hz, not the 21 Hz the paper measured; inverting
``w_r^2 = w_a^2 (1 + J_l / J_m)`` for f_r = 21 Hz gives ``J_m = J_l / ((f_r / f_a)^2 - 1) = 14.37``
kg m^2, which `xin_bench_parameters` uses (`motor_inertia_for_resonance`).

Identification (`estimate_frf`, `fit_two_inertia`): a chirp torque drives the joint; the H1
estimate ``H = S_ux / S_uu`` (Welch cross / auto spectra) and its coherence give the motor (and
link) velocity response. Peak picking gives f_a (minimum of |H_m|) and f_r (maximum above it); the
low-frequency asymptote ``|H_m| ~ 1 / (J w)`` gives the total inertia J; then
``J_m = J w_a^2 / w_r^2``, ``J_l = J - J_m``, ``K = J_l w_a^2``. A nonlinear least-squares fit of
the complex log response over the coherent band refines all six parameters, dampings included.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import scipy.optimize
import scipy.signal
from numpy.typing import ArrayLike, NDArray

from motor_ident.errors import ConfigError, DataError, EstimationError

FloatArray = NDArray[np.float64]
ComplexArray = NDArray[np.complex128]

TWO_PI = 2.0 * np.pi


@dataclass(frozen=True)
class TwoInertiaParameters:
    """Link-side referred two-inertia drive (Xin et al. 2020, eq. 1).

    Attributes:
        motor_inertia: J_m, motor plus gear input inertia seen from the link [kg m^2].
        load_inertia: J_l [kg m^2].
        stiffness: K, joint (flexspline) stiffness [N m/rad].
        motor_damping: B_m [N m s/rad].
        load_damping: B_l [N m s/rad].
        damping: D, joint damping [N m s/rad].
    """

    motor_inertia: float
    load_inertia: float
    stiffness: float
    motor_damping: float = 0.0
    load_damping: float = 0.0
    damping: float = 0.0

    def __post_init__(self) -> None:
        for key in ("motor_inertia", "load_inertia", "stiffness"):
            value = getattr(self, key)
            if not (np.isfinite(value) and value > 0.0):
                raise ConfigError(f"{key} = {value!r}: expected a finite number > 0")
        for key in ("motor_damping", "load_damping", "damping"):
            value = getattr(self, key)
            if not (np.isfinite(value) and value >= 0.0):
                raise ConfigError(f"{key} = {value!r}: expected a finite number >= 0")

    @property
    def total_inertia(self) -> float:
        """J_m + J_l [kg m^2]."""
        return self.motor_inertia + self.load_inertia

    @property
    def total_damping(self) -> float:
        """B_m + B_l [N m s/rad]."""
        return self.motor_damping + self.load_damping

    @property
    def anti_resonance(self) -> float:
        """w_a = sqrt(K / J_l) [rad/s] (undamped)."""
        return float(np.sqrt(self.stiffness / self.load_inertia))

    @property
    def resonance(self) -> float:
        """w_r = w_a sqrt(1 + J_l / J_m) [rad/s] (undamped)."""
        return self.anti_resonance * float(np.sqrt(1.0 + self.load_inertia / self.motor_inertia))

    @property
    def anti_resonance_hz(self) -> float:
        """f_a [Hz]."""
        return self.anti_resonance / TWO_PI

    @property
    def resonance_hz(self) -> float:
        """f_r [Hz]."""
        return self.resonance / TWO_PI

    def with_load_inertia(self, load_inertia: float) -> TwoInertiaParameters:
        """A copy with another load inertia [kg m^2] (Xin et al.'s robustness test)."""
        return replace(self, load_inertia=float(load_inertia))


def motor_inertia_for_resonance(load_inertia: float, stiffness: float, resonance_hz: float) -> float:
    """J_m [kg m^2] giving the resonance ``resonance_hz`` for the given J_l and K.

    Inverts ``w_r^2 = w_a^2 (1 + J_l / J_m)``: ``J_m = J_l / ((w_r / w_a)^2 - 1)``.

    Raises:
        ConfigError: the resonance is not above the anti-resonance sqrt(K / J_l).
    """
    w_a = np.sqrt(stiffness / load_inertia)
    w_r = TWO_PI * resonance_hz
    if not w_r > w_a:
        raise ConfigError(
            f"resonance_hz = {resonance_hz!r}: expected above the anti-resonance {w_a / TWO_PI:.3f} Hz = sqrt(K/J_l)"
        )
    return float(load_inertia / ((w_r / w_a) ** 2 - 1.0))


def _model_polynomials(p: TwoInertiaParameters) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """A_m, A_l, C and Det' = Det / s, ascending powers of s."""
    P = np.polynomial.polynomial
    a_m = np.array([p.stiffness, p.motor_damping + p.damping, p.motor_inertia])
    a_l = np.array([p.stiffness, p.load_damping + p.damping, p.load_inertia])
    c = np.array([p.stiffness, p.damping])
    det = P.polysub(P.polymul(a_m, a_l), P.polymul(c, c))
    return a_m, a_l, c, det[1:]  # det[0] = K^2 - K^2 = 0: the rigid-body root s = 0


def transfer_polynomials(p: TwoInertiaParameters) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Torque -> velocity transfer functions ``v_m / tau_m`` and ``v_l / tau_m``.

    Returns:
        ``(num_motor, num_link, den)``, descending powers of s (scipy.signal convention):
        v_m / tau_m = num_motor / den and v_l / tau_m = num_link / den [rad/s per N m].
    """
    _, a_l, c, det = _model_polynomials(p)
    return a_l[::-1].copy(), c[::-1].copy(), det[::-1].copy()


def frequency_response(p: TwoInertiaParameters, f_hz: ArrayLike) -> tuple[ComplexArray, ComplexArray]:
    """Model responses v_m / tau_m and v_l / tau_m at frequencies ``f_hz`` (K,) [rad/s per N m]."""
    num_m, num_l, den = transfer_polynomials(p)
    s = 1j * TWO_PI * np.asarray(f_hz, dtype=float)
    d = np.polyval(den, s)
    return np.polyval(num_m, s) / d, np.polyval(num_l, s) / d


def chirp_torque(
    duration: float, rate_hz: float, *, f0: float = 1.0, f1: float = 80.0, amplitude: float = 50.0
) -> tuple[FloatArray, FloatArray]:
    """Logarithmic swept-sine torque for an FRF experiment.

    Returns:
        Times (N,) [s] and torques (N,) [N m], ``N = duration * rate_hz``.
    """
    if not (duration > 0.0 and rate_hz > 0.0 and 0.0 < f0 < f1 < rate_hz / 2.0):
        raise ConfigError(f"chirp duration {duration!r} s, rate {rate_hz!r} Hz, band {f0!r}-{f1!r} Hz: invalid")
    t = np.arange(int(round(duration * rate_hz))) / rate_hz
    return t, amplitude * scipy.signal.chirp(t, f0=f0, t1=duration, f1=f1, method="logarithmic")


def estimate_frf(
    u: ArrayLike, y: ArrayLike, rate_hz: float, *, segment_s: float = 4.0
) -> tuple[FloatArray, ComplexArray, FloatArray]:
    """H1 frequency-response estimate ``S_uy / S_uu`` with Welch averaging (Hann, 50 % overlap).

    Args:
        u: input samples (torque), shape (N,) [N m].
        y: output samples (velocity), shape (N,) [rad/s].
        rate_hz: sample rate [Hz].
        segment_s: Welch segment length [s] (frequency resolution 1 / segment_s).

    Returns:
        Frequencies (K,) [Hz], H (K,) complex [rad/s per N m], magnitude-squared coherence (K,).

    Raises:
        DataError: shapes differ, data is not finite or shorter than one segment.
    """
    u = np.asarray(u, dtype=float)
    y = np.asarray(y, dtype=float)
    if u.shape != y.shape or u.ndim != 1:
        raise DataError(f"input {u.shape} and output {y.shape}: expected two arrays of shape (N,)")
    if not (np.all(np.isfinite(u)) and np.all(np.isfinite(y))):
        raise DataError("FRF data contain NaN or Inf")
    nperseg = int(round(segment_s * rate_hz))
    if u.size < nperseg:
        raise DataError(f"{u.size} samples are fewer than one {nperseg}-sample Welch segment")
    f, s_uy = scipy.signal.csd(u, y, fs=rate_hz, nperseg=nperseg)
    _, s_uu = scipy.signal.welch(u, fs=rate_hz, nperseg=nperseg)
    _, coh = scipy.signal.coherence(u, y, fs=rate_hz, nperseg=nperseg)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = np.where(s_uu > 0.0, s_uy / np.where(s_uu > 0.0, s_uu, 1.0), np.nan + 0j)
    return f, h, coh


@dataclass(frozen=True)
class TwoInertiaFit:
    """Result of `fit_two_inertia`.

    Attributes:
        parameters: fitted model.
        anti_resonance_hz: f_a picked from the measured |H_m| minimum [Hz].
        resonance_hz: f_r picked from the measured |H_m| maximum [Hz].
        rms_log_error: RMS of the complex log-response residual of the refined fit [-].
        n_frequencies: frequencies used.
    """

    parameters: TwoInertiaParameters
    anti_resonance_hz: float
    resonance_hz: float
    rms_log_error: float
    n_frequencies: int


def _parabolic_peak(f: FloatArray, y: FloatArray, k: int) -> float:
    if 0 < k < f.size - 1:
        a, b, c = y[k - 1], y[k], y[k + 1]
        den = a - 2.0 * b + c
        if den != 0.0:
            return float(f[k] + 0.5 * (a - c) / den * (f[k + 1] - f[k - 1]) / 2.0)
    return float(f[k])


def fit_two_inertia(
    f_hz: ArrayLike,
    h_motor: ArrayLike,
    *,
    h_link: ArrayLike | None = None,
    coherence: ArrayLike | None = None,
    band: tuple[float, float] = (2.0, 60.0),
    min_coherence: float = 0.8,
) -> TwoInertiaFit:
    """Fit the two-inertia model to measured torque -> velocity responses.

    Args:
        f_hz: frequencies (K,) [Hz].
        h_motor: measured v_m / tau_m (K,) complex [rad/s per N m] (link-side referred).
        h_link: measured v_l / tau_m (K,), used in the refinement when given.
        coherence: coherence of h_motor (K,); frequencies below ``min_coherence`` are dropped,
            except around the anti-resonance where the motor response is small by nature.
        band: frequency band to fit [Hz].
        min_coherence: coherence threshold.

    Raises:
        EstimationError: no anti-resonance / resonance pair in the band, or too few points.
    """
    f = np.asarray(f_hz, dtype=float)
    hm = np.asarray(h_motor, dtype=complex)
    sel = (f >= band[0]) & (f <= band[1]) & np.isfinite(hm)
    if np.count_nonzero(sel) < 12:
        raise EstimationError(f"only {np.count_nonzero(sel)} frequencies in the band {band} Hz: expected >= 12")
    fb, mag = f[sel], np.abs(hm[sel])
    # The inertia-normalised response |H| w removes the 1/w trend, so the resonance is a maximum
    # and the anti-resonance a minimum of it.
    shaped = np.log(mag * fb)
    k_r = int(np.argmax(shaped))
    if k_r == 0:
        raise EstimationError("no resonance peak inside the band")
    k_a = int(np.argmin(shaped[: k_r + 1]))
    if k_a == 0 or k_a >= k_r:
        raise EstimationError("no anti-resonance below the resonance inside the band")
    f_a = _parabolic_peak(fb, shaped, k_a)
    f_r = _parabolic_peak(fb, shaped, k_r)
    w_a, w_r = TWO_PI * f_a, TWO_PI * f_r
    low = fb < 0.5 * f_a
    if not np.any(low):
        raise EstimationError(f"no frequency below {0.5 * f_a:.3g} Hz to read the total inertia from")
    total = float(np.median(1.0 / (TWO_PI * fb[low] * mag[low])))
    j_m = total * w_a**2 / w_r**2
    j_l = total - j_m
    initial = TwoInertiaParameters(
        motor_inertia=j_m,
        load_inertia=j_l,
        stiffness=j_l * w_a**2,
        motor_damping=0.05 * total * TWO_PI * band[0],
        load_damping=0.05 * total * TWO_PI * band[0],
        damping=2.0 * 0.02 * np.sqrt(j_l * w_a**2 * j_l),
    )

    use = sel.copy()
    if coherence is not None:
        coh = np.asarray(coherence, dtype=float)
        near_a = np.abs(f - f_a) < 0.15 * f_a
        use &= (coh >= min_coherence) | near_a
    fu = f[use]
    targets = [np.log(hm[use])]
    hl = None if h_link is None else np.asarray(h_link, dtype=complex)[use]
    if hl is not None:
        targets.append(np.log(hl))

    def unpack(x: FloatArray) -> TwoInertiaParameters:
        e = np.exp(x)
        return TwoInertiaParameters(*e)

    def residual(x: FloatArray) -> FloatArray:
        model_m, model_l = frequency_response(unpack(x), fu)
        parts = [np.log(model_m) - targets[0]]
        if hl is not None:
            parts.append(np.log(model_l) - targets[1])
        r = np.concatenate(parts)
        # wrap the phase difference into (-pi, pi]
        return np.concatenate([r.real, np.angle(np.exp(1j * r.imag))])

    x0 = np.log(
        [
            initial.motor_inertia,
            initial.load_inertia,
            initial.stiffness,
            max(initial.motor_damping, 1e-6),
            max(initial.load_damping, 1e-6),
            max(initial.damping, 1e-6),
        ]
    )
    result = scipy.optimize.least_squares(residual, x0, method="trf", x_scale=1.0, max_nfev=400)
    fitted = unpack(result.x)
    rms = float(np.sqrt(np.mean(result.fun**2)))
    return TwoInertiaFit(
        parameters=fitted,
        anti_resonance_hz=f_a,
        resonance_hz=f_r,
        rms_log_error=rms,
        n_frequencies=int(fu.size),
    )
