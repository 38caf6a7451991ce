"""Motor model: PWM duty cycle (or current) -> joint-side motor torque (Guedelha et al. 2021, eq. 4, 15-18, 32).

Seen from the joint, behind a gear of ratio rho (Guedelha et al. 2021, eq. 15-16, 18):

    tau_motor = K_pwm* PWM + tau_0 - rho^2 k_bemf qd

where ``K_pwm* = rho k_pwm`` is the equivalent PWM-to-torque gain of motor plus gear [N m per
unit duty], ``tau_0`` the offset of Guedelha et al. 2021, eq. 32 [N m] and the back-EMF counter-torque acts as
a viscous friction ``rho^2 k_bemf`` [N m s/rad] (Guedelha et al. 2021, section 3.1.3). Friction and the rotor
inertia ``rho^2 I_m`` are handled by `motor_ident.core.actuators.friction` and the rigid-body model.

For a current-driven motor ``PWM`` is the current and ``K_pwm*`` the joint-side torque constant.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.errors import ConfigError

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class MotorParameters:
    """Joint-side motor parameters of one actuator (the YAML ``motor:`` block).

    Attributes:
        k_pwm: K_pwm*, joint torque per unit duty cycle [N m / 1] (or per ampere).
        tau_0: torque offset at zero duty [N m].
        back_emf: rho^2 k_bemf, viscous counter-torque of the back EMF [N m s/rad].
        duty_limit: saturation of the duty cycle, as a fraction (1.0 = 100 %).
    """

    k_pwm: float
    tau_0: float = 0.0
    back_emf: float = 0.0
    duty_limit: float = 1.0

    def __post_init__(self) -> None:
        if not np.isfinite(self.k_pwm) or self.k_pwm == 0.0:
            raise ConfigError(f"motor.k_pwm = {self.k_pwm!r}: expected a finite non-zero gain")
        if not np.isfinite(self.tau_0):
            raise ConfigError(f"motor.tau_0 = {self.tau_0!r}: expected a finite number")
        if not np.isfinite(self.back_emf) or self.back_emf < 0.0:
            raise ConfigError(f"motor.back_emf = {self.back_emf!r}: expected a finite number >= 0")
        if not 0.0 < self.duty_limit <= 1.0:
            raise ConfigError(f"motor.duty_limit = {self.duty_limit!r}: expected 0 < limit <= 1")


def motor_torque(pwm: ArrayLike, qd: ArrayLike, motor: MotorParameters) -> FloatArray:
    """Joint-side torque produced by the motor for duty ``pwm`` at joint velocity ``qd`` [N m]."""
    pwm = np.asarray(pwm, dtype=float)
    return motor.k_pwm * pwm + motor.tau_0 - motor.back_emf * np.asarray(qd, dtype=float)


def duty_for_torque(tau_motor: ArrayLike, qd: ArrayLike, motor: MotorParameters) -> FloatArray:
    """Duty cycle that makes the motor produce ``tau_motor`` at velocity ``qd``, saturated.

    Inverse of `motor_torque`: ``(tau_motor - tau_0 + back_emf qd) / K_pwm*``, clipped to
    +-``duty_limit``. Non-finite inputs give a duty of 0.
    """
    raw = (
        np.asarray(tau_motor, dtype=float) - motor.tau_0 + motor.back_emf * np.asarray(qd, dtype=float)
    ) / motor.k_pwm
    raw = np.where(np.isfinite(raw), raw, 0.0)
    return np.clip(raw, -motor.duty_limit, motor.duty_limit)


def motor_regressor(pwm: ArrayLike) -> FloatArray:
    """Regressor of Guedelha et al. 2021, eq. 32, columns [1, PWM] for parameters [tau_0, K_pwm*], shape (N, 2)."""
    pwm = np.atleast_1d(np.asarray(pwm, dtype=float))
    return np.stack([np.ones_like(pwm), pwm], axis=1)
