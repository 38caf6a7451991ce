"""Core objects built from node settings: the same construction for the node and the ROS-free paths."""

from __future__ import annotations

from motor_ident.core.estimation.identification import structural_base_parameters
from motor_ident.core.estimation.online import OnlineIdentifier
from motor_ident.io.robot_config import RobotConfig, load_robot_config
from motor_ident.scenario.nodes import IdentifierSettings


def build_identifier(settings: IdentifierSettings, config: RobotConfig | None = None) -> OnlineIdentifier:
    """The identifier node's estimator and gate: the robot ``settings.robot`` names (or ``config``),
    its nominal model scaled by ``nominal_inertia_scale`` / ``nominal_friction_scale``.

    Raises:
        ConfigError: the robot config cannot be loaded.
    """
    config = config if config is not None else load_robot_config(settings.robot)
    regressor = config.build_regressor()
    robot = regressor.robot
    nominal_robot = robot.with_inertial_parameters(robot.inertial_parameters() * settings.nominal_inertia_scale)
    friction = [settings.nominal_friction_scale * f for f in config.nominal_friction()]
    theta_nominal = regressor.parameters(robot=nominal_robot, friction=friction)
    return OnlineIdentifier(regressor, structural_base_parameters(regressor), theta_nominal, settings.core)
