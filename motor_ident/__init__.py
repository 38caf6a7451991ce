"""motor_ident: identify what robot joints and actuators really do, and use it in control.

Subpackages:
    core  ROS-free math (numpy, scipy, pinocchio): models, regressors, estimators, signals.
    sim   the simulated robot (plant), ROS-free.
    io    robot configs, recorded data, parameter files, reports.
    ros   thin rclpy nodes (the only place that imports rclpy).
"""

__version__ = "0.1.0"
