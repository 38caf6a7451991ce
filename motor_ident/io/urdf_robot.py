"""A robot config from a plain URDF: what ``--robot arm.urdf`` identifies.

Every movable joint of the URDF (revolute, continuous, prismatic; mimic joints excluded), in
the file's order, with Coulomb + viscous friction (sign smoothed over `SMOOTHING_VELOCITY`) and
a reflected rotor inertia rho^2 I_m per joint: geared robots always have one, and leaving it out
costs the distal joints their fit. No nominal friction or rotor values: the fit starts from the
URDF's inertias and zeros. `urdf_robot_mapping` returns the ``robot:`` mapping of a robot config
YAML, so the one validator (`motor_ident.io.robot_config.robot_config_from_dict`) builds it, and
`URDF_NOTE` tells how to write the YAML for more.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from motor_ident.errors import ConfigError

MOVABLE = ("revolute", "continuous", "prismatic")
SMOOTHING_VELOCITY = 0.005
"""Sign smoothing of the default friction [rad/s]: about the noise of a velocity differentiated
from encoder positions. On the example arm's log (examples/arm_log, `tools/make_example_log.py`)
the identified model predicted the second recording with a mean relative residual error of
8.5 % with 0.002-0.005 rad/s, 13.5 % with 0.02 rad/s and 15.6 % with a hard sign (velocity noise
flips the sign at rest and at slow reversals)."""


URDF_NOTE = (
    "robot from a plain URDF: every movable joint, Coulomb + viscous friction and a reflected "
    "rotor inertia per joint. To choose the joints, friction models (stribeck, arctan, ...), gear ratios, "
    "nominal friction or couplings, write a robot YAML naming the URDF (robot: {name, urdf, joints, "
    "friction, joint_parameters}; see config/valkyrie_arm.yaml) and pass that to --robot"
)


def urdf_robot_mapping(path: str | Path) -> dict[str, Any]:
    """The ``robot:`` mapping of a config for the URDF at ``path`` (module docstring).

    Raises:
        ConfigError: the file is not a readable URDF, or has no movable joint.
    """
    path = Path(path)
    try:
        root = ET.parse(path).getroot()
    except OSError as exc:
        raise ConfigError(f"URDF {path}: cannot read: {exc}") from None
    except ET.ParseError as exc:
        raise ConfigError(f"URDF {path}: not valid XML: {exc}") from None
    if root.tag != "robot":
        raise ConfigError(f"{path}: the root element is <{root.tag}>, a URDF's is <robot>")
    joints = [
        str(j.get("name"))
        for j in root.findall("joint")
        if j.get("type") in MOVABLE and j.find("mimic") is None and j.get("name")
    ]
    if not joints:
        raise ConfigError(f"URDF {path}: no movable joint (revolute, continuous or prismatic) to identify")
    return {
        "name": root.get("name") or path.stem,
        "urdf": str(path.resolve()),
        "joints": joints,
        "friction": {"kind": "coulomb_viscous", "smoothing_velocity": SMOOTHING_VELOCITY},
        "reflected_inertia": True,
    }
