"""Write identified parameters back into a copy of the robot's URDF, checked before it is written.

For each identified joint, the link it moves gets the identified body: mass, centre of mass and
inertia about the centre of mass, expressed in the link frame (a URDF link's frame is its
joint's frame, the frame pinocchio's parameters are about). Links rigidly attached to it (fixed
joints, or joints the robot config does not identify, at their neutral position) are part of
the same identified body: their ``<inertial>`` is removed and a comment says where it went.
Joint friction goes to ``<dynamics damping="fv" friction="fc"/>`` where the joint's model has a
viscous ``fv`` and a Coulomb ``fc`` term; the terms URDF has no place for (Stribeck peaks,
offsets) and the reflected rotor inertia rho^2 I_m (pinocchio's ``armature``) are written as
comments on the joint.

Before the file is written, the copy is loaded by pinocchio and its torques (RNEA with the
identified reflected inertia, plus the friction read back from ``<dynamics>``) are compared with
those of the parameters written, at random states. Only physically consistent parameters can be
written (positive mass, inertia about the centre of mass positive semidefinite). ``identify
--urdf-out`` (and ``validate --urdf-out`` with a parameters file that holds the base parameters'
covariance) writes the consistent links nearest to the URDF's that reproduce the identified
base parameters (`motor_ident.core.estimation.nearest_consistent`), whatever the method.
"""

from __future__ import annotations

import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.actuators.friction import friction_torque
from motor_ident.core.rigid_body.model import inverse_dynamics, load_robot_model, random_states
from motor_ident.core.rigid_body.regressor import Regressor
from motor_ident.errors import ConfigError, ModelError
from motor_ident.io.data import atomic_write
from motor_ident.io.robot_config import RobotConfig

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class UrdfExport:
    """What `export_urdf` wrote and how well the written file reproduces the identified torques.

    Attributes:
        path: the URDF written.
        max_torque_error: largest |tau_urdf - tau_identified| over the check states [N m].
        max_torque: largest |tau_identified| over the check states [N m].
        comments: parameters URDF cannot hold, as written in comments.
    """

    path: Path
    max_torque_error: float
    max_torque: float
    comments: tuple[str, ...]


def _g(x: float) -> str:
    return repr(float(x))


def _subtree(root: ET.Element, link: str, stop: set[str]) -> list[str]:
    """Links rigidly carried by ``link``: children through joints not in ``stop`` (identified joints)."""
    out, todo = [], [link]
    while todo:
        parent = todo.pop()
        for joint in root.findall("joint"):
            p, c = joint.find("parent"), joint.find("child")
            if p is None or c is None or p.get("link") != parent or joint.get("name") in stop:
                continue
            out.append(str(c.get("link")))
            todo.append(str(c.get("link")))
    return out


def _check_consistent(name: str, block: FloatArray) -> pin.Inertia:
    if not block[0] > 0.0:
        raise ConfigError(
            f"body {name!r}: identified mass {block[0]:.4g} kg is not positive; only physically consistent "
            "parameters can go into a URDF: identify with --method log_cholesky (or sdp)"
        )
    inertia = pin.Inertia.FromDynamicParameters(block)
    eig = np.linalg.eigvalsh(np.asarray(inertia.inertia))
    if eig.min() < -1e-9 * max(eig.max(), 1e-12):
        raise ConfigError(
            f"body {name!r}: identified inertia about its centre of mass has eigenvalue {eig.min():.3g} kg m^2 < 0; "
            "only physically consistent parameters can go into a URDF: identify with --method log_cholesky (or sdp)"
        )
    return inertia


def _set_inertial(link: ET.Element, inertia: pin.Inertia) -> None:
    for old in link.findall("inertial"):
        link.remove(old)
    inertial = ET.Element("inertial")
    c = np.asarray(inertia.lever)
    ET.SubElement(inertial, "origin", xyz=" ".join(_g(x) for x in c), rpy="0 0 0")
    ET.SubElement(inertial, "mass", value=_g(inertia.mass))
    I = np.asarray(inertia.inertia)
    ET.SubElement(
        inertial,
        "inertia",
        ixx=_g(I[0, 0]),
        ixy=_g(I[0, 1]),
        ixz=_g(I[0, 2]),
        iyy=_g(I[1, 1]),
        iyz=_g(I[1, 2]),
        izz=_g(I[2, 2]),
    )
    link.insert(0, inertial)
    link.insert(0, ET.Comment(" inertial parameters identified by motor_ident "))


def parse_urdf(path: Path) -> tuple[ET.ElementTree[ET.Element], dict[str, ET.Element], dict[str, ET.Element]]:
    """The URDF's tree (comments kept), its links and its joints by name.

    Raises:
        ModelError: the file cannot be read or parsed.
    """
    try:
        tree = ET.parse(path, parser=ET.XMLParser(target=ET.TreeBuilder(insert_comments=True)))
    except (OSError, ET.ParseError) as exc:
        raise ModelError(f"URDF {path}: {exc}") from None
    root = tree.getroot()
    links = {str(link.get("name")): link for link in root.findall("link")}
    joints = {str(joint.get("name")): joint for joint in root.findall("joint")}
    return tree, links, joints


