"""PWM feedforward: desired joint torques -> motor duty cycles with friction compensation (Guedelha et al. 2021).

For each motor chain (quantities at its gearbox output, `motor_ident.core.actuators.transmission`):

    tau_motor = T' tau_joint_desired                         (Guedelha et al. 2021, eq. 12, 34)
    tau_needed = tau_motor + tau_friction(qd_motor) + D qdd_motor
    duty = duty_for_torque(tau_needed, qd_motor, motor)       = (tau_needed - tau_0 + back_emf qd) / K_pwm*

Friction opposes the motion, so the motor has to supply it: with our convention (friction torque
has the sign of the velocity, `motor_ident.core.actuators.friction`) it is *added* to the torque the chain
must deliver, which is the chain equation of `motor_ident.core.actuators.actuator_ident` solved for PWM.
`motor_ident.core.actuators.motor.duty_for_torque` does the last step and the saturation, so the formula
lives in one place.

Two details a naive implementation gets wrong:

- The friction model of Guedelha et al. 2021 jumps from -sigma- to +sigma+ at zero velocity. Evaluated on a
  noisy velocity at rest, the compensation would chatter between the two static levels, so it is
  evaluated with the sign smoothed over ``smoothing_velocity`` (the same `smooth_sign` the
  friction regressor uses).
- When the identified friction already holds the back-EMF in its viscous term (phase 1 of Guedelha et al. 2021
  identifies K_v = fv + back_emf at PWM = 0), the motor parameters must carry ``back_emf = 0``;
  `motor_ident.core.actuators.actuator_ident.MotorFit.parameters` returns them so.

Non-finite inputs never give a non-finite duty: a non-finite velocity drops the velocity terms
for that motor, a non-finite desired torque gives a duty of 0 (via `duty_for_torque`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.actuators.friction import FrictionShape, friction_torque, joints_friction_torque
from motor_ident.core.actuators.motor import MotorParameters, duty_for_torque
from motor_ident.errors import ConfigError
from motor_ident.schema import check, setting

FloatArray = NDArray[np.float64]


class _TorqueMap(Protocol):
    """What the feedforward needs of a transmission (a `TransmissionGroup` or a `Transmission`)."""

    @property
    def n(self) -> int: ...

    def motor_torque(self, tau_joint: ArrayLike) -> FloatArray: ...


@dataclass(frozen=True, eq=False)
class ChainModel:
    """Identified model of one motor chain, at its gearbox output.

    Attributes:
        friction: friction model (without offset column).
        friction_values: its parameters, shape (p,).
        motor: K_pwm*, tau_0, back-EMF and duty limit.
        reflected_inertia: D = rho^2 I [kg m^2], used when accelerations are given.
    """

    friction: FrictionShape
    friction_values: FloatArray
    motor: MotorParameters
    reflected_inertia: float = 0.0

    def __post_init__(self) -> None:
        values = np.asarray(self.friction_values, dtype=float)
        if values.shape != (self.friction.n_parameters,) or not np.all(np.isfinite(values)):
            raise ConfigError(
                f"friction_values = {values.tolist()}: expected {self.friction.n_parameters} finite numbers "
                f"for the {self.friction.kind.value} model"
            )
        if not (np.isfinite(self.reflected_inertia) and self.reflected_inertia >= 0.0):
            raise ConfigError(f"reflected_inertia = {self.reflected_inertia!r}: expected a finite number >= 0")
        object.__setattr__(self, "friction_values", values)


@dataclass(frozen=True)
class PwmFeedforwardConfig:
    """Settings of the PWM feedforward.

    Attributes:
        duty_limit: saturation of every duty cycle, fraction (1.0 = 100 %); the tighter of this
            and each motor's own limit applies.
        friction_compensation: add the identified friction torque.
        smoothing_velocity: sign smoothing of the compensation near rest [rad/s] (> 0).
    """

    duty_limit: float = setting(
        1.0, "saturation of every duty cycle (1.0 = 100 %)", low=0.0, high=1.0, open=(True, False), live=True
    )
    friction_compensation: bool = setting(True, "add the motors' friction", live=True)
    smoothing_velocity: float = setting(
        0.0035, "sign smoothing of the compensation near rest", unit="rad/s", low=0.0, open=(True, False), live=True
    )

    def __post_init__(self) -> None:
        check(self)
        if not np.isfinite(self.smoothing_velocity):
            raise ConfigError(f"smoothing_velocity = {self.smoothing_velocity!r}: expected a finite number > 0 rad/s")


def pwm_feedforward(
    tau_joint_desired: ArrayLike,
    qd_motor: ArrayLike,
    transmission: _TorqueMap,
    chains: Sequence[ChainModel],
    config: PwmFeedforwardConfig = PwmFeedforwardConfig(),
    *,
    qdd_motor: ArrayLike | None = None,
) -> FloatArray:
    """Duty cycles that make the chains deliver the desired joint torques.

    Args:
        tau_joint_desired: desired joint torques, shape (n,) or (N, n) [N m], joint order.
        qd_motor: measured gearbox-output velocities, same shape, motor order [rad/s].
        transmission: the `TransmissionGroup` or `Transmission` (T).
        chains: identified model per motor, length n, motor order.
        config: saturation and friction compensation.
        qdd_motor: gearbox-output accelerations for inertia compensation, same shape, or None.

    Returns:
        Duty cycles, shape of ``qd_motor``, within +-limit, never NaN.
    """
    # huge or infinite inputs overflow on the way (inf * 0 = NaN); every such value ends as duty 0
    with np.errstate(invalid="ignore", over="ignore"):
        return _pwm_feedforward(tau_joint_desired, qd_motor, transmission, chains, config, qdd_motor)


def _pwm_feedforward(
    tau_joint_desired: ArrayLike,
    qd_motor: ArrayLike,
    transmission: _TorqueMap,
    chains: Sequence[ChainModel],
    config: PwmFeedforwardConfig,
    qdd_motor: ArrayLike | None,
) -> FloatArray:
    n = transmission.n
    if len(chains) != n:
        raise ConfigError(f"chains: {len(chains)} models for {n} motors: expected one per motor")
    tau_desired = np.asarray(tau_joint_desired, dtype=float)
    qd = np.asarray(qd_motor, dtype=float)
    if qd.shape != tau_desired.shape:
        raise ConfigError(f"qd_motor has shape {qd.shape}: expected the shape of tau_joint_desired {tau_desired.shape}")
    tau_motor = transmission.motor_torque(tau_desired)
    valid_qd = np.isfinite(qd)
    qd_safe = np.where(valid_qd, qd, 0.0)
    qdd = np.zeros_like(qd) if qdd_motor is None else np.asarray(qdd_motor, dtype=float)
    qdd_safe = np.where(np.isfinite(qdd), qdd, 0.0)
    single = qd.ndim == 1
    tau_motor, qd_safe, qdd_safe, valid_qd = (np.atleast_2d(a) for a in (tau_motor, qd_safe, qdd_safe, valid_qd))
    duty = np.zeros_like(qd_safe)
    for k, chain in enumerate(chains):
        needed = tau_motor[:, k] + chain.reflected_inertia * qdd_safe[:, k]
        if config.friction_compensation:
            shape = replace(chain.friction, smoothing_velocity=config.smoothing_velocity)
            compensation = friction_torque(qd_safe[:, k], chain.friction_values, shape)
            needed = needed + np.where(valid_qd[:, k], compensation, 0.0)
        limit = min(config.duty_limit, chain.motor.duty_limit)
        duty[:, k] = duty_for_torque(needed, qd_safe[:, k], replace(chain.motor, duty_limit=limit))
    return duty[0] if single else duty


class PwmFeedforward:
    """`pwm_feedforward` one sample at a time, for the 1 kHz path (the ``pwm_feedforward`` node).

    The same duties (to rounding: the friction of motors sharing a model is one vectorised call)
    from the same chain equation, with what `pwm_feedforward` rebuilds per call made once per
    config: the smoothed friction shapes (grouped, one `joints_friction_torque` call per shape),
    the duty limits and the motor constants as arrays; every motor is computed at once. About
    a tenth of the batch function's cost for one sample of three motors.

    Args:
        transmission: the `TransmissionGroup` or `Transmission` (T).
        chains: identified model per motor, motor order.
        config: saturation and friction compensation (``config`` may be replaced while running).

    Raises:
        ConfigError: not one chain per motor.
    """

    def __init__(
        self,
        transmission: _TorqueMap,
        chains: Sequence[ChainModel],
        config: PwmFeedforwardConfig = PwmFeedforwardConfig(),
    ) -> None:
        if len(chains) != transmission.n:
            raise ConfigError(f"chains: {len(chains)} models for {transmission.n} motors: expected one per motor")
        self.transmission, self.chains = transmission, tuple(chains)
        self.reflected_inertia = np.array([c.reflected_inertia for c in chains])
        self.tau_0 = np.array([c.motor.tau_0 for c in chains])
        self.back_emf = np.array([c.motor.back_emf for c in chains])
        self.k_pwm = np.array([c.motor.k_pwm for c in chains])
        self.config = config

    @property
    def config(self) -> PwmFeedforwardConfig:
        """Saturation and friction compensation in use."""
        return self._config

    @config.setter
    def config(self, config: PwmFeedforwardConfig) -> None:
        self._config = config
        self.duty_limits = np.array([min(config.duty_limit, c.motor.duty_limit) for c in self.chains])
        """Per motor: the smaller of the config's and the motor's duty limit (m,)."""
        groups: dict[FrictionShape, list[int]] = {}
        for k, chain in enumerate(self.chains):
            if chain.friction.n_parameters:
                shape = replace(chain.friction, smoothing_velocity=config.smoothing_velocity)
                groups.setdefault(shape, []).append(k)
        self._friction = [
            (shape, np.array(motors), np.array([self.chains[k].friction_values for k in motors]), np.zeros(len(motors)))
            for shape, motors in groups.items()
        ]

    def duty(self, tau_joint_desired: ArrayLike, qd_motor: ArrayLike, qdd_motor: ArrayLike | None = None) -> FloatArray:
        """Duty cycles (m,) for one sample; arguments (m,) as `pwm_feedforward`'s; never NaN."""
        with np.errstate(invalid="ignore", over="ignore"):  # huge inputs: duty 0, as in pwm_feedforward
            needed = np.array(self.transmission.motor_torque(tau_joint_desired), dtype=float)
            qd = np.asarray(qd_motor, dtype=float)
            valid = np.isfinite(qd)
            qd_safe = np.where(valid, qd, 0.0)
            if qdd_motor is not None:
                qdd = np.asarray(qdd_motor, dtype=float)
                needed += self.reflected_inertia * np.where(np.isfinite(qdd), qdd, 0.0)
            if self._config.friction_compensation:
                for shape, motors, coefficients, friction in self._friction:
                    if motors.size == needed.size:  # every motor, in order (one model for all): no gather
                        needed += np.where(valid, joints_friction_torque(qd_safe, shape, coefficients, friction), 0.0)
                    else:
                        joints_friction_torque(qd_safe[motors], shape, coefficients, friction)
                        needed[motors] += np.where(valid[motors], friction, 0.0)
            # duty_for_torque's formula and saturation, every motor at once
            duty: FloatArray = (needed - self.tau_0 + self.back_emf * qd_safe) / self.k_pwm
            duty[~np.isfinite(duty)] = 0.0
            np.maximum(duty, -self.duty_limits, out=duty)
            np.minimum(duty, self.duty_limits, out=duty)
            return duty
