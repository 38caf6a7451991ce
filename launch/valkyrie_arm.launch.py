"""Online identification and feedforward for the Valkyrie-like arm.

    ros2 launch motor_ident valkyrie_arm.launch.py                  # with the simulated robot
    ros2 launch motor_ident valkyrie_arm.launch.py use_sim:=false   # next to your ros2_control stack

The nodes of ``identification.launch.py`` with ``config/scenarios/valkyrie_arm.yaml``; ``use_sim``
and ``excite`` pass through. With ``use_sim:=false`` the identifier and feedforward nodes use your
robot's ``joint_states`` and publish joint torques on ``effort_controller/commands``.
"""

from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import PathJoinSubstitution
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription


def generate_launch_description() -> LaunchDescription:
    share = FindPackageShare("motor_ident")
    return LaunchDescription(
        [
            IncludeLaunchDescription(
                PythonLaunchDescriptionSource(PathJoinSubstitution([share, "launch", "identification.launch.py"])),
                launch_arguments={
                    "params_file": PathJoinSubstitution([share, "config", "scenarios", "valkyrie_arm.yaml"])
                }.items(),
            ),
        ]
    )
