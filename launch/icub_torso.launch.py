"""Coupled-joint identification and PWM feedforward for the iCub waist (three joints, three motors).

    ros2 launch motor_ident icub_torso.launch.py                  # with the simulated robot
    ros2 launch motor_ident icub_torso.launch.py use_sim:=false   # next to your ros2_control stack

Nodes: ``identifier`` and ``feedforward`` in joint space (joint torques on
``effort_controller/commands``), ``decoupler`` (joint_states / motor_states / torque commands between
joint and motor space through the waist differential), and ``pwm_feedforward`` (those joint torques
-> motor duty cycles with friction compensation on ``pwm_controller/commands``). With
``use_sim:=false`` they run on your robot's ``joint_states`` and ``motor_states``. Node parameters
come from ``config/scenarios/icub_torso.yaml``; sim_robot, identifier, feedforward and excitation
are started by the included ``identification.launch.py``.
"""

from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.conditions import IfCondition
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription


def generate_launch_description() -> LaunchDescription:
    share = FindPackageShare("motor_ident")
    params = PathJoinSubstitution([share, "config", "scenarios", "icub_torso.yaml"])
    sim_time = {"use_sim_time": LaunchConfiguration("use_sim")}  # declared by identification.launch.py
    return LaunchDescription(
        [
            IncludeLaunchDescription(
                PythonLaunchDescriptionSource(PathJoinSubstitution([share, "launch", "identification.launch.py"])),
                launch_arguments={"params_file": params}.items(),
            ),
            DeclareLaunchArgument(
                "pwm",
                default_value="true",
                description="start pwm_feedforward: joint torques -> motor duty cycles on pwm_controller/commands",
            ),
            Node(
                package="motor_ident",
                executable="decoupler",
                name="decoupler",
                parameters=[params, sim_time],
                output="screen",
            ),
            Node(
                package="motor_ident",
                executable="pwm_feedforward",
                name="pwm_feedforward",
                parameters=[params, sim_time],
                condition=IfCondition(LaunchConfiguration("pwm")),
                output="screen",
            ),
        ]
    )
