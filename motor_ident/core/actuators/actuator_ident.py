"""Two-phase identification of friction and PWM gain per motor chain (Guedelha et al. 2021, sections 3.2-3.4, 4.1).

Every quantity here is at a gearbox output G ("motor side" of `motor_ident.core.actuators.transmission`).
For an uncoupled joint G is the joint; for a coupled group the joint torques are projected on the
chain of motor ``c`` as ``tau_motor_c = T[:, c]' tau_joint``.

Chain equation (Guedelha et al. 2021, eq. 13-18, derived again because the extracted eq. 18-21 and 29-32 lost
signs). Torques balance on the rotor + gearbox seen at G, with our friction convention (friction
torque has the sign of the velocity, `motor_ident.core.actuators.friction`):

    tau_motor = K_pwm PWM + tau_0 - back_emf qd - tau_friction(qd) - D qdd,   D = rho^2 I

where ``tau_motor`` is the torque the chain delivers to the joints (measured). Hence

- phase 1 (PWM = 0, joint back-driven by an external actuator, sec. 4.1.1):
  ``-(tau_motor + D qdd) = tau_friction(qd) + back_emf qd - tau_0``. The back-EMF is
  indistinguishable from viscous friction there (the paper keeps the stator closed on purpose),
  so the identified ``fv`` is the paper's K_v = fv + back_emf; ``-tau_0`` is fitted as an
  ``offset`` column unless turned off. The paper's Theta = -[K_c, K_v, sigma+, sigma-] of eq. 21
  and 29 is our ``theta`` with the sign absorbed in the target.
- phase 2 (PWM applied, eq. 32): ``tau_motor + D qdd + tau_friction_hat(qd) = tau_0 + K_pwm PWM``,
  regressed on `motor_ident.core.actuators.motor.motor_regressor` = [1, PWM]. Samples at rest are dropped:
  there the harmonic drive sticks and the friction is anywhere between -sigma- and sigma+ (the
  hysteresis of Guedelha et al. 2021, Fig. 11), not the model's value.

Both phases report cond(X'X) of their regressor (Guedelha et al. 2021, sec. 4.1.1 checks it).

Coupled joints (sec. 3.4.2): with the other motors locked, only motor ``c`` moves, so
``qd_joint = T[:, c] qd_motor_c`` and power conservation gives
``tau_motor_c = tau_joint' qd_joint / qd_motor_c``: the column can be measured from the motion
itself (`coupling_column`), which makes motor-wise identification independent of errors in the
nominal coupling ratios. Moving joints one at a time instead moves all motors together, and
attributing the joint torques to motors then needs the nominal T (`joint_wise_chain_torques`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.actuators.friction import FrictionKind, FrictionShape, fit_friction, friction_regressor
from motor_ident.core.actuators.motor import MotorParameters, motor_regressor
from motor_ident.errors import EstimationError

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class FrictionFit:
    """Phase-1 result of one chain.

    Attributes:
        shape: the fitted model (with an ``offset`` column when tau_0 was fitted too).
        theta: parameters in the order of ``shape.names`` [N m, N m s/rad, ...].
        condition_number: cond(X'X) of the friction regressor.
        rmse: residual RMS of the fit [N m].
        n_samples: samples used.
    """

    shape: FrictionShape
    theta: FloatArray
    condition_number: float
    rmse: float
    n_samples: int

    def value(self, name: str) -> float:
        """One parameter by name (``fc``, ``fv``, ``static_pos``, ``static_neg``, ``offset``)."""
        return float(self.theta[self.shape.names.index(name)])

    def friction_only(self) -> tuple[FrictionShape, FloatArray]:
        """Shape and parameters without the offset column (the offset is -tau_0, a motor term)."""
        if not self.shape.offset:
            return self.shape, self.theta
        return replace(self.shape, offset=False), self.theta[:-1]

    def torque(self, qd: ArrayLike) -> FloatArray:
        """Friction torque (offset excluded) at velocities ``qd`` (N,) [N m]."""
        shape, theta = self.friction_only()
        return friction_regressor(qd, shape) @ theta


@dataclass(frozen=True)
class MotorFit:
    """Phase-2 result of one chain.

    Attributes:
        k_pwm: K_pwm*, torque per unit duty at the gearbox output [N m].
        tau_0: torque offset [N m].
        condition_number: cond(X'X) of [1, PWM].
        rmse: residual RMS [N m].
        n_samples: samples used (moving ones).
    """

    k_pwm: float
    tau_0: float
    condition_number: float
    rmse: float
    n_samples: int

    def parameters(self, *, duty_limit: float = 1.0) -> MotorParameters:
        """`MotorParameters` for the feedforward; back-EMF is 0 since phase 1 put it into ``fv``."""
        return MotorParameters(k_pwm=self.k_pwm, tau_0=self.tau_0, back_emf=0.0, duty_limit=duty_limit)


def friction_target(tau_motor: ArrayLike, qdd_motor: ArrayLike, reflected_inertia: float) -> FloatArray:
    """Phase-1 target ``-(tau_motor + D qdd)`` [N m]: friction + back-EMF - tau_0 at PWM = 0, shape (N,)."""
    return -(np.asarray(tau_motor, dtype=float) + reflected_inertia * np.asarray(qdd_motor, dtype=float))


def _moving(qd: FloatArray, min_velocity: float, *arrays: FloatArray) -> NDArray[np.bool_]:
    keep = np.abs(qd) > min_velocity
    for a in arrays:
        keep &= np.isfinite(a)
    return keep & np.isfinite(qd)


def identify_friction(
    qd_motor: ArrayLike,
    tau_motor: ArrayLike,
    qdd_motor: ArrayLike,
    *,
    reflected_inertia: float,
    shape: FrictionShape,
    zero_slope: bool = False,
    offset: bool = True,
    min_velocity: float = 0.0,
) -> FrictionFit:
    """Phase 1: friction of one chain from PWM = 0 data under external motion (Guedelha et al. 2021, eq. 19-31).

    Args:
        qd_motor: gearbox-output velocities, shape (N,) [rad/s].
        tau_motor: torque delivered by the chain, shape (N,) [N m] (joint torque, or T_c' tau_joint).
        qdd_motor: gearbox-output accelerations, shape (N,) [rad/s^2].
        reflected_inertia: D = rho^2 I of the chain [kg m^2] (known, Guedelha et al. 2021, sec. 3.1.4).
        shape: model to fit (``coulomb_viscous`` for eq. 21, ``stribeck`` for eq. 29).
        zero_slope: impose d tau_f / dv = 0 at 0+ (Stribeck only, Guedelha et al. 2021, sec. 4.1.2).
        offset: also fit a constant (= -tau_0 at PWM = 0).
        min_velocity: drop samples with |qd| <= this [rad/s] (at rest the friction is undetermined).

    Raises:
        EstimationError: fewer samples than parameters, or no motion in one direction.
    """
    v = np.asarray(qd_motor, dtype=float)
    y = friction_target(tau_motor, qdd_motor, reflected_inertia)
    keep = _moving(v, min_velocity, y)
    v, y = v[keep], y[keep]
    fit_shape = replace(shape, offset=offset)
    if v.size <= fit_shape.n_parameters or not (np.any(v > 0) and np.any(v < 0)):
        raise EstimationError(
            f"friction fit needs motion in both directions and more than {fit_shape.n_parameters} samples; "
            f"got {v.size} samples above {min_velocity} rad/s"
        )
    theta = fit_friction(v, y, fit_shape, zero_slope=zero_slope)
    X = friction_regressor(v, fit_shape)
    residual = X @ theta - y
    return FrictionFit(
        shape=fit_shape,
        theta=theta,
        condition_number=float(np.linalg.cond(X.T @ X)),
        rmse=float(np.sqrt(np.mean(residual**2))),
        n_samples=int(v.size),
    )


def identify_motor_gain(
    pwm: ArrayLike,
    qd_motor: ArrayLike,
    tau_motor: ArrayLike,
    qdd_motor: ArrayLike,
    *,
    reflected_inertia: float,
    friction: FrictionFit,
    min_velocity: float = 0.0,
) -> MotorFit:
    """Phase 2: K_pwm* and tau_0 of one chain, the friction of phase 1 known (Guedelha et al. 2021, eq. 32).

    Args:
        pwm: duty cycles, shape (N,) [1 = 100 %].
        qd_motor, tau_motor, qdd_motor: as in `identify_friction`, shape (N,).
        reflected_inertia: D = rho^2 I [kg m^2].
        friction: phase-1 fit (its offset column is not used: tau_0 is estimated here).
        min_velocity: drop samples at rest (stuck harmonic drive) [rad/s].

    Raises:
        EstimationError: too few moving samples or a constant PWM.
    """
    u = np.asarray(pwm, dtype=float)
    v = np.asarray(qd_motor, dtype=float)
    y = np.asarray(tau_motor, dtype=float) + reflected_inertia * np.asarray(qdd_motor, dtype=float)
    keep = _moving(v, min_velocity, y, u)
    u, v, y = u[keep], v[keep], y[keep]
    if u.size < 3 or np.ptp(u) <= 0.0:
        raise EstimationError(f"PWM gain fit needs a varying PWM on moving samples; got {u.size} samples")
    y = y + friction.torque(v)
    X = motor_regressor(u)
    theta, *_ = np.linalg.lstsq(X, y, rcond=None)
    residual = X @ theta - y
    return MotorFit(
        k_pwm=float(theta[1]),
        tau_0=float(theta[0]),
        condition_number=float(np.linalg.cond(X.T @ X)),
        rmse=float(np.sqrt(np.mean(residual**2))),
        n_samples=int(u.size),
    )


def coupling_column(qd_joint: ArrayLike, qd_motor: ArrayLike) -> FloatArray:
    """Column T[:, c] measured while only motor ``c`` moves: least squares of ``qd_joint = T_c qd_motor_c``.

    Args:
        qd_joint: joint velocities of the group, shape (N, n) [rad/s].
        qd_motor: the moving motor's gearbox-output velocity, shape (N,) [rad/s].

    Returns:
        The column, shape (n,) [-].

    Raises:
        EstimationError: the motor did not move.
    """
    qd_joint = np.asarray(qd_joint, dtype=float)
    s = np.asarray(qd_motor, dtype=float)
    energy = float(s @ s)
    if not energy > 0.0:
        raise EstimationError("coupling column: the motor did not move")
    gain: FloatArray = (s @ qd_joint) / energy
    return gain


def chain_torque(tau_joint: ArrayLike, column: ArrayLike) -> FloatArray:
    """Torque delivered by one motor chain, ``T[:, c]' tau_joint`` (Guedelha et al. 2021, sec. 3.4.2), shape (N,) [N m].

    Args:
        tau_joint: joint torques of the group, shape (N, n) [N m].
        column: T[:, c], shape (n,).
    """
    out: FloatArray = np.asarray(tau_joint, dtype=float) @ np.asarray(column, dtype=float)
    return out


def joint_wise_chain_torques(tau_joint: ArrayLike, coupling: ArrayLike) -> FloatArray:
    """All chain torques ``T' tau_joint`` from joint torques while several motors move, shape (N, n) [N m].

    Needs the coupling ``coupling`` (n, n); errors in it go straight into the chain torques.
    """
    out: FloatArray = np.asarray(tau_joint, dtype=float) @ np.asarray(coupling, dtype=float)
    return out


def low_velocity_rmse(fit: FrictionFit, qd_motor: ArrayLike, target: ArrayLike, threshold: float) -> float:
    """RMS of ``target - fit`` over samples with 0 < |qd| < threshold [N m] (the Stribeck region).

    ``target`` is `friction_target` of the same samples (the fit's offset column included).

    Raises:
        EstimationError: no sample in that band.
    """
    v = np.asarray(qd_motor, dtype=float)
    y = np.asarray(target, dtype=float)
    band = (np.abs(v) < threshold) & (v != 0.0) & np.isfinite(v) & np.isfinite(y)
    if not np.any(band):
        raise EstimationError(f"no sample with 0 < |qd| < {threshold} rad/s")
    predicted = friction_regressor(v[band], fit.shape) @ fit.theta
    return float(np.sqrt(np.mean((predicted - y[band]) ** 2)))


def stribeck_shape(stribeck_velocity: float, *, smoothing_velocity: float = 0.0) -> FrictionShape:
    """The asymmetric Stribeck model of Guedelha et al. 2021 with Stribeck velocity ``stribeck_velocity`` [rad/s]."""
    return FrictionShape(
        kind=FrictionKind.STRIBECK, stribeck_velocity=stribeck_velocity, smoothing_velocity=smoothing_velocity
    )
