"""Online identification and feedforward for the Valkyrie-like arm.

    ros2 launch motor_ident valkyrie_arm.launch.py                            # with the simulated robot
    ros2 launch motor_ident valkyrie_arm.launch.py use_sim:=false             # next to your ros2_control stack
    ros2 launch motor_ident valkyrie_arm.launch.py params_file:=my_arm.yaml   # your copy of the parameters
    ros2 launch motor_ident valkyrie_arm.launch.py monitor:=true              # and watch it in Foxglove
    ros2 launch motor_ident valkyrie_arm.launch.py autostart:=false           # your lifecycle manager activates

The nodes of ``identification.launch.py`` (sim_robot, identifier, feedforward, excitation) with
``config/scenarios/valkyrie_arm.yaml`` unless ``params_file`` names another file; ``use_sim``,
``excite``, ``monitor`` and ``autostart`` pass through. With ``use_sim:=false`` the identifier and
feedforward nodes use your robot's ``joint_states`` and publish joint torques on
``effort_controller/commands``.
"""

from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription


def generate_launch_description() -> LaunchDescription:
    share = FindPackageShare("motor_ident")
    return LaunchDescription(
        [
            DeclareLaunchArgument(
                "params_file",
                default_value=PathJoinSubstitution([share, "config", "scenarios", "valkyrie_arm.yaml"]),
                description="parameter file of every node (default: the valkyrie_arm scenario's)",
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
        ]
    )
