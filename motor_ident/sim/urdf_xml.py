"""A URDF's XML made ready for a simulator: without geometry, inertias a simulator accepts."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np

from motor_ident.errors import ModelError


def urdf_without_geometry(path: str) -> str:
    """The URDF's XML without visual and collision elements (MuJoCo would load their meshes)."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise ModelError(f"cannot read the URDF {path}: {exc}") from exc
    for link in root.iter("link"):
        for child in list(link):
            if child.tag in ("visual", "collision"):
                link.remove(child)
    return ET.tostring(root, encoding="unicode")


def lift_inertias(root: ET.Element, radius: float) -> None:
    """Give every ``<inertial>`` at least the inertia of a solid sphere of its mass and ``radius``.

    Public URDFs hold point masses (zero inertia) that MuJoCo refuses and that make a joint whose
    axis passes through the mass nearly inertia-free (a stiff, chattering simulation).
    """
    keys = ("ixx", "ixy", "iyy", "ixz", "iyz", "izz")
    for inertial in root.iter("inertial"):
        element, mass_element = inertial.find("inertia"), inertial.find("mass")
        if element is None or mass_element is None:
            continue
        v = {k: float(element.get(k, 0.0)) for k in keys}
        inertia = np.array(
            [[v["ixx"], v["ixy"], v["ixz"]], [v["ixy"], v["iyy"], v["iyz"]], [v["ixz"], v["iyz"], v["izz"]]]
        )
        e = np.linalg.eigvalsh(inertia)
        floor = max(0.4 * float(mass_element.get("value", 0.0)) * radius**2, 1e-9)
        lift = max(floor - e[0], e[2] - e[0] - e[1] + 1e-9, 0.0)
        for k in ("ixx", "iyy", "izz"):
            element.set(k, repr(float(v[k] + lift)))
