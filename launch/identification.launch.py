"""The identification node set of any scenario: simulated robot, identifier, feedforward, excitation.

    ros2 launch motor_ident identification.launch.py params_file:=my_robot.yaml [use_sim:=false] [excite:=false] \
        [monitor:=true]
    ros2 launch motor_ident identification.launch.py autostart:=false   # your lifecycle manager activates them

The scenario launch files (``valkyrie_arm.launch.py``, ``icub_torso.launch.py``) include this one
with their parameter file and add the nodes their hardware needs. With ``use_sim:=false`` the
identifier and feedforward nodes use your robot's ``joint_states`` and publish joint torques on
``effort_controller/commands`` (a ros2_controllers forward command controller). DDS discovery
follows your environment (ROS_AUTOMATIC_DISCOVERY_RANGE, ROS_DOMAIN_ID). ``monitor:=true`` adds
the monitor node (docs/monitoring.md): the run's topics on a Foxglove WebSocket server, 127.0.0.1.
identifier, feedforward and excitation are managed (lifecycle) nodes, configured and activated
unless ``autostart:=false`` (docs/nodes.md).
"""

from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from launch import LaunchDescription
from motor_ident.ros.runtime.launch_actions import managed_node


def generate_launch_description() -> LaunchDescription:
    params = LaunchConfiguration("params_file")
    use_sim = LaunchConfiguration("use_sim")
    sim_time = {"use_sim_time": use_sim}

    def node(executable: str, **kwargs: object) -> Node:
        return Node(package="motor_ident", executable=executable, name=executable, output="screen", **kwargs)

    return LaunchDescription(
        [
            DeclareLaunchArgument(
                "params_file",
                default_value=PathJoinSubstitution(
                    [FindPackageShare("motor_ident"), "config", "scenarios", "valkyrie_arm.yaml"]
                ),
                description="parameter file of the nodes (a scenario in config/scenarios or your own)",
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
                description="start the monitor: the run's topics on a Foxglove WebSocket server, 127.0.0.1:8765 "
                "(its settings: the parameter file's monitor section; needs foxglove-sdk)",
            ),
            DeclareLaunchArgument(
                "autostart",
                default_value="true",
                description="configure and activate the managed nodes (false: they wait unconfigured for "
                "your lifecycle manager)",
            ),
            node("monitor", parameters=[params], condition=IfCondition(LaunchConfiguration("monitor"))),
            node("sim_robot", parameters=[params], condition=IfCondition(use_sim)),
            *managed_node("identifier", parameters=[params, sim_time]),
            *managed_node("feedforward", parameters=[params, sim_time]),
            *managed_node(
                "excitation", parameters=[params, sim_time], condition=IfCondition(LaunchConfiguration("excite"))
            ),
        ]
    )
