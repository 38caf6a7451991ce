"""A robot config compiled into a MuJoCo model, and the parameters it holds in the estimator's terms.

MuJoCo reads the robot config's URDF itself (its own URDF parser, inertia handling, kinematics
and dynamics): nothing here uses pinocchio or the estimator's regressor or friction model. Joints
of the URDF that the config does not identify are removed, so their bodies are rigidly attached
at position 0 (pinocchio's reduced model locks them at its neutral position, the same pose).
Each identified joint gets, from the config:

- ``armature`` = rho^2 I_m, the reflected rotor inertia;
- ``damping`` = the viscous coefficient (implicit in MuJoCo's ``implicit`` / ``implicitfast``),
  plus ``mujoco_quadratic_friction`` as MuJoCo's quadratic damping ``d qd |qd|``, a friction shape
  outside every estimator model;
- ``frictionloss`` = the dry (Coulomb) level: a constraint, so a joint at rest sticks until the
  other torques exceed it, instead of the estimator's smooth ``tanh`` sign;
- a ``motor`` actuator of gear 1, its force clamped to the URDF's effort limit (MuJoCo reads it
  as the joint's ``actuatorfrcrange``).

Position limits are the URDF's, enforced by MuJoCo as constraints (hard stops); contacts are off
(the identified robots carry no collision geometry that matters here).

How each friction model of the config becomes (dry, viscous), and what of it the plant does not
simulate:

| config ``kind``   | dry level           | viscous | not simulated                                  |
|-------------------|---------------------|---------|------------------------------------------------|
| coulomb_viscous   | fc                  | fv      | -                                              |
| stribeck          | fc                  | fv      | static_pos / static_neg above fc (breakaway)   |
| arctan            | tau_s + tau_sc      | tau_v   | the Stribeck bump and the arctan shapes        |
| none              | 0                   | 0       | -                                              |
| directional       | refused: asymmetric friction has no MuJoCo counterpart here                  |

`parameters_in_estimator_terms` expresses the compiled model in the regressor's parameter vector
(`motor_ident.core.rigid_body.regressor`'s layout): the inertial parameters of each identified
joint's body (every body rigidly attached to it included) about the joint frame, the armature,
and the friction as the estimator's model of the same kind would write it
(``stribeck``: ``[fc, fv, fc, fc]``, ``arctan``: ``[dry, 0, viscous]``, an ``offset`` column: 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import mujoco
import numpy as np
from numpy.typing import NDArray

from motor_ident.errors import ConfigError, ModelError
from motor_ident.sim.urdf_xml import urdf_without_geometry

if TYPE_CHECKING:
    from motor_ident.io.robot_config import JointConfig, RobotConfig
    from motor_ident.sim.plant import PlantConfig

FloatArray = NDArray[np.float64]

_INTEGRATORS = {
    "euler": mujoco.mjtIntegrator.mjINT_EULER,
    "implicit": mujoco.mjtIntegrator.mjINT_IMPLICIT,
    "implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST,
    "rk4": mujoco.mjtIntegrator.mjINT_RK4,
}


@dataclass(frozen=True)
class JointFriction:
    """The friction MuJoCo simulates on one joint: its dry level [N m] and viscous coefficient [N m s/rad]."""

    dry: float
    viscous: float


def joint_friction(joint: str, drive: JointConfig) -> JointFriction:
    """(dry, viscous) of a joint's configured friction (table in the module docstring).

    Raises:
        ConfigError: the friction model has no counterpart in this plant (``directional``).
    """
    kind = drive.friction.kind.value
    values = np.zeros(drive.friction.n_parameters) if drive.friction_values is None else drive.friction_values
    if kind == "none":
        return JointFriction(0.0, 0.0)
    if kind in ("coulomb_viscous", "stribeck"):
        return JointFriction(float(values[0]), float(values[1]))
    if kind == "arctan":
        return JointFriction(float(values[0] + values[1]), float(values[2]))
    raise ConfigError(
        f"joint {joint!r}: friction.kind = {kind!r} has no counterpart in the mujoco engine (symmetric dry + "
        "viscous friction only): use engine = 'pinocchio' or a coulomb_viscous / stribeck / arctan model"
    )


def friction_in_estimator_terms(drive: JointConfig, friction: JointFriction) -> FloatArray:
    """The joint's (dry, viscous) friction as the estimator's model of the config's kind writes it, shape (p_j,)."""
    kind = drive.friction.kind.value
    if kind == "coulomb_viscous":
        values = [friction.dry, friction.viscous]
    elif kind == "stribeck":
        values = [friction.dry, friction.viscous, friction.dry, friction.dry]
    elif kind == "arctan":
        values = [friction.dry, 0.0, friction.viscous]
    else:
        values = []
    values += [0.0] * (drive.friction.n_parameters - len(values))  # an offset column: none in this plant
    return np.asarray(values, dtype=float)


