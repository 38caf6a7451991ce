"""Small pieces shared by the nodes: parameters with descriptions, QoS choices, config loading."""

from __future__ import annotations

from typing import Any

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data

from motor_ident.errors import ConfigError
from motor_ident.io.robot_config import RobotConfig, load_robot_config

# joint_states / motor_states: latest sample matters, loss is tolerable (ros2/demos convention).
STATE_QOS = qos_profile_sensor_data
# The identifier uses every sample: a deep reader queue (0.5 s at 1 kHz) rides out its refits and
# physical-consistency checks (an SDP, 20-60 ms) without losing states. Best effort, so it matches
# any publisher.
IDENTIFIER_STATE_QOS = QoSProfile(depth=500, reliability=ReliabilityPolicy.BEST_EFFORT)
# ros2_controllers' forward command controllers subscribe RELIABLE: a best-effort publisher
# would never be matched, so commands are RELIABLE, shallow.
COMMAND_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE)
# Model parameters: late joiners must get the current model at once.
LATCHED_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def declare(node: Node, name: str, default: Any, description: str, *, read_only: bool = False) -> Any:
    """Declare a parameter with a description and return its value."""
    descriptor = ParameterDescriptor(description=description, read_only=read_only)
    return node.declare_parameter(name, default, descriptor).value


def robot_from_parameters(node: Node) -> RobotConfig:
    """Declare ``robot`` and load that robot config.

    Raises:
        ConfigError: naming the parameter and its value when the config cannot be loaded.
    """
    name = declare(node, "robot", "valkyrie_arm", "robot config: a name shipped in config/ or a YAML path")
    try:
        return load_robot_config(name)
    except ConfigError as exc:
        raise ConfigError(f"parameter robot = {name!r}: {exc}") from None


def run_node(node_class: type[Node], args: list[str] | None = None) -> None:
    """``main()`` body of a node: init, spin until SIGINT / SIGTERM, clean shutdown, exit code 0.

    rclpy's signal handlers (installed by ``rclpy.init``) shut the context down on SIGINT and
    SIGTERM; the loop then ends and the node releases its DDS participant. The loop calls
    ``spin_once``: with the PyPI rclpy wheels ``EventsExecutor.spin()`` runs no callbacks and
    ignores signals. Further signals during the teardown (``ros2 launch`` forwards the terminal's
    SIGINT a second time) are ignored so that the teardown completes. A configuration error stops
    the node at start with one log line naming the parameter and exit code 2.
    """
    import signal

    import rclpy
    from rclpy.executors import ExternalShutdownException
    from rclpy.experimental import EventsExecutor

    rclpy.init(args=args)
    node = None
    executor = None
    try:
        node = node_class()
        executor = EventsExecutor()
        executor.add_node(node)
        while rclpy.ok():
            executor.spin_once(timeout_sec=0.1)
    except ConfigError as exc:
        rclpy.logging.get_logger(node_class.__name__).fatal(f"refusing to start: {exc}")
        raise SystemExit(2) from None
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if executor is not None:
            executor.shutdown()
        if node is not None:
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
