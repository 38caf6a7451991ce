"""The standing humanoid on the plant its settings choose (``HumanoidSimConfig.plant``).

``mujoco`` is `motor_ident.sim.humanoid`, ``rigid`` is `motor_ident.sim.rigid_humanoid`; both return a
`motor_ident.sim.humanoid_common.HumanoidRun`, so everything downstream takes either.
"""

from __future__ import annotations

from motor_ident.io.robot_config import RobotConfig
from motor_ident.sim.humanoid import simulate_humanoid
from motor_ident.sim.humanoid_common import HumanoidRun, HumanoidSimConfig
from motor_ident.sim.rigid_humanoid import simulate_rigid_humanoid


def simulate_standing(config: RobotConfig, sim: HumanoidSimConfig) -> HumanoidRun:
    """The run of the plant ``sim.plant`` (module docstring).

    Raises:
        ConfigError, ModelError, EstimationError: as that plant's simulator.
    """
    if sim.plant == "rigid":
        return simulate_rigid_humanoid(config, sim)
    return simulate_humanoid(config, sim)