def urdf_text(config: RobotConfig, regressor: Regressor, theta: ArrayLike) -> tuple[str, tuple[str, ...]]:
    """The URDF of ``config`` with the identified full parameters ``theta`` (p,) (module docstring).

    Returns:
        The XML text and the notes written as comments.

    Raises:
        ConfigError: a body is not physically consistent.
        ModelError: the URDF cannot be parsed.
    """
    theta = np.asarray(theta, dtype=float)
    tree, links, joints = parse_urdf(config.urdf)
    root = tree.getroot()
    identified = set(config.joints)
    inertial = theta[regressor.layout.inertial]
    notes: list[str] = []
    for k, name in enumerate(config.joints):
        joint = joints[name]
        child_el = joint.find("child")
        if child_el is None:
            raise ModelError(f"URDF {config.urdf}: joint {name!r} has no <child>")
        child = str(child_el.get("link"))
        inertia = _check_consistent(child, inertial[10 * k : 10 * k + 10])
        _set_inertial(links[child], inertia)
        for carried in _subtree(root, child, identified):
            link = links[carried]
            for old in link.findall("inertial"):
                link.remove(old)
            link.insert(0, ET.Comment(f" inertial parameters identified with link {child!r} (one rigid body) "))
        shape = regressor.friction[k]
        values = dict(zip(shape.names, theta[regressor.layout.friction[k]]))
        for old in joint.findall("dynamics"):
            joint.remove(old)
        if "fc" in values and "fv" in values:
            ET.SubElement(joint, "dynamics", damping=_g(values["fv"]), friction=_g(values["fc"]))
        rest = {p: v for p, v in values.items() if p not in ("fc", "fv")}
        if rest or ("fc" not in values and values):
            text = f"{name}: {shape.kind.value} friction " + ", ".join(f"{p} = {v:.6g}" for p, v in rest.items())
            notes.append(text)
            joint.append(ET.Comment(f" motor_ident: {text} (no URDF element) "))
        if regressor.has_reflected_inertia:
            ia = float(theta[regressor.layout.reflected_inertia][k])
            text = f"{name}: reflected rotor inertia rho^2 I_m = {ia:.6g} kg m^2"
            notes.append(text)
            joint.append(ET.Comment(f" motor_ident: {text} (pinocchio: model.armature; no URDF element) "))
    block = regressor.layout.motor_block
    if block.stop > block.start:  # coupled motors' rotor inertia and friction, on each motor's own motion
        motor_values = ", ".join(f"{p} = {v:.6g}" for p, v in zip(regressor.names[block], theta[block]))
        notes.append(f"coupled motors (on their own velocity): {motor_values}")
        root.append(
            ET.Comment(f" motor_ident: coupled motors, on their own velocity: {motor_values} (no URDF element) ")
        )
    ET.indent(tree)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n", tuple(notes)


def check_urdf(
    path: Path, config: RobotConfig, regressor: Regressor, theta: ArrayLike, *, samples: int = 200, seed: int = 0
) -> tuple[float, float]:
    """Largest torque difference between the URDF at ``path`` (loaded by pinocchio) and the model.

    Rigid body by pinocchio's RNEA with the identified reflected inertia as armature, plus the
    friction pinocchio read from ``<dynamics>`` (``model.friction``, ``model.damping``) through
    the joint's friction shape; the Stribeck peaks, offsets and coupled motors' terms from
    ``theta`` (they have no URDF element). Returns (max |difference|, max |identified torque|) [N m].
    """
    theta = np.asarray(theta, dtype=float)
    robot = load_robot_model(path, joint_names=config.joints, gravity=config.gravity)
    if regressor.has_reflected_inertia:
        robot.model.armature[robot.v_index] = theta[regressor.layout.reflected_inertia]
    q, v, a = random_states(regressor.robot, np.random.default_rng(seed), samples)
    expected = regressor.predict(theta, q, v, a)
    data = robot.create_data()
    got = np.array([inverse_dynamics(robot, data, q[k], v[k], a[k]) for k in range(samples)])
    fc, fv = robot.model.friction[robot.v_index], robot.model.damping[robot.v_index]
    for j, shape in enumerate(regressor.friction):
        values = dict(zip(shape.names, theta[regressor.layout.friction[j]]))
        if "fc" in values and "fv" in values:
            values["fc"], values["fv"] = float(fc[j]), float(fv[j])
        got[:, j] += friction_torque(v[:, j], np.array([values[p] for p in shape.names]), shape)
    got += regressor.motor_torque(v, a, theta)  # coupled motors' terms: from theta (no URDF element)
    return float(np.max(np.abs(got - expected))), float(np.max(np.abs(expected)))


def export_urdf(
    out: str | Path, config: RobotConfig, regressor: Regressor, theta: ArrayLike, *, rtol: float = 1e-6
) -> UrdfExport:
    """Write the identified URDF to ``out`` after checking that pinocchio reloads it to the same torques.

    Raises:
        ConfigError: parameters not physically consistent, or the reloaded URDF's torques differ
            by more than ``rtol`` of the largest torque (nothing is written then).
    """
    out = Path(out)
    text, notes = urdf_text(config, regressor, theta)
    with tempfile.TemporaryDirectory() as tmp:
        trial = Path(tmp) / out.name
        trial.write_text(text, encoding="utf-8")
        try:
            error, largest = check_urdf(trial, replace(config, urdf=trial), regressor, theta)
        except ModelError as exc:
            raise ConfigError(f"the exported URDF does not load: {exc}") from None
    if not error <= rtol * max(largest, 1.0):
        raise ConfigError(
            f"the exported URDF reproduces the identified torques only within {error:.3g} N m "
            f"(largest torque {largest:.3g} N m); {out} not written"
        )
    atomic_write(out, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    return UrdfExport(path=out, max_torque_error=error, max_torque=largest, comments=notes)
