"""Write a floating-base identification into a copy of the URDF (`motor_ident.io.urdf_export`'s rules).

The base link and the child link of every identified joint get their identified body (mass,
centre of mass, inertia about it, in the link frame); links rigidly attached to them lose their
``<inertial>`` (a comment says where it went). Before writing, the copy is reloaded by pinocchio
on a free-flyer root and its base-row wrenches are compared with the identified model's at
random states; only physically consistent parameters (``--method sdp`` / ``log_cholesky``) go in.
"""

from __future__ import annotations

import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike

from motor_ident.core.floating_base.model import FloatingBaseRegressor, load_floating_base_model
from motor_ident.errors import ConfigError, ModelError
from motor_ident.io.data import atomic_write
from motor_ident.io.robot_config import RobotConfig
from motor_ident.io.urdf_export import UrdfExport, _check_consistent, _set_inertial, _subtree, parse_urdf


def floating_urdf_text(config: RobotConfig, theta: ArrayLike) -> str:
    """The URDF of ``config`` with the floating-base parameters ``theta`` (10 (n + 1),), base first.

    Raises:
        ConfigError: a body is not physically consistent, or the config has no floating base.
    """
    if config.floating_base is None:
        raise ConfigError(f"robot {config.name!r} has no floating_base section")
    theta = np.asarray(theta, dtype=float)
    tree, links, joints = parse_urdf(config.urdf)
    root = tree.getroot()
    identified = set(config.joints)
    carriers = [config.floating_base.base_link]
    for name in config.joints:
        child = joints[name].find("child")
        if child is None:
            raise ModelError(f"URDF {config.urdf}: joint {name!r} has no <child>")
        carriers.append(str(child.get("link")))
    for k, link in enumerate(carriers):
        _set_inertial(links[link], _check_consistent(link, theta[10 * k : 10 * k + 10]))
        for carried in _subtree(root, link, identified):
            for old in links[carried].findall("inertial"):
                links[carried].remove(old)
            links[carried].insert(
                0, ET.Comment(f" inertial parameters identified with link {link!r} (one rigid body) ")
            )
    ET.indent(tree)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def export_floating_urdf(out: str | Path, config: RobotConfig, theta: ArrayLike, *, rtol: float = 1e-6) -> UrdfExport:
    """Write the identified URDF to ``out`` after checking that pinocchio reloads it to the same wrenches.

    ``max_torque_error`` / ``max_torque`` of the result are the base-row wrench difference and
    largest wrench over the check states [N, N m].

    Raises:
        ConfigError: parameters not physically consistent, or the reloaded URDF differs (nothing written).
    """
    out = Path(out)
    theta = np.asarray(theta, dtype=float)
    text = floating_urdf_text(config, theta)
    floating = config.build_floating_base()
    with tempfile.TemporaryDirectory() as tmp:
        trial = Path(tmp) / out.name
        trial.write_text(text, encoding="utf-8")
        try:
            reloaded = load_floating_base_model(trial, joint_names=config.joints, gravity=config.gravity)
        except ModelError as exc:
            raise ConfigError(f"the exported URDF does not load: {exc}") from None
    regressor = FloatingBaseRegressor(floating)
    Q, V, A = floating.random_states(np.random.default_rng(0), 50)
    Y = regressor.rows(Q, V, A, count=6)
    expected, got = Y @ theta, Y @ reloaded.inertial_parameters()
    error, largest = float(np.max(np.abs(got - expected))), float(np.max(np.abs(expected)))
    if not error <= rtol * max(largest, 1.0):
        raise ConfigError(
            f"the exported URDF reproduces the identified wrenches only within {error:.3g} (largest {largest:.3g}); "
            f"{out} not written"
        )
    atomic_write(out, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return UrdfExport(path=out, max_torque_error=error, max_torque=largest, comments=())
