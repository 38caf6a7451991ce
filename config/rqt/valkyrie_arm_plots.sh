#!/usr/bin/env sh
# rqt views of the valkyrie_arm scenario's run (motor_ident); needs a ROS 2 installation (rqt is not
# on PyPI). Start it next to `ros2 launch motor_ident valkyrie_arm.launch.py`, `motor-ident run
# valkyrie_arm --real-time` or a replay, with the same ROS_DOMAIN_ID and ROS_AUTOMATIC_DISCOVERY_RANGE.
# Joint indices follow the robot config's joint order (sim_robot's default publishing order).
# tests/ros/test_monitoring_configs.py checks every topic path below against a live run.
#
#   sh $(ros2 pkg prefix motor_ident)/share/motor_ident/config/rqt/valkyrie_arm_plots.sh
set -eu

# measured vs predicted torque of joint 0 (the identifier's active model), and the gate
ros2 run rqt_plot rqt_plot /joint_states/effort[0] /identifier/predicted_effort/effort[0] \
    /identifier/gate_open/data &
# R^2 per joint on the identifier's window (gate threshold 0.95) and the tracking error
ros2 run rqt_plot rqt_plot /identifier/r2/data[0] /identifier/r2/data[1] /identifier/r2/data[2] \
    /identifier/r2/data[3] /feedforward/tracking_error/data[0] &
# /diagnostics: R2 per joint, condition number, physical consistency, buffer fill, gate state and why,
# active model, dropped samples and why, buffer resets (identifier, feedforward, decoupler, pwm_feedforward)
ros2 run rqt_robot_monitor rqt_robot_monitor &
wait
