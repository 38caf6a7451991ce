"""Settings of the MuJoCo plant (`motor_ident.sim.mujoco_plant`), inlined into `motor_ident.sim.plant.PlantConfig`.

Kept apart from the plant so that reading the settings (scenario files, ROS parameters, the
parameter table) does not import MuJoCo.
"""

from __future__ import annotations

from dataclasses import dataclass

from motor_ident.schema import check, setting

ENGINES = ("pinocchio", "mujoco")
"""`PlantConfig.engine` values: the exact plant (pinocchio, the estimator's own model) or MuJoCo."""

MUJOCO_INTEGRATORS = ("euler", "implicit", "implicitfast", "rk4")
"""MuJoCo's integrators (``mjtIntegrator``), lower case."""


@dataclass(frozen=True)
class MujocoConfig:
    """What the MuJoCo plant adds beyond the shared plant settings.

    Attributes:
        mujoco_integrator: MuJoCo's integrator; its time step is the sample period over ``substeps``.
        mujoco_command_delay_samples: samples between a torque command and the torque it applies
            (0: applied at the next step, as the pinocchio plant does).
        mujoco_quadratic_friction: coefficient ``d`` of a friction torque ``d qd |qd|`` on every
            joint, a shape outside the estimator's friction models [N m s^2/rad^2] (0: none).
    """

    mujoco_integrator: str = setting(
        "implicitfast", "mujoco: integrator (time step = sample period / substeps)", choices=MUJOCO_INTEGRATORS
    )
    mujoco_command_delay_samples: int = setting(
        1, "mujoco: samples between a command and the torque it applies (0: none)", low=0, high=1000
    )
    mujoco_quadratic_friction: float = setting(
        0.1,
        "mujoco: friction d qd abs(qd) on every joint, outside the estimator's models (0: none)",
        unit="N m s^2/rad^2",
        low=0.0,
    )

    def __post_init__(self) -> None:
        check(self)
