"""motor_ident: identify what robot joints and actuators really do, and use it in control.

Subpackages (docs/design.md has the map and the layering):
    core      ROS-free math (numpy, scipy, pinocchio), by concern: rigid_body, actuators, elastic,
              estimation, excitation, control.
    sim       the simulated robots (plants), ROS-free.
    io        robot configs, recorded data and bags, parameter files, reports.
    scenario  node settings (the schema every loader builds from), the scenario loader, the
              ROS-free closed loop.
    ros       thin rclpy nodes (the only place that imports rclpy).
    papers    the five papers motor_ident implements: bench data, experiments, reproductions.
    commands  the ``motor-ident`` subcommands (cli.py builds the parser).
"""

__version__ = "0.1.0"
