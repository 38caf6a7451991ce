"""Where the physics engine of a simulated robot is chosen: `make_plant`.

Two engines, one interface (`Plant`):

- ``pinocchio`` (`motor_ident.sim.plant.SimulatedRobot`): the estimator's own rigid-body model
  and friction model. Identification recovers its parameters exactly (up to noise): fast, and
  the reference for exact-recovery tests, but a test on it cannot catch a modelling error the
  plant and the estimator share.
- ``mujoco`` (`motor_ident.sim.mujoco_plant.MujocoRobot`): MuJoCo compiled from the same URDF,
  sharing no dynamics code with the estimator, with effects the estimator does not model
  (constraint-based dry friction, quadratic friction, command delay, encoder quantisation).
  Joint torque commands only.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.actuators.transmission import Transmission
from motor_ident.errors import ConfigError
from motor_ident.sim.mujoco_config import ENGINES
from motor_ident.sim.mujoco_plant import MujocoRobot
from motor_ident.sim.plant import Measurement, PlantConfig, simulated_robot

if TYPE_CHECKING:
    from motor_ident.io.robot_config import RobotConfig

FloatArray = NDArray[np.float64]


class Plant(Protocol):
    """What every simulated robot offers (`SimulatedRobot`, `MujocoRobot`).

    Attributes:
        joint_names: the robot config's joints, the order of every array.
        transmission: joints, motors and T of the rotor signals in `Measurement`.
        effort_limit: |torque| limit per joint (n,) [N m], inf where none.
        truth: the parameters the estimator should find, in the regressor's layout (p,).
        t: simulated time [s].
        external_torque: joint torque of the environment (n,) [N m], applied while stepping.
    """

    transmission: Transmission
    effort_limit: FloatArray
    truth: FloatArray
    t: float
    external_torque: FloatArray

    @property
    def joint_names(self) -> tuple[str, ...]:
        """The robot config's joints."""

    @property
    def dt(self) -> float:
        """Sample period [s]."""

    @property
    def q(self) -> FloatArray:
        """True joint positions (n,) [rad]."""

    def reset(self, q0: ArrayLike | None = None) -> None:
        """Back to rest at ``q0`` (current position when None) and time 0."""

    def add_payload(self, mass: float, com: ArrayLike, *, joint: int = -1) -> None:
        """Rigidly attach a point mass [kg] at ``com`` (3,) [m] in the frame of ``joint``'s body."""

    def set_effort(self, tau: ArrayLike) -> None:
        """Command joint torques (n,) [N m]."""

    def set_pwm(self, duty: ArrayLike) -> None:
        """Command motor duty cycles (m,)."""

    def step(self) -> None:
        """Advance one sample period."""

    def measure(self) -> Measurement:
        """Sensor readings of the current state."""


def make_plant(
    config: RobotConfig,
    plant_config: PlantConfig,
    *,
    engine: str | None = None,
    q0: ArrayLike | None = None,
) -> Plant:
    """The simulated robot of a robot config, on the chosen physics engine.

    Args:
        config: the robot config: URDF, joints, drives, friction (the TRUE robot).
        plant_config: rates, noise, command interface and engine settings.
        engine: ``pinocchio`` or ``mujoco``; ``plant_config.engine`` when None.
        q0: initial joint positions (n,) [rad]; mid-range of the limits when None.

    Returns:
        A `Plant`: `SimulatedRobot` for ``pinocchio``, `MujocoRobot` for ``mujoco``. Its `truth`
        is in the layout of ``config.build_regressor()``.

    Raises:
        ConfigError: an unknown engine; ``mujoco`` with ``command_interface = 'pwm'`` or with a
            friction model it has no counterpart for (``directional``); ``pwm`` without motor data.
        ModelError: the URDF cannot be read.
    """
    chosen = plant_config.engine if engine is None else engine
    if chosen not in ENGINES:
        raise ConfigError(f"engine = {chosen!r}: expected one of {', '.join(ENGINES)}")
    plant_config = replace(plant_config, engine=chosen)
    if chosen == "mujoco":
        return MujocoRobot(config, plant_config, q0=q0)
    return simulated_robot(config, plant_config, q0=q0)


def without_unmodelled_effects(plant_config: PlantConfig) -> PlantConfig:
    """The same plant settings with MuJoCo's unmodelled effects off: no command delay, no
    quadratic friction, ideal encoders. The dry friction stays MuJoCo's constraint."""
    mujoco = replace(plant_config.mujoco, mujoco_command_delay_samples=0, mujoco_quadratic_friction=0.0)
    return replace(plant_config, encoder_counts_per_rev=0, mujoco=mujoco)
