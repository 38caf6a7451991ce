"""Motor chains at their gearbox output: drive data and one integration step (Guedelha et al. 2021).

Per motor chain ``k`` (Guedelha et al. eq. 13-18, friction with the sign of the velocity as in
`motor_ident.core.actuators.friction`), with ``q_motor``, ``qd_motor`` the gearbox-output positions and
velocities and ``T`` the coupling (``q_joint = T q_motor``):

    D_k qdd_k = tau_pwm_k - tau_friction_k(qd_k) - tau_chain_k,     tau_chain = T' tau_joint
    tau_pwm_k = motor_torque(PWM_k, qd_k) = K_pwm* PWM_k + tau_0 - back_emf qd_k

with ``D = rho^2 I`` (eq. 10). Harmonic-drive static friction (sec. 2.4.1, Fig. 11): a chain at rest
(|qd| below ``stick_velocity``) sticks while the torque needed to hold it lies between the breakaway
levels ``-tau_friction(0-)`` and ``tau_friction(0+)`` (sigma_s- and sigma_s+ for the Stribeck model);
the held chains are solved as constraints, the others slide. Locked motors (brakes, used for the
motor-by-motor procedure of sec. 3.4.2) are constraints with no breakaway.

`ChainSolver` holds this step (friction, linear damping taken implicitly so that the large K_v of
Table 1, up to 76 N m s/rad, stays stable at a 1 ms step, stiction) so that the actuator bench
(`motor_ident.sim.actuator.simulate`, constant link inertia) and `motor_ident.sim.plant.SimulatedRobot`
(configuration-dependent rigid-body inertia) integrate their motor chains the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np
import pinocchio as pin
from numpy.typing import NDArray

from motor_ident.core.actuators.friction import FrictionShape, friction_regressor, friction_torque
from motor_ident.core.actuators.motor import motor_torque
from motor_ident.core.actuators.transmission import Transmission
from motor_ident.core.control.pwm import ChainModel
from motor_ident.core.rigid_body.model import RobotModel
from motor_ident.errors import ConfigError

if TYPE_CHECKING:
    from motor_ident.io.robot_config import RobotConfig

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class MotorChain(ChainModel):
    """True drive data of one motor chain, at its gearbox output: a named `ChainModel`.

    Attributes:
        friction: friction model (harmonic drive + bearings).
        friction_values: its parameters, shape (p,).
        motor: K_pwm*, tau_0, back-EMF, duty limit.
        reflected_inertia: D = rho^2 I [kg m^2].
        name: motor name.
    """

    name: str = ""

    def __post_init__(self) -> None:
        try:
            super().__post_init__()
        except ConfigError as exc:
            raise ConfigError(f"motor {self.name!r}: {exc}") from None

    @property
    def breakaway(self) -> tuple[float, float]:
        """Static friction levels (tau_f(0+), -tau_f(0-)) [N m]: sigma_s+ and sigma_s- for Stribeck."""
        tau = friction_torque(np.array([1e-12, -1e-12]), self.friction_values, self.friction)  # v -> 0+, 0-
        return float(tau[0]), float(-tau[1])

    @property
    def viscous(self) -> float:
        """Linear friction coefficient (``fv`` when the model has one) [N m s/rad]."""
        names = self.friction.names
        return float(self.friction_values[names.index("fv")]) if "fv" in names else 0.0


def motor_chains(config: RobotConfig) -> tuple[Transmission, tuple[MotorChain, ...]]:
    """Transmission and true motor chains (motor order) of a `motor_ident.io.robot_config.RobotConfig`.

    Raises:
        ConfigError: a motor has no ``motor:`` block or no ``friction_values`` (the message names it).
    """
    from motor_ident.io.robot_config import RobotConfig

    if not isinstance(config, RobotConfig):
        raise ConfigError(f"motor_chains: expected a RobotConfig, got {type(config).__name__}")
    transmission = config.build_transmission()
    chains = []
    for name, drive, reflected in zip(transmission.motors, config.motor_drives(), transmission.reflected_inertia):
        if drive.motor is None or drive.friction_values is None:
            raise ConfigError(
                f"robot {config.name!r}, motor {name!r}: simulating the motors needs its 'motor:' block "
                "and its 'friction_values'"
            )
        chains.append(
            MotorChain(
                name=name,
                friction=drive.friction,
                friction_values=np.asarray(drive.friction_values),
                motor=drive.motor,
                reflected_inertia=float(reflected),
            )
        )
    return transmission, tuple(chains)


def joint_inertia(robot: RobotModel, data: pin.Data, q: FloatArray) -> FloatArray:
    """Joint-space inertia matrix M(q) by pinocchio's CRBA, our joint order, shape (n, n) [kg m^2]."""
    M_full = pin.crba(robot.model, data, robot.pin_q(q))  # only its upper triangle is meaningful
    M_full = np.triu(M_full) + np.triu(M_full, 1).T
    return M_full[np.ix_(robot.v_index, robot.v_index)]


def _friction_groups(chains: Sequence[MotorChain]) -> list[tuple[FrictionShape, NDArray[np.int64], FloatArray]]:
    groups: dict[FrictionShape, list[int]] = {}
    for k, chain in enumerate(chains):
        groups.setdefault(chain.friction, []).append(k)
    return [
        (shape, np.array(idx, dtype=np.int64), np.stack([chains[k].friction_values for k in idx]))
        for shape, idx in groups.items()
    ]


