"""Velocity ripple elimination controller, VREC (Xin et al. 2020, section 3), and its gain design.

Loop (Xin et al. 2020, Figures 6-7): a PI velocity controller ``tau_m = PI(s) (v_d - u)``,
``PI(s) = K_p + K_i / s``, whose feedback ``u`` is the measured velocity plus the "pure ripple"
``K (v - v_r)``; v_r is the rigid-body velocity of `motor_ident.core.elastic.dual_encoder`.

- motor side: ``u = v_m + K (v_m - v_r)``, K > 0;
- link side:  ``u = v_l + K (v_l - v_r)``, K < 0.

Closed-loop characteristic polynomials, derived again (the extracted eq. 8-17 are garbled).
With A_m, A_l, C and Det' of `motor_ident.core.elastic.two_inertia`, ``v_m = A_l tau / Det'``,
``v_l = C tau / Det'`` and ``v_r = tau / (J s + B)``, so ``v_m - v_r = beta (v_m - v_l)`` and
``v_l - v_r = alpha (v_l - v_m)`` (alpha + beta = 1). Multiplying ``1 + PI * u / tau`` by
``s Det' (J s + B)``::

    motor: s Det' (J s + B) + (K_p s + K_i) [A_l (J s + B) + K (J_l s + B_l)(A_l - C)]
    link:  s Det' (J s + B) + (K_p s + K_i) [C (J s + B) + K (J_m s + B_m)(C - A_l)]

(`closed_loop_polynomial`; a degree-5 polynomial, the extra real root being the v_r filter).

Closed-form gains (Xin et al. 2020, eq. 16-17). Without damping (B_m = B_l = D = 0), ``A_l - C = J_l s^2``
and with rho = w_r^2 / w_a^2 = J / J_m, the bracket of the motor side divided by s J_m J_l is
``rho (s^2 + w_a^2) + K (rho - 1) s^2``; taking the PI as its proportional gain K_p near the
resonance the characteristic polynomial reads ``J s (s^2 + 2 xi w_r s + w_r^2) + K_p w_r^2`` with::

    motor: 2 xi_m w_r J = K_p (rho + K (rho - 1))   =>   K = (2 xi_m w_r J / K_p - rho) / (rho - 1)   (eq. 16)
    link:  2 xi_l w_r J = -K_p K                    =>   K = -2 xi_l w_r J / K_p                      (eq. 17)

Xin et al. 2020 writes these with the PI gains normalised by the total inertia J (its Table 2 and 4
values follow ``K ~ 2 xi w_r / PI``); here the gains are physical [N m s/rad, N m/rad], so J
appears. The closed form ignores the dampings and the K_p w_r^2 term, which moves the poles; for
the motor side with Xin et al.'s gains it is off by up to 50 %. `design_gain` therefore finds the K
whose actual resonant pole pair (tracked along the root locus from K = 0, dampings and integrator
included) has damping ratio xi; for a real pair (xi > 1) the ratio is ``-(p1 + p2) / (2 sqrt(p1
p2))``, the xi of the quadratic with those roots.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import scipy.optimize
from numpy.typing import NDArray
from scipy.optimize import linear_sum_assignment

from motor_ident.core.elastic.dual_encoder import RigidVelocitySolver
from motor_ident.core.elastic.two_inertia import TwoInertiaParameters, _model_polynomials
from motor_ident.errors import ConfigError, EstimationError

FloatArray = NDArray[np.float64]
ComplexArray = NDArray[np.complex128]

SIDES = ("motor", "link")


@dataclass(frozen=True)
class VrecConfig:
    """Gains of one joint's VREC loop.

    Attributes:
        side: ``motor`` (feedback v_m, K > 0) or ``link`` (feedback v_l, K < 0).
        kp: proportional gain [N m s/rad].
        ki: integral gain [N m/rad].
        gain: ripple elimination gain K [-] (0: pure PI).
        torque_limit: |tau_m| bound [N m] (link-side referred), inf for none.
    """

    side: str
    kp: float
    ki: float
    gain: float = 0.0
    torque_limit: float = float("inf")

    def __post_init__(self) -> None:
        if self.side not in SIDES:
            raise ConfigError(f"side = {self.side!r}: expected 'motor' or 'link'")
        for key in ("kp", "ki"):
            value = getattr(self, key)
            if not (np.isfinite(value) and value >= 0.0):
                raise ConfigError(f"{key} = {value!r}: expected a finite number >= 0")
        if not np.isfinite(self.gain):
            raise ConfigError(f"gain = {self.gain!r}: expected a finite number")
        if not self.torque_limit > 0.0:
            raise ConfigError(f"torque_limit = {self.torque_limit!r}: expected > 0")


def closed_loop_polynomial(params: TwoInertiaParameters, config: VrecConfig) -> FloatArray:
    """Characteristic polynomial of the VREC loop, ascending powers of s, degree 5 (module doc)."""
    P = np.polynomial.polynomial
    a_m, a_l, c, det = _model_polynomials(params)
    jb = np.array([params.total_damping, params.total_inertia])
    pi = np.array([config.ki, config.kp])
    if config.side == "motor":
        bracket = P.polyadd(
            P.polymul(a_l, jb),
            config.gain * P.polymul([params.load_damping, params.load_inertia], P.polysub(a_l, c)),
        )
    else:
        bracket = P.polyadd(
            P.polymul(c, jb),
            config.gain * P.polymul([params.motor_damping, params.motor_inertia], P.polysub(c, a_l)),
        )
    coefficients: FloatArray = P.polyadd(P.polymul(P.polymul([0.0, 1.0], det), jb), P.polymul(pi, bracket))
    return coefficients


def closed_loop_poles(params: TwoInertiaParameters, config: VrecConfig) -> ComplexArray:
    """Roots of `closed_loop_polynomial` [rad/s]."""
    return np.asarray(np.polynomial.polynomial.polyroots(closed_loop_polynomial(params, config)), dtype=complex)


def pair_damping(p1: complex, p2: complex) -> tuple[float, float]:
    """Damping ratio and natural frequency [rad/s] of the quadratic with roots p1, p2."""
    prod = (p1 * p2).real
    wn = float(np.sqrt(abs(prod)))
    return float(-(p1 + p2).real / (2.0 * wn)) if wn > 0.0 else float("nan"), wn


def resonant_pair_locus(params: TwoInertiaParameters, config: VrecConfig, gains: FloatArray) -> FloatArray:
    """Damping ratio and natural frequency of the resonant pole pair along a gain sweep.

    The pair is the complex pair of largest imaginary part at the first gain of ``gains``; it is
    followed from gain to gain by optimal matching of the roots (so it stays defined after it
    splits into two real poles).

    Returns:
        Array (len(gains), 2): damping ratio [-] and natural frequency [rad/s].
    """
    roots = closed_loop_poles(params, replace(config, gain=float(gains[0])))
    pair = [int(np.argmax(roots.imag)), int(np.argmin(roots.imag))]
    out = np.zeros((len(gains), 2))
    prev = roots
    for k, g in enumerate(gains):
        r = closed_loop_poles(params, replace(config, gain=float(g)))
        rows, cols = linear_sum_assignment(np.abs(prev[:, None] - r[None, :]))
        r = r[cols[np.argsort(rows)]]
        prev = r
        out[k] = pair_damping(r[pair[0]], r[pair[1]])
    return out


def closed_form_gain(params: TwoInertiaParameters, side: str, kp: float, xi: float) -> float:
    """Xin et al. 2020, eq. 16 (motor side) / eq. 17 (link side) in physical units (module doc)."""
    if side not in SIDES:
        raise ConfigError(f"side = {side!r}: expected 'motor' or 'link'")
    if not kp > 0.0:
        raise ConfigError(f"kp = {kp!r}: expected > 0")
    total, w_r = params.total_inertia, params.resonance
    if side == "link":
        return -2.0 * xi * w_r * total / kp
    rho = (params.resonance / params.anti_resonance) ** 2
    return (2.0 * xi * w_r * total / kp - rho) / (rho - 1.0)


def design_gain(params: TwoInertiaParameters, side: str, kp: float, ki: float, xi: float, *, steps: int = 400) -> float:
    """K giving the resonant closed-loop pole pair the damping ratio ``xi`` (root-locus design).

    Sweeps K from 0 to twice the closed-form gain (or further until xi is passed), tracking the
    resonant pair, then refines the crossing with Brent's method on the tracked locus.

    Raises:
        EstimationError: no K in the sweep reaches xi.
    """
    if not xi > 0.0:
        raise ConfigError(f"xi = {xi!r}: expected > 0")
    config = VrecConfig(side=side, kp=kp, ki=ki)
    guess = closed_form_gain(params, side, kp, xi)
    sign = 1.0 if side == "motor" else -1.0
    span = max(abs(guess), 1.0) * 2.0
    for _ in range(4):
        gains = sign * np.linspace(0.0, span, steps + 1)
        zeta = resonant_pair_locus(params, config, gains)[:, 0]
        above = np.flatnonzero(zeta >= xi)
        if above.size:
            k = int(above[0])
            if k == 0:
                return 0.0
            lo, hi = gains[k - 1], gains[k]

            def f(g: float, lo: float = lo) -> float:
                return float(resonant_pair_locus(params, config, np.array([0.0, lo, g]))[-1, 0] - xi)

            return float(scipy.optimize.brentq(f, lo, hi, xtol=1e-6 * span))
        span *= 3.0
    raise EstimationError(f"no VREC gain up to {sign * span:.3g} gives the resonant poles the damping {xi}")


class VrecController:
    """One joint's PI + RBVS + VREC loop, run sample by sample.

    Args:
        params: the joint's two-inertia parameters (for the RBVS).
        config: gains.
        rate_hz: sample rate [Hz].
    """

    def __init__(self, params: TwoInertiaParameters, config: VrecConfig, rate_hz: float) -> None:
        self.config = config
        self.dt = 1.0 / rate_hz
        self.solver = RigidVelocitySolver(params, rate_hz)
        self.integral = 0.0
        self.rigid_velocity = 0.0
        self.ripple = 0.0

    def reset(self) -> None:
        """Zero the integrator and the RBVS."""
        self.integral = 0.0
        self.solver.reset()

    def update(self, velocity_reference: float, motor_velocity: float, link_velocity: float) -> float:
        """Motor torque [N m, link-side referred] for this sample (link-side referred velocities).

        Non-finite inputs give the last integral term only (no proportional kick) and leave the
        state unchanged.
        """
        cfg = self.config
        if not (np.isfinite(velocity_reference) and np.isfinite(motor_velocity) and np.isfinite(link_velocity)):
            return float(np.clip(cfg.ki * self.integral, -cfg.torque_limit, cfg.torque_limit))
        self.rigid_velocity = self.solver.update(motor_velocity, link_velocity)
        measured = motor_velocity if cfg.side == "motor" else link_velocity
        self.ripple = cfg.gain * (measured - self.rigid_velocity)
        error = velocity_reference - (measured + self.ripple)
        tau = cfg.kp * error + cfg.ki * (self.integral + error * self.dt)
        if abs(tau) < cfg.torque_limit:
            self.integral += error * self.dt  # anti-windup: integrate only while unsaturated
        return float(np.clip(tau, -cfg.torque_limit, cfg.torque_limit))


def closed_loop_transfer(params: TwoInertiaParameters, config: VrecConfig) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Reference -> velocity transfer functions of the VREC loop.

    ``tau_m / v_d = PI Det' (J s + B) / char``, so ``v_m / v_d = (K_p s + K_i) A_l (J s + B) / char``
    and ``v_l / v_d = (K_p s + K_i) C (J s + B) / char`` (char = `closed_loop_polynomial`).

    Returns:
        ``(num_motor, num_link, den)``, descending powers of s (scipy.signal convention).
    """
    P = np.polynomial.polynomial
    _, a_l, c, _ = _model_polynomials(params)
    jb = np.array([params.total_damping, params.total_inertia])
    pi = np.array([config.ki, config.kp])
    num_m = P.polymul(P.polymul(pi, a_l), jb)
    num_l = P.polymul(P.polymul(pi, c), jb)
    den = closed_loop_polynomial(params, config)
    return num_m[::-1].copy(), num_l[::-1].copy(), den[::-1].copy()
