"""Dual-encoder signals: rigid-body velocity (Xin et al. 2020, eq. 4-6) and joint deformation (Liu et al. 2023).

Angles are link-side referred: the motor encoder angle divided by the gear ratio N.

Rigid-body velocity. Adding the two rows of the two-inertia model (`motor_ident.core.elastic.two_inertia`)
cancels the spring: ``tau_m = (J_m s + B_m) v_m + (J_l s + B_l) v_l``, so the velocity of the
rigid body of inertia J = J_m + J_l and damping B = B_m + B_l driven by tau_m is (eq. 5-6)::

    v_r = tau_m / (J s + B) = alpha(s) v_m + beta(s) v_l
    alpha(s) = (J_m s + B_m) / (J s + B),   beta(s) = (J_l s + B_l) / (J s + B),   alpha + beta = 1

With dampings the weights are first-order filters; splitting off their high-frequency gains::

    v_r = (J_m v_m + J_l v_l) / J + c / (J s + B) (v_m - v_l),   c = (B_m J_l - B_l J_m) / J

i.e. the inertia-weighted mean plus the deformation rate through a low-pass of time constant
J / B. Without damping (or with B_m / J_m = B_l / J_l) the weights are the constants
``J_m / J`` and ``J_l / J``. `RigidVelocitySolver` runs this filter sample by sample (exact
discretisation of the low-pass, input held over the sample).

Deformation (Liu et al. 2023, section 5): ``delta = theta_m / N - theta_l`` [rad] and its rate.
"""

from __future__ import annotations

import numpy as np
import scipy.signal
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.elastic.two_inertia import TwoInertiaParameters
from motor_ident.core.estimation.signals import savgol_derivatives
from motor_ident.errors import ConfigError, DataError

FloatArray = NDArray[np.float64]


def deformation(motor_position: ArrayLike, link_position: ArrayLike, gear_ratio: ArrayLike = 1.0) -> FloatArray:
    """delta = theta_motor / N - theta_link [rad].

    Args:
        motor_position: motor encoder angles on the MOTOR side, shape (N,) or (N, n) [rad].
        link_position: link encoder angles, same shape [rad].
        gear_ratio: N, scalar or (n,) [-]. Pass 1 for motor angles already referred to the link.
    """
    m = np.asarray(motor_position, dtype=float)
    q = np.asarray(link_position, dtype=float)
    if m.shape != q.shape:
        raise DataError(f"motor positions {m.shape} and link positions {q.shape}: expected equal shapes")
    deformation: FloatArray = m / np.asarray(gear_ratio, dtype=float) - q
    return deformation


def deformation_rate(
    t: ArrayLike, delta: ArrayLike, *, window_s: float = 0.05, order: int = 3
) -> tuple[FloatArray, FloatArray]:
    """Smoothed deformation and its rate by zero-phase Savitzky-Golay (offline).

    Returns:
        delta (smoothed) and d delta / dt [rad/s], each of the shape of ``delta``.
    """
    smooth, rate, _ = savgol_derivatives(t, delta, window_s=window_s, order=order)
    return smooth, rate


def rigid_velocity_weights(params: TwoInertiaParameters) -> tuple[float, float, float]:
    """High-frequency weights and the deformation-rate filter gain of the rigid-body velocity.

    Returns:
        ``(alpha_inf, beta_inf, c)`` with alpha_inf = J_m / J, beta_inf = J_l / J and
        c = (B_m J_l - B_l J_m) / J [N m s/rad]: ``v_r = alpha_inf v_m + beta_inf v_l +
        c / (J s + B) (v_m - v_l)``.
    """
    total = params.total_inertia
    c = (params.motor_damping * params.load_inertia - params.load_damping * params.motor_inertia) / total
    return params.motor_inertia / total, params.load_inertia / total, c


def rigid_body_velocity(
    motor_velocity: ArrayLike, link_velocity: ArrayLike, params: TwoInertiaParameters, rate_hz: float
) -> FloatArray:
    """Rigid-body velocity v_r = alpha(s) v_m + beta(s) v_l of a whole record (causal filter).

    Args:
        motor_velocity: link-side referred motor velocity (N,) [rad/s].
        link_velocity: link velocity (N,) [rad/s].
        params: the joint's two-inertia parameters.
        rate_hz: sample rate [Hz].

    Returns:
        v_r, shape (N,) [rad/s]; the same samples `RigidVelocitySolver` produces.
    """
    v_m = np.asarray(motor_velocity, dtype=float)
    v_l = np.asarray(link_velocity, dtype=float)
    if v_m.shape != v_l.shape or v_m.ndim != 1:
        raise DataError(f"motor {v_m.shape} and link {v_l.shape} velocities: expected two arrays of shape (N,)")
    a_inf, b_inf, c = rigid_velocity_weights(params)
    pole, gain = _lowpass(params, rate_hz)
    # y[k] = pole y[k-1] + gain c x[k-1] (input held over the sample): zero-order-hold discretisation
    filtered = scipy.signal.lfilter([0.0, gain * c], [1.0, -pole], v_m - v_l)
    rate: FloatArray = a_inf * v_m + b_inf * v_l + filtered
    return rate


def _lowpass(params: TwoInertiaParameters, rate_hz: float) -> tuple[float, float]:
    """ZOH discretisation of 1 / (J s + B): pole and input gain."""
    if not rate_hz > 0.0:
        raise ConfigError(f"rate_hz = {rate_hz!r}: expected > 0")
    dt = 1.0 / rate_hz
    total, damping = params.total_inertia, params.total_damping
    if damping > 0.0:
        pole = float(np.exp(-damping * dt / total))
        return pole, (1.0 - pole) / damping
    return 1.0, dt / total


class RigidVelocitySolver:
    """Rigid-body velocity solver (RBVS) run sample by sample for one joint.

    Args:
        params: the joint's two-inertia parameters.
        rate_hz: sample rate [Hz].
    """

    def __init__(self, params: TwoInertiaParameters, rate_hz: float) -> None:
        self.alpha, self.beta, self.c = rigid_velocity_weights(params)
        self.pole, self.gain = _lowpass(params, rate_hz)
        self._state = 0.0
        self._last_input = 0.0

    def reset(self) -> None:
        """Forget the filter state."""
        self._state = 0.0
        self._last_input = 0.0

    def update(self, motor_velocity: float, link_velocity: float) -> float:
        """v_r [rad/s] for this sample's link-side referred motor velocity and link velocity."""
        self._state = self.pole * self._state + self.gain * self.c * self._last_input
        self._last_input = motor_velocity - link_velocity
        return self.alpha * motor_velocity + self.beta * link_velocity + self._state
