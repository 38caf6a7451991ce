"""Coupled-joint identification and PWM feedforward for the iCub waist (three joints, three motors).

    ros2 launch motor_ident icub_torso.launch.py                  # with the simulated robot
    ros2 launch motor_ident icub_torso.launch.py use_sim:=false   # next to your ros2_control stack

Nodes: ``identifier`` and ``feedforward`` in joint space (joint torques on
``effort_controller/commands``), ``decoupler`` (joint_states / motor_states / torque commands between
joint and motor space through the waist differential), and ``pwm_feedforward`` (those joint torques
-> motor duty cycles with friction compensation on ``pwm_controller/commands``). With
``use_sim:=false`` they run on your robot's ``joint_states`` and ``motor_states``. Node parameters
come from ``config/scenarios/icub_torso.yaml``. DDS discovery follows your environment
(ROS_AUTOMATIC_DISCOVERY_RANGE, ROS_DOMAIN_ID).
"""

from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription


def generate_launch_description() -> LaunchDescription:
    params = LaunchConfiguration("params_file")
    use_sim = LaunchConfiguration("use_sim")
    sim_time = {"use_sim_time": use_sim}
    return LaunchDescription(
        [
            DeclareLaunchArgument(
                "params_file",
                default_value=PathJoinSubstitution(
                    [FindPackageShare("motor_ident"), "config", "scenarios", "icub_torso.yaml"]
                ),
                description="parameter file of the nodes",
            ),
            DeclareLaunchArgument(
                "use_sim",
                default_value="true",
                description="start the simulated robot (sim_robot) and run the other nodes on its /clock",
            ),
            DeclareLaunchArgument(
                "excite",
                default_value="true",
                description="start the excitation node feeding the feedforward node's reference",
            ),
            DeclareLaunchArgument(
                "pwm",
                default_value="true",
                description="start pwm_feedforward: joint torques -> motor duty cycles on pwm_controller/commands",
            ),
            Node(
                package="motor_ident",
                executable="sim_robot",
                name="sim_robot",
                parameters=[params],
                condition=IfCondition(use_sim),
                output="screen",
            ),
            Node(
                package="motor_ident",
                executable="identifier",
                name="identifier",
                parameters=[params, sim_time],
                output="screen",
            ),
            Node(
                package="motor_ident",
                executable="feedforward",
                name="feedforward",
                parameters=[params, sim_time],
                output="screen",
            ),
            Node(
                package="motor_ident",
                executable="excitation",
                name="excitation",
                parameters=[params, sim_time],
                condition=IfCondition(LaunchConfiguration("excite")),
                output="screen",
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
