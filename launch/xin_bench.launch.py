"""An elastic joint with dual encoders under the VREC velocity loop (Xin et al. 2020).

    ros2 launch motor_ident xin_bench.launch.py                              # with the simulated test bench
    ros2 launch motor_ident xin_bench.launch.py use_sim:=false               # on your drive's encoder topics
    ros2 launch motor_ident xin_bench.launch.py params_file:=my_bench.yaml   # your copy of the parameters
    ros2 launch motor_ident xin_bench.launch.py autostart:=false             # your lifecycle manager activates

Nodes: ``elastic_sim`` (the two-inertia bench of Xin et al. 2020, Table 1, with cogging ripple,
publishing ``joint_states`` and ``motor_states``) and ``vrec_controller`` (PI velocity loop +
rigid-body velocity + ripple elimination gain K designed for a damping ratio; torque on
``effort_controller/commands``, the deformation, its rate and the rigid-body velocity on
``~/deformation`` and ``~/rigid_velocity``). Send the velocity reference on
``vrec_controller/velocity_reference`` (std_msgs/Float64MultiArray, rad/s per joint). Both nodes
read ``params_file`` (default ``config/scenarios/xin_bench.yaml``). vrec_controller is a managed
(lifecycle) node, configured and activated unless ``autostart:=false``.
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
    return LaunchDescription(
        [
            DeclareLaunchArgument(
                "params_file",
                default_value=PathJoinSubstitution(
                    [FindPackageShare("motor_ident"), "config", "scenarios", "xin_bench.yaml"]
                ),
                description="parameter file of both nodes (default: the xin_bench scenario's)",
            ),
            DeclareLaunchArgument(
                "use_sim",
                default_value="true",
                description="start the simulated two-inertia bench (elastic_sim)",
            ),
            DeclareLaunchArgument(
                "autostart",
                default_value="true",
                description="configure and activate the managed nodes (false: they wait unconfigured for "
                "your lifecycle manager)",
            ),
            Node(
                package="motor_ident",
                executable="elastic_sim",
                name="elastic_sim",
                parameters=[params],
                condition=IfCondition(LaunchConfiguration("use_sim")),
                output="screen",
            ),
            *managed_node("vrec_controller", parameters=[params]),
        ]
    )
