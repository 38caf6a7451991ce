"""ROS 2 message definitions as ``ros2msg`` schemas, read from the installed message packages.

A Foxglove WebSocket channel or an MCAP file carrying CDR messages names each channel's type
(``sensor_msgs/msg/JointState``) and its schema: the type's ``.msg`` text followed by every type
it uses, each after a line of 80 ``=`` and ``MSG: pkg/Name`` (the layout rosbag2 writes into MCAP
and foxglove_bridge sends, so Foxglove, PlotJuggler and ``mcap-ros2-support`` decode it).

The ``.msg`` files are the ones the message packages install, ``<prefix>/share/<pkg>/msg/`` (the
ros-*-msgs wheels put them under the virtual environment's ``share/``; a ROS 2 installation under
its prefix), so the schema always matches the installed type support that serializes the bytes.
Rejected: generating the text from rclpy's introspection (``get_fields_and_field_types``), which
drops comments, constants and default values.
"""

from __future__ import annotations

import os
import re
import sys
from functools import cache
from pathlib import Path

from motor_ident.errors import MotorIdentError

SEPARATOR = "=" * 80
PRIMITIVES = frozenset(
    {
        "bool",
        "byte",
        "char",
        "float32",
        "float64",
        "int8",
        "uint8",
        "int16",
        "uint16",
        "int32",
        "uint32",
        "int64",
        "uint64",
        "string",
        "wstring",
    }
)
_FIELD = re.compile(r"^\s*([A-Za-z][\w/]*)(?:<=\d+)?(?:\[[^\]]*\])?\s+\w+")


class MessageDefinitionError(MotorIdentError):
    """A message type's ``.msg`` file is not installed, or its text cannot be read."""


def split_type(msgtype: str) -> tuple[str, str]:
    """``(package, Name)`` of ``pkg/msg/Name`` or ``pkg/Name``.

    Raises:
        MessageDefinitionError: not of either form.
    """
    parts = msgtype.split("/")
    if len(parts) == 3 and parts[1] == "msg":
        return parts[0], parts[2]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise MessageDefinitionError(f"message type {msgtype!r}: expected 'package/msg/Name'")


def prefixes() -> list[Path]:
    """Install prefixes searched for ``share/<pkg>/msg/*.msg``: AMENT_PREFIX_PATH, then this Python's prefix."""
    found = [Path(p) for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    return [*found, Path(sys.prefix)]


@cache
def msg_file(package: str, name: str) -> Path:
    """The installed ``.msg`` file of ``package/msg/name``.

    Raises:
        MessageDefinitionError: no prefix holds it (naming the places searched).
    """
    searched = []
    for prefix in prefixes():
        path = prefix / "share" / package / "msg" / f"{name}.msg"
        if path.is_file():
            return path
        searched.append(str(path.parent))
    raise MessageDefinitionError(
        f"{package}/msg/{name}: no {name}.msg in {searched}; install the message package "
        f"(ros-{package.replace('_', '-')} on PyPI, or source the ROS 2 installation that has it)"
    )


def dependencies(text: str, package: str) -> list[str]:
    """The non-primitive field types of a ``.msg`` text, as ``pkg/Name``, in order of first use.

    A type without a package is of ``package``; constants (``TYPE NAME=value``) use primitives only.
    """
    found: list[str] = []
    for line in text.splitlines():
        line = line.split("#", 1)[0]
        match = _FIELD.match(line)
        if match is None or match.group(1) in PRIMITIVES:
            continue
        base = match.group(1)
        full = base if "/" in base else f"{package}/{base}"
        if full not in found:
            found.append(full)
    return found


@cache
def ros2msg_schema(msgtype: str) -> str:
    """The ``ros2msg`` schema text of ``msgtype`` (``pkg/msg/Name``): its ``.msg`` text, then each
    type it depends on (depth first, each once) after a separator line and ``MSG: pkg/Name``.

    Raises:
        MessageDefinitionError: the type's or a dependency's ``.msg`` file is not installed.
    """
    package, name = split_type(msgtype)
    root = msg_file(package, name).read_text()
    parts = [root.rstrip("\n")]
    seen = {f"{package}/{name}"}
    pending = dependencies(root, package)
    while pending:
        dependency = pending.pop(0)
        if dependency in seen:
            continue
        seen.add(dependency)
        dep_package, dep_name = split_type(dependency)
        text = msg_file(dep_package, dep_name).read_text()
        parts.append(f"{SEPARATOR}\nMSG: {dep_package}/{dep_name}\n{text.rstrip(chr(10))}")
        pending = [d for d in dependencies(text, dep_package) if d not in seen] + pending
    return "\n".join(parts) + "\n"
