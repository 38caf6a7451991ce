"""Position, velocity and acceleration limits an excitation trajectory must respect."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.rigid_body.model import RobotModel
from motor_ident.errors import ConfigError

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class ExcitationLimits:
    """Bounds the excitation must respect, per joint (shape (n,) each).

    Attributes:
        position_lower: lowest position [rad]; -inf where unlimited.
        position_upper: highest position [rad]; +inf where unlimited.
        velocity: largest |qd| [rad/s], > 0.
        acceleration: largest |qdd| [rad/s^2], > 0.
        torque: largest |tau| [N m], > 0, or None for no torque constraint.
    """

    position_lower: FloatArray
    position_upper: FloatArray
    velocity: FloatArray
    acceleration: FloatArray
    torque: FloatArray | None = None

    def __post_init__(self) -> None:
        lower = np.atleast_1d(np.asarray(self.position_lower, dtype=float))
        n = lower.shape[0]
        arrays = {"position_lower": lower}
        for key in ("position_upper", "velocity", "acceleration", "torque"):
            value = getattr(self, key)
            if value is None:
                continue
            arr = np.broadcast_to(np.asarray(value, dtype=float), (n,)).copy()
            arrays[key] = arr
        upper = arrays["position_upper"]
        if np.any(np.isnan(lower)) or np.any(np.isnan(upper)) or np.any(upper <= lower):
            raise ConfigError(
                f"position limits lower {lower.tolist()}, upper {upper.tolist()}: expected lower < upper per joint"
            )
        for key in ("velocity", "acceleration", "torque"):
            if key in arrays and not np.all(np.isfinite(arrays[key]) & (arrays[key] > 0.0)):
                raise ConfigError(f"{key} limits {arrays[key].tolist()}: expected finite numbers > 0 per joint")
        for key, arr in arrays.items():
            object.__setattr__(self, key, arr)

    @property
    def n(self) -> int:
        """Number of joints."""
        return int(self.position_lower.shape[0])

    @property
    def centre(self) -> FloatArray:
        """Mid-range positions (0 where a joint is unlimited), shape (n,) [rad]."""
        finite = np.isfinite(self.position_lower) & np.isfinite(self.position_upper)
        return np.where(finite, 0.5 * (self.position_lower + self.position_upper), 0.0)


def limits_from_robot(
    robot: RobotModel,
    *,
    acceleration: float | ArrayLike,
    position_margin: float = 0.0,
    velocity_fraction: float = 1.0,
    torque_fraction: float | None = None,
) -> ExcitationLimits:
    """Excitation limits from the URDF's joint limits plus a configured acceleration limit.

    Args:
        robot: the model (limits read at ``robot.q_index`` / ``robot.v_index``).
        acceleration: largest |qdd| per joint or for all [rad/s^2].
        position_margin: kept away from each position limit [rad].
        velocity_fraction: fraction of the URDF velocity limit to use (0, 1].
        torque_fraction: fraction of the URDF effort limit to use, or None for no torque bound.

    Raises:
        ConfigError: a URDF limit is missing (zero) or a setting is out of range.
    """
    if not 0.0 < velocity_fraction <= 1.0:
        raise ConfigError(f"velocity_fraction = {velocity_fraction!r}: expected 0 < fraction <= 1")
    if not position_margin >= 0.0:
        raise ConfigError(f"position_margin = {position_margin!r}: expected >= 0 rad")
    lower = np.array(robot.model.lowerPositionLimit[robot.q_index], dtype=float)
    upper = np.array(robot.model.upperPositionLimit[robot.q_index], dtype=float)
    unlimited = robot.continuous | ~np.isfinite(lower) | ~np.isfinite(upper) | (upper <= lower)
    lower = np.where(unlimited, -np.inf, lower + position_margin)
    upper = np.where(unlimited, np.inf, upper - position_margin)
    if np.any(upper <= lower):
        raise ConfigError(f"position_margin = {position_margin!r} rad leaves no range on some joint")
    velocity = np.array(robot.model.velocityLimit[robot.v_index], dtype=float)
    for name, v in zip(robot.joint_names, velocity):
        if not (np.isfinite(v) and v > 0.0):
            raise ConfigError(f"URDF velocity limit of joint {name!r} is {v!r}: expected a finite value > 0")
    torque = None
    if torque_fraction is not None:
        if not 0.0 < torque_fraction <= 1.0:
            raise ConfigError(f"torque_fraction = {torque_fraction!r}: expected 0 < fraction <= 1")
        effort = np.array(robot.model.effortLimit[robot.v_index], dtype=float)
        for name, e in zip(robot.joint_names, effort):
            if not (np.isfinite(e) and e > 0.0):
                raise ConfigError(f"URDF effort limit of joint {name!r} is {e!r}: expected a finite value > 0")
        torque = torque_fraction * effort
    return ExcitationLimits(
        position_lower=lower,
        position_upper=upper,
        velocity=velocity_fraction * velocity,
        acceleration=np.broadcast_to(np.asarray(acceleration, dtype=float), (robot.n,)),
        torque=torque,
    )
