"""Coupled-joint identification and PWM feedforward for the iCub waist (three joints, three motors).

    ros2 launch motor_ident icub_torso.launch.py                              # with the simulated robot
    ros2 launch motor_ident icub_torso.launch.py use_sim:=false               # next to your ros2_control stack
    ros2 launch motor_ident icub_torso.launch.py use_sim:=false pwm:=false    # your own duty-cycle controller
    ros2 launch motor_ident icub_torso.launch.py params_file:=my_waist.yaml   # your copy of the parameters
    ros2 launch motor_ident icub_torso.launch.py autostart:=false             # your lifecycle manager activates

Nodes: ``identifier`` and ``feedforward`` in joint space (joint torques on
``effort_controller/commands``), ``decoupler`` (joint_states / motor_states / torque commands between
joint and motor space through the waist differential: those joint torques -> motor torques on
``decoupler/motor_commands``), and ``pwm_feedforward`` (motor torques -> duty cycles with the motors'
friction, back-EMF and rotor inertia compensated, on ``pwm_controller/commands``). The simulated
waist takes duty cycles only, so ``pwm:=false`` goes with ``use_sim:=false``. With
``use_sim:=false`` they run on your robot's ``joint_states`` and ``motor_states``. Every node reads
``params_file`` (default ``config/scenarios/icub_torso.yaml``); sim_robot, identifier, feedforward
and excitation are started by the included ``identification.launch.py``. pwm_feedforward,
identifier, feedforward and excitation are managed (lifecycle) nodes, configured and activated
unless ``autostart:=false``.
"""

from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.conditions import IfCondition
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription
from motor_ident.ros.runtime.launch_actions import managed_node


def generate_launch_description() -> LaunchDescription:
    share = FindPackageShare("motor_ident")
    params = LaunchConfiguration("params_file")
    sim_time = {"use_sim_time": LaunchConfiguration("use_sim")}
    return LaunchDescription(
        [
            DeclareLaunchArgument(
                "params_file",
                default_value=PathJoinSubstitution([share, "config", "scenarios", "icub_torso.yaml"]),
                description="parameter file of every node (default: the icub_torso scenario's)",
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
                "monitor",
                default_value="false",
                description="start the monitor (Foxglove WebSocket server on 127.0.0.1:8765)",
            ),
            DeclareLaunchArgument(
                "pwm",
                default_value="true",
                description="start pwm_feedforward: motor torques -> duty cycles on pwm_controller/commands "
                "(the simulated waist needs it)",
            ),
            DeclareLaunchArgument(
                "autostart",
                default_value="true",
                description="configure and activate the managed nodes (false: they wait unconfigured for "
                "your lifecycle manager)",
            ),
            IncludeLaunchDescription(
                PythonLaunchDescriptionSource(PathJoinSubstitution([share, "launch", "identification.launch.py"])),
                launch_arguments={
                    "params_file": LaunchConfiguration("params_file"),
                    "use_sim": LaunchConfiguration("use_sim"),
                    "excite": LaunchConfiguration("excite"),
                    "monitor": LaunchConfiguration("monitor"),
                    "autostart": LaunchConfiguration("autostart"),
                }.items(),
            ),
            Node(
                package="motor_ident",
                executable="decoupler",
                name="decoupler",
                parameters=[params, sim_time],
                output="screen",
            ),
            *managed_node(
                "pwm_feedforward", parameters=[params, sim_time], condition=IfCondition(LaunchConfiguration("pwm"))
            ),
        ]
    )
