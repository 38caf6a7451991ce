"""The monitor's settings (`motor_ident.ros.monitor.monitor_node`), apart from the other nodes' so that the
command line reads its defaults and help words without importing the numerical core.

One of `motor_ident.scenario.nodes.NODE_SETTINGS`, like every node's settings.
"""

from __future__ import annotations

from dataclasses import dataclass

from motor_ident.schema import setting

MONITOR_TOPICS = (
    "/joint_states",
    "/effort_controller/commands",
    "/identifier/gate_open",
    "/identifier/r2",
    "/identifier/predicted_effort",
    "/feedforward/tracking_error",
    "/diagnostics",
)
"""What the monitor serves by default: states, commands, the identifier's gate, R^2 and prediction,
the tracking error and /diagnostics."""


@dataclass(frozen=True)
class MonitorSettings:
    """monitor: the run's topics on a Foxglove WebSocket server, forwarded as serialized (CDR)."""

    enabled: bool = setting(
        False, "start the monitor with the run (motor-ident run/demo --monitor; launch files: monitor:=true)"
    )
    host: str = setting(
        "127.0.0.1", "address the server binds: 127.0.0.1 = this machine only, 0.0.0.0 = every network interface"
    )
    port: int = setting(8765, "WebSocket port (0: any free port)", low=0, high=65535)
    topics: tuple[str, ...] = setting(MONITOR_TOPICS, "topics served ([''] = every topic of the graph)")
    robot: str = setting("", "robot config whose URDF is served on /robot_description for the 3D panel ('' = none)")
    allow_client_publish: bool = setting(False, "let clients publish on DDS topics (Foxglove's Publish panel)")
    allow_parameters: bool = setting(
        False, "let clients read and set the nodes' parameters (Foxglove's Parameters panel)"
    )
    discovery_period: float = setting(
        1.0, "how often the graph is searched for served topics", unit="s", low=0.0, high=60.0, open=(True, False)
    )
