"""Scenario files: find one, read it, and check every node's parameters against its settings class.

A scenario file (config/scenarios/NAME.yaml) is a ROS 2 parameter file, ``node: ros__parameters:
{...}``, read by ``ros2 launch`` as it is. Here it becomes one settings object per node of
`motor_ident.scenario.nodes.NODE_SETTINGS` (defaults for what the file leaves out); the sections
of other nodes are kept as read. As in ROS 2, a node key may start with ``/`` and the ``/**``
section applies to every node (each node takes the keys it has). Unknown keys and wrong values
are errors naming the file, the node and the key.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from motor_ident.errors import ConfigError
from motor_ident.io.robot_config import config_directories
from motor_ident.scenario.nodes import NODE_SETTINGS
from motor_ident.schema import build, read_yaml, require_mapping, specs

# Parameters rclpy itself owns on every node: allowed in a scenario file, not settings.
RCLPY_PARAMETERS = ("use_sim_time",)
RCLPY_PREFIXES = ("qos_overrides.",)


@dataclass(frozen=True)
class Scenario:
    """A loaded scenario.

    Attributes:
        path: the file it was read from.
        named: the nodes the file names (the ones its launch file starts), in file order.
        nodes: node name -> settings object, for every node of `NODE_SETTINGS`.
        parameters: node name -> the file's ``ros__parameters`` (``/**`` merged in, overrides
            applied), every node the file names.
    """

    path: Path
    named: tuple[str, ...]
    nodes: dict[str, Any]
    parameters: dict[str, dict[str, Any]]


def find_scenario(name_or_path: str | Path) -> Path:
    """The file of a scenario: a path, or a name shipped in config/scenarios/.

    Raises:
        ConfigError: naming the directories searched.
    """
    path = Path(name_or_path)
    if path.is_file():
        return path
    candidates = [d / "scenarios" / f"{name_or_path}.yaml" for d in config_directories()]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise ConfigError(
        f"scenario {str(name_or_path)!r}: not a file, and not found in {[str(c.parent) for c in candidates]}"
    )


def load_scenario(name_or_path: str | Path, overrides: dict[str, dict[str, Any]] | None = None) -> Scenario:
    """Read and check a scenario; ``overrides`` (node -> {key: value}) replace the file's values.

    Raises:
        ConfigError: the file is missing or malformed, or a node's parameter is unknown, of the
            wrong type or out of range (``file: node identifier: key = value: expected ...``).
    """
    path = find_scenario(name_or_path)
    doc = require_mapping(read_yaml(path), str(path))
    sections: dict[str, dict[str, Any]] = {}
    for key, section in doc.items():
        section = require_mapping(section, f"{path}: {key}", allowed=("ros__parameters",))
        sections[str(key).lstrip("/")] = require_mapping(
            section.get("ros__parameters"), f"{path}: {key}: ros__parameters"
        )
    every = sections.pop("**", {})
    parameters = {node: {**every, **values} for node, values in sections.items()}
    for node, values in (overrides or {}).items():
        parameters.setdefault(node, {}).update(values)
    nodes: dict[str, Any] = {}
    for node, cls in NODE_SETTINGS.items():
        known = specs(cls)
        values = {k: v for k, v in every.items() if k in known}
        values.update(
            (k, v)
            for k, v in parameters.get(node, {}).items()
            if k not in RCLPY_PARAMETERS and not k.startswith(RCLPY_PREFIXES) and (k in known or k not in every)
        )
        nodes[node] = build(cls, values, where=f"{path}: node {node}")
    return Scenario(path=path, named=tuple(sections), nodes=nodes, parameters=parameters)
