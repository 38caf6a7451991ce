"""Online identification and feedforward for the Valkyrie-like arm.

    ros2 launch motor_ident valkyrie_arm.launch.py                  # with the simulated robot
    ros2 launch motor_ident valkyrie_arm.launch.py use_sim:=false   # next to your ros2_control stack

With ``use_sim:=false`` the identifier and feedforward nodes use your robot's ``joint_states`` and
publish joint torques on ``effort_controller/commands`` (a ros2_controllers forward command
controller). Node parameters come from ``config/scenarios/valkyrie_arm.yaml``. DDS discovery
follows your environment (ROS_AUTOMATIC_DISCOVERY_RANGE, ROS_DOMAIN_ID).
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
                    [FindPackageShare("motor_ident"), "config", "scenarios", "valkyrie_arm.yaml"]
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
        ]
    )
