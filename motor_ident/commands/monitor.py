"""``motor-ident monitor``: serve a running graph's topics to Foxglove (`motor_ident.ros.monitor.monitor_node`).

Starts the monitor node as ``ros2 run motor_ident monitor`` would, with the flags as its
parameters; it runs until Ctrl-C. ``motor-ident run``/``demo`` take ``--monitor`` (and
``--monitor-host``/``--monitor-port``) to start it with the scenario's nodes; the launch files
take ``monitor:=true``. Flags, defaults and help words come from
`motor_ident.scenario.nodes.MonitorSettings`, the one definition of the monitor's settings.
"""

from __future__ import annotations

import argparse
from typing import Any

from motor_ident.commands import arguments
from motor_ident.errors import ConfigError
from motor_ident.scenario.monitor import MonitorSettings
from motor_ident.schema import specs

_DEFAULTS = MonitorSettings()
_HELP = {name: spec.description for name, (spec, _, _) in specs(MonitorSettings).items()}
_PORT = arguments.from_setting(MonitorSettings, "port")
INSTALL_HINT = "the monitor needs the foxglove-sdk package: pip install 'motor_ident[monitor]'"


def add_monitor_arguments(parser: argparse.ArgumentParser) -> None:
    """``--monitor``, ``--monitor-host``, ``--monitor-port`` of ``run``/``demo``."""
    parser.add_argument("--monitor", action="store_true", help=f"monitor: {_HELP['enabled']}; see motor-ident monitor")
    parser.add_argument("--monitor-host", default=_DEFAULTS.host, help=f"{_HELP['host']} (default {_DEFAULTS.host})")
    parser.add_argument(
        "--monitor-port", type=_PORT, default=_DEFAULTS.port, help=f"{_HELP['port']} (default {_DEFAULTS.port})"
    )


def monitor_overrides(args: argparse.Namespace) -> dict[str, dict[str, object]]:
    """The run's overrides for the monitor node from ``--monitor*`` (none without ``--monitor``).

    Raises:
        ConfigError: foxglove-sdk is not installed.
    """
    if not args.monitor:
        return {}
    require_foxglove()
    return {"monitor": {"enabled": True, "host": args.monitor_host, "port": args.monitor_port}}


def require_foxglove() -> None:
    """Raises ConfigError with the install line when foxglove-sdk is missing."""
    import importlib.util

    if importlib.util.find_spec("foxglove") is None:
        raise ConfigError(INSTALL_HINT)


def cmd_monitor(args: argparse.Namespace) -> int:
    """Serve the graph's topics on a Foxglove WebSocket server until Ctrl-C."""
    require_foxglove()
    from motor_ident.ros.monitor.monitor_node import main
    from motor_ident.ros.runtime.processes import parameter_argument
    from motor_ident.ros.runtime.runner import default_dds_environment

    default_dds_environment()
    values: dict[str, Any] = {
        "host": args.host,
        "port": args.port,
        "robot": args.robot,
        "allow_client_publish": args.allow_client_publish,
        "allow_parameters": args.allow_parameters,
    }
    if args.topics:
        values["topics"] = args.topics
    ros_arguments = ["--ros-args"]
    for name, value in values.items():
        ros_arguments += ["-p", parameter_argument(name, value)]
    main(ros_arguments)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``monitor`` to the command line."""
    p = sub.add_parser("monitor", help="serve the running nodes' topics live to Foxglove (WebSocket)")
    p.add_argument("--host", default=_DEFAULTS.host, help=f"{_HELP['host']} (default {_DEFAULTS.host})")
    p.add_argument("--port", type=_PORT, default=_DEFAULTS.port, help=f"{_HELP['port']} (default {_DEFAULTS.port})")
    p.add_argument(
        "--topics",
        nargs="+",
        metavar="TOPIC",
        help=f"topics to serve ('' = every topic of the graph); default: {' '.join(_DEFAULTS.topics)}",
    )
    p.add_argument("--robot", default="valkyrie_arm", help=f"{_HELP['robot']} (default valkyrie_arm)")
    p.add_argument("--allow-client-publish", action="store_true", help=_HELP["allow_client_publish"])
    p.add_argument("--allow-parameters", action="store_true", help=_HELP["allow_parameters"])
    p.set_defaults(func=cmd_monitor)