def build_spec(config: RobotConfig, plant_config: PlantConfig) -> mujoco.MjSpec:
    """The MuJoCo model specification of a robot config (module docstring), not yet compiled.

    Raises:
        ModelError: MuJoCo cannot read the URDF.
        ConfigError: a configured joint is not in the URDF, or a friction model has no counterpart.
    """
    try:
        spec = mujoco.MjSpec.from_string(urdf_without_geometry(str(config.urdf)))
    except ValueError as exc:
        raise ModelError(f"MuJoCo cannot read the URDF {config.urdf}: {exc}") from exc
    spec.compiler.fusestatic = (
        False  # keep every body: payloads attach to them, `parameters_in_estimator_terms` sums them
    )
    spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE
    spec.option.gravity = np.asarray(config.gravity, dtype=float)
    spec.option.timestep = 1.0 / (plant_config.rate_hz * plant_config.substeps)
    spec.option.integrator = _INTEGRATORS[plant_config.mujoco.mujoco_integrator]
    spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    by_name = {joint.name: joint for joint in spec.joints}
    missing = [name for name in config.joints if name not in by_name]
    if missing:
        raise ConfigError(f"joints {missing} of robot config {config.name!r} are not in the URDF {config.urdf}")
    for name, joint in by_name.items():
        if name not in config.joints:
            spec.delete(joint)  # its body rides rigidly on its parent at position 0
    for name, drive in zip(config.joints, config.joint_parameters, strict=True):
        joint = by_name[name]
        friction = joint_friction(name, drive)
        joint.armature = drive.gear_ratio**2 * drive.rotor_inertia
        # MuJoCo's polynomial damping -(a v + b v|v| + c v^3): viscous friction plus the unmodelled quadratic term
        joint.damping = [friction.viscous, plant_config.mujoco.mujoco_quadratic_friction, 0.0]
        joint.frictionloss = friction.dry
        actuator = spec.add_actuator(name=f"{name}_motor", target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT)
        actuator.set_to_motor()
    return spec


def _joint_bodies(model: mujoco.MjModel, joints: tuple[str, ...]) -> list[int]:
    """Body id of each identified joint; the joint must sit at its body's origin (MuJoCo's URDF import)."""
    bodies = []
    for name in joints:
        jid = model.joint(name).id
        if np.any(model.jnt_pos[jid] != 0.0):
            raise ModelError(f"joint {name!r} is not at its body's origin in MuJoCo's model")
        bodies.append(int(model.jnt_bodyid[jid]))
    return bodies


def inertial_parameters(model: mujoco.MjModel, joints: tuple[str, ...]) -> FloatArray:
    """``[m, mc_x, mc_y, mc_z, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]`` per identified joint, shape (10 n,).

    Each joint carries its body and every body rigidly attached to it (until the next identified
    joint), at the pose of q = 0; the first moment and the inertia are about the joint frame
    (MuJoCo's body frame of the joint, URDF's joint origin), in that frame [kg, kg m, kg m^2].
    """
    data = mujoco.MjData(model)
    data.qpos[:] = model.qpos0  # hinges at 0; a free joint at its body's pose
    mujoco.mj_kinematics(model, data)
    carriers = _joint_bodies(model, joints)
    owner = {body: k for k, body in enumerate(carriers)}
    theta = np.zeros(10 * len(joints))
    for body in range(1, model.nbody):
        carrier = body
        while carrier not in owner and carrier != 0:
            carrier = int(model.body_parentid[carrier])
        if carrier == 0:
            continue  # fixed to the world
        R_WJ = data.xmat[carrier].reshape(3, 3)
        p_WJ = data.xpos[carrier]
        R_WI = data.ximat[body].reshape(3, 3)
        mass = float(model.body_mass[body])
        c = R_WJ.T @ (data.xipos[body] - p_WJ)
        R_JI = R_WJ.T @ R_WI
        inertia = R_JI @ np.diag(model.body_inertia[body]) @ R_JI.T + mass * (c @ c * np.eye(3) - np.outer(c, c))
        k = 10 * owner[carrier]
        theta[k] += mass
        theta[k + 1 : k + 4] += mass * c
        theta[k + 4 : k + 10] += inertia[[0, 0, 1, 0, 1, 2], [0, 1, 1, 2, 2, 2]]
    return theta


def parameters_in_estimator_terms(model: mujoco.MjModel, config: RobotConfig) -> FloatArray:
    """The compiled model's parameters in the regressor's layout (module docstring), shape (p,).

    ``[inertial (10 n) | rho^2 I_m (n, when the config identifies it) | friction per joint |
    coupled motors' terms (zeros: the motor chains are not simulated here)]``.
    """
    joints = tuple(config.joints)
    parts = [inertial_parameters(model, joints)]
    dofs = [int(model.jnt_dofadr[model.joint(name).id]) for name in joints]
    if config.reflected_inertia:
        parts.append(np.asarray(model.dof_armature[dofs], dtype=float))
    for dof, drive in zip(dofs, config.joint_parameters, strict=True):
        friction = JointFriction(float(model.dof_frictionloss[dof]), float(model.dof_damping[dof]))
        parts.append(friction_in_estimator_terms(drive, friction))
    if config.couplings:  # coupled motors' own terms: not simulated here (no motor chains), so zero
        parts.append(np.zeros(config.coupled_motor_drives().n_parameters))
    return np.concatenate(parts)