class ChainSolver:
    """Accelerations of motor chains over one integration step: friction, implicit damping, stiction.

    One step solves ``A a = b - tau_friction(v)`` for the gearbox-output accelerations ``a`` (m,),
    where the caller's ``A`` (m, m) holds the inertia seen by the chains plus ``h`` times their
    linear damping (``diag(linear_damping)``, and any other damping taken implicitly) and ``b`` (m,)
    the explicit torques (motor torque at the start-of-step velocity, load torques through T').
    Chains at rest, or that would cross zero velocity during the step, are tried as held
    (Karnopp); a held chain slides when its holding torque exceeds its breakaway level.

    Args:
        chains: true drive data, motor order.
        stick_velocity: below this a chain may stick [rad/s].
    """

    def __init__(self, chains: Sequence[MotorChain], stick_velocity: float) -> None:
        self.chains = tuple(chains)
        self.stick_velocity = float(stick_velocity)
        self.duty_limit = np.array([c.motor.duty_limit for c in self.chains])
        self.breakaway = np.array([c.breakaway for c in self.chains])  # (m, 2)
        self.viscous = np.array([c.viscous for c in self.chains])
        self.back_emf = np.array([c.motor.back_emf for c in self.chains])
        self.linear_damping = self.viscous + self.back_emf
        """Viscous friction plus back-EMF per chain, shape (m,) [N m s/rad]: the part integrated implicitly."""
        self.reflected_inertia = np.array([c.reflected_inertia for c in self.chains])
        self._groups = _friction_groups(self.chains)

    def clip_duty(self, duty: FloatArray) -> FloatArray:
        """Duty cycles (m,) within each motor's ``duty_limit``; a non-finite duty becomes 0."""
        duty = np.asarray(duty, dtype=float)
        return np.clip(np.where(np.isfinite(duty), duty, 0.0), -self.duty_limit, self.duty_limit)

    def torque_at_rest(self, duty: FloatArray) -> FloatArray:
        """Motor torque ``K_pwm* duty + tau_0`` per chain (back-EMF left out), shape (m,) [N m]."""
        return np.array([motor_torque(duty[k], 0.0, c.motor) for k, c in enumerate(self.chains)])

    def friction(self, v: FloatArray) -> FloatArray:
        """Friction torque of every chain at gearbox-output velocities ``v`` (m,), shape (m,) [N m]."""
        out = np.zeros(len(self.chains))
        for shape, idx, theta in self._groups:
            out[idx] = np.sum(friction_regressor(v[idx], shape) * theta, axis=1)
        return out

    def accelerations(
        self,
        A: FloatArray,
        b: FloatArray,
        v: FloatArray,
        h: float,
        locked: NDArray[np.bool_],
        *,
        A_inv: FloatArray | None = None,
    ) -> tuple[FloatArray, NDArray[np.bool_], FloatArray]:
        """Accelerations (m,) [rad/s^2], which chains are held, and the friction acting (m,) [N m].

        ``locked`` chains (brakes) are held with no breakaway; ``A_inv`` may be given when ``A`` is constant.
        The returned friction is the explicit one at ``v`` for sliding chains, the holding torque for held ones.
        """
        friction = self.friction(v)
        a = cast(FloatArray, A_inv @ (b - friction) if A_inv is not None else np.linalg.solve(A, b - friction))
        held = locked | (np.abs(v) < self.stick_velocity) | (v * (v + h * a) < 0.0)
        if held.any():
            return _solve_with_stiction(A, b, friction, v, h, held, locked, self.breakaway)
        return a, held, friction


def _solve_with_stiction(
    A: FloatArray,
    b: FloatArray,
    friction: FloatArray,
    v: FloatArray,
    h: float,
    candidates: NDArray[np.bool_],
    locked: NDArray[np.bool_],
    breakaway: FloatArray,
) -> tuple[FloatArray, NDArray[np.bool_], FloatArray]:
    """Accelerations (m,) with chains in ``candidates`` held where their holding torque allows.

    Held chains get ``a = -v / h`` (velocity to zero this step) and the friction that holds them;
    a candidate whose holding torque exceeds its breakaway level slides with that level as friction.
    """
    friction = friction.copy()
    held = candidates.copy()
    for _ in range(held.size + 1):
        a = np.zeros_like(v)
        a[held] = -v[held] / h
        free = ~held
        if free.any():
            rhs = b[free] - friction[free] - A[np.ix_(free, held)] @ a[held]
            a[free] = np.linalg.solve(A[np.ix_(free, free)], rhs)
        holding = b[held] - A[held] @ a
        release_pos = ~locked[held] & (holding > breakaway[held, 0])
        release_neg = ~locked[held] & (holding < -breakaway[held, 1])
        idx = np.flatnonzero(held)
        if not (release_pos.any() or release_neg.any()):
            friction[idx] = holding
            return a, held, friction
        friction[idx[release_pos]] = breakaway[idx[release_pos], 0]
        friction[idx[release_neg]] = -breakaway[idx[release_neg], 1]
        held[idx[release_pos | release_neg]] = False
        if not held.any():
            break
    return cast(FloatArray, np.linalg.solve(A, b - friction)), held, friction
