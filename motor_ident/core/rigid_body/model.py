"""Rigid-body robot model through pinocchio, with motor-side inertia and joint order by name.

A `RobotModel` wraps a pinocchio model reduced to the joints motor_ident identifies (all others
locked), and keeps every array in the order of ``joint_names`` — the order of the robot config,
which need not be pinocchio's. The reflected rotor inertia ``rho^2 I_m`` (Guedelha et al. 2021, eq. 10: a
rotor of inertia I_m behind a gear of ratio rho is seen from the joint as rho^2 I_m) is stored as
pinocchio's ``armature``, so RNEA, ABA and the mass matrix all include it.

Inertial parameters follow pinocchio's ordering per body, about the joint frame origin:
``[m, mc_x, mc_y, mc_z, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]`` [kg, kg m, kg m^2].
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from motor_ident.errors import ConfigError, DataError, ModelError

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

INERTIAL_NAMES: tuple[str, ...] = ("m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")
"""Names of the 10 inertial parameters of one body, in pinocchio's order."""


@dataclass(frozen=True, eq=False)
class RobotModel:
    """Pinocchio model of the identified joints plus the per-joint drive data.

    Attributes:
        model: pinocchio model reduced to ``joint_names`` (armature = reflected rotor inertia).
        joint_names: joint order used by every array motor_ident exchanges, length n.
        body_names: name of the link each joint moves (merged with its fixed children), length n.
        gear_ratio: rho per joint, shape (n,) [-].
        rotor_inertia: I_m per joint on the motor side, shape (n,) [kg m^2].
        q_index: index of each joint's first coordinate in pinocchio's q, shape (n,).
        v_index: index of each joint in pinocchio's v, shape (n,).
        continuous: True where the joint is unbounded (pinocchio stores cos, sin), shape (n,).
    """

    model: pin.Model
    joint_names: tuple[str, ...]
    body_names: tuple[str, ...]
    gear_ratio: FloatArray
    rotor_inertia: FloatArray
    q_index: IntArray
    v_index: IntArray
    continuous: NDArray[np.bool_]

    @property
    def n(self) -> int:
        """Number of joints."""
        return len(self.joint_names)

    @property
    def reflected_inertia(self) -> FloatArray:
        """Rotor inertia seen from the joint, rho^2 I_m, shape (n,) [kg m^2] (Guedelha et al. 2021, eq. 10)."""
        return self.gear_ratio**2 * self.rotor_inertia

    @property
    def gravity(self) -> FloatArray:
        """Gravity acceleration in the base frame, shape (3,) [m/s^2]."""
        return np.array(self.model.gravity.linear, dtype=float)

    def create_data(self) -> pin.Data:
        """A fresh pinocchio workspace for this model."""
        return self.model.createData()

    def pin_q(self, q: ArrayLike) -> FloatArray:
        """Joint positions (n,) in our order -> pinocchio configuration (nq,)."""
        q = np.asarray(q, dtype=float)
        out = np.zeros(self.model.nq)
        plain = ~self.continuous
        out[self.q_index[plain]] = q[plain]
        out[self.q_index[self.continuous]] = np.cos(q[self.continuous])
        out[self.q_index[self.continuous] + 1] = np.sin(q[self.continuous])
        return out

    def pin_v(self, v: ArrayLike) -> FloatArray:
        """Joint velocities or accelerations (n,) in our order -> pinocchio order (nv,)."""
        out = np.empty(self.model.nv)
        out[self.v_index] = np.asarray(v, dtype=float)
        return out

    def from_pin_v(self, x: ArrayLike) -> FloatArray:
        """A vector in pinocchio's velocity order (nv,) -> our joint order (n,)."""
        return np.asarray(x, dtype=float)[self.v_index]

    def inertial_parameters(self) -> FloatArray:
        """Inertial parameters of all bodies, shape (10 n,), in `INERTIAL_NAMES` order per body."""
        return np.concatenate(
            [self.model.inertias[self._joint_id(name)].toDynamicParameters() for name in self.joint_names]
        )

    def inertial_parameter_names(self) -> list[str]:
        """Names ``<body>.<param>`` of `inertial_parameters`, length 10 n."""
        return [f"{body}.{p}" for body in self.body_names for p in INERTIAL_NAMES]

    def with_inertial_parameters(self, theta: ArrayLike) -> RobotModel:
        """A copy of this robot whose bodies carry the inertial parameters ``theta`` (10 n,).

        Raises:
            ModelError: a body's mass is not positive (pinocchio cannot represent it).
        """
        theta = np.asarray(theta, dtype=float)
        if theta.shape != (10 * self.n,):
            raise ConfigError(f"inertial parameters have shape {theta.shape}: expected ({10 * self.n},)")
        model = self.model.copy()
        for k, name in enumerate(self.joint_names):
            block = theta[10 * k : 10 * k + 10]
            if not block[0] > 0.0:
                raise ModelError(f"body {self.body_names[k]!r}: mass {block[0]!r} is not positive")
            model.inertias[self._joint_id(name)] = pin.Inertia.FromDynamicParameters(block)
        return self.with_pinocchio_model(model)

    def with_pinocchio_model(self, model: pin.Model) -> RobotModel:
        """A copy holding another pinocchio model of the same joints (e.g. with a payload)."""
        return replace(self, model=model)

    def with_rotor_inertia(self, rotor_inertia: ArrayLike) -> RobotModel:
        """A copy with new motor-side rotor inertias (n,) [kg m^2]."""
        rotor = _per_joint(rotor_inertia, self.n, "rotor_inertia")
        model = self.model.copy()
        model.armature[self.v_index] = self.gear_ratio**2 * rotor
        return RobotModel(
            model=model,
            joint_names=self.joint_names,
            body_names=self.body_names,
            gear_ratio=self.gear_ratio,
            rotor_inertia=rotor,
            q_index=self.q_index,
            v_index=self.v_index,
            continuous=self.continuous,
        )

    def _joint_id(self, name: str) -> int:
        return int(self.model.getJointId(name))


def _per_joint(values: ArrayLike | None, n: int, key: str, default: float = 0.0) -> FloatArray:
    if values is None:
        return np.full(n, default)
    arr = np.asarray(values, dtype=float)
    if arr.ndim == 0:
        arr = np.full(n, float(arr))
    if arr.shape != (n,):
        raise ConfigError(f"{key} has shape {arr.shape}: expected ({n},), one value per joint")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0.0):
        raise ConfigError(f"{key} = {arr.tolist()}: expected finite values >= 0")
    return arr


def _build_full_model(urdf: str | Path, *, floating_base: bool = False) -> pin.Model:
    text = str(urdf)
    root = (pin.JointModelFreeFlyer(),) if floating_base else ()
    try:
        if text.lstrip().startswith("<"):
            return pin.buildModelFromXML(text, *root)
        path = Path(text)
        if not path.is_file():
            raise ModelError(f"URDF file {path} does not exist")
        return pin.buildModelFromUrdf(str(path), *root)
    except ModelError:
        raise
    except Exception as exc:  # pinocchio raises plain ValueError / RuntimeError on bad URDF
        raise ModelError(f"cannot parse the URDF: {exc}") from exc


def load_robot_model(
    urdf: str | Path,
    *,
    joint_names: Sequence[str] | None = None,
    gravity: ArrayLike = (0.0, 0.0, -9.81),
    gear_ratio: ArrayLike | None = None,
    rotor_inertia: ArrayLike | None = None,
    floating_base: bool = False,
) -> RobotModel:
    """Build a `RobotModel` from a URDF file path or URDF XML string.

    Joints of the URDF not listed in ``joint_names`` are locked at their neutral position.
    With ``floating_base`` the URDF's root link hangs on pinocchio's free-flyer joint
    (``root_joint``, 7 coordinates, 6 velocities, kept first); ``joint_names`` and every per-joint
    array then describe the actuated joints only (`motor_ident.core.floating_base.model`).

    Args:
        urdf: path to a URDF file, or the URDF XML itself.
        joint_names: the identified joints, in the order every array will use; all movable
            joints of the URDF (pinocchio order) when None.
        gravity: gravity vector in the base frame, shape (3,) [m/s^2].
        gear_ratio: rho per joint, shape (n,) or a scalar; 1 when None.
        rotor_inertia: motor-side rotor inertia I_m per joint [kg m^2]; 0 when None.
        floating_base: put a free-flyer joint at the root link.

    Raises:
        ModelError: the URDF cannot be parsed or holds a joint motor_ident cannot handle.
        ConfigError: a joint name is unknown or a per-joint array has the wrong shape.
    """
    full = _build_full_model(urdf, floating_base=floating_base)
    all_names = [full.names[j] for j in range(2 if floating_base else 1, full.njoints)]
    if joint_names is None:
        joint_names = all_names
    joint_names = tuple(joint_names)
    if len(set(joint_names)) != len(joint_names):
        raise ConfigError(f"joints = {list(joint_names)}: a joint is listed twice")
    unknown = [name for name in joint_names if not full.existJointName(name)]
    if unknown:
        raise ConfigError(f"joints: {unknown} not in the URDF; its joints are {all_names}")
    lock = [full.getJointId(name) for name in all_names if name not in joint_names]
    model = pin.buildReducedModel(full, lock, pin.neutral(full)) if lock else full

    q_index, v_index, continuous, body_names = [], [], [], []
    for name in joint_names:
        jid = model.getJointId(name)
        joint = model.joints[jid]
        if joint.nv != 1:
            raise ModelError(f"joint {name!r} has {joint.nv} degrees of freedom: expected 1")
        if joint.nq not in (1, 2):
            raise ModelError(f"joint {name!r} of type {joint.shortname()} is not supported")
        q_index.append(joint.idx_q)
        v_index.append(joint.idx_v)
        continuous.append(joint.nq == 2)
        bodies = [f.name for f in model.frames if f.parentJoint == jid and f.type == pin.FrameType.BODY]
        body_names.append(bodies[0] if bodies else name)

    g = np.asarray(gravity, dtype=float)
    if g.shape != (3,) or not np.all(np.isfinite(g)):
        raise ConfigError(f"gravity = {np.asarray(gravity).tolist()}: expected 3 finite numbers")
    model.gravity.linear = g
    n = len(joint_names)
    ratio = _per_joint(gear_ratio, n, "gear_ratio", default=1.0)
    if np.any(ratio <= 0.0):
        raise ConfigError(f"gear_ratio = {ratio.tolist()}: expected values > 0")
    robot = RobotModel(
        model=model,
        joint_names=joint_names,
        body_names=tuple(body_names),
        gear_ratio=ratio,
        rotor_inertia=np.zeros(n),
        q_index=np.array(q_index, dtype=np.int64),
        v_index=np.array(v_index, dtype=np.int64),
        continuous=np.array(continuous, dtype=bool),
    )
    return robot.with_rotor_inertia(_per_joint(rotor_inertia, n, "rotor_inertia"))


def inverse_dynamics(robot: RobotModel, data: pin.Data, q: ArrayLike, v: ArrayLike, a: ArrayLike) -> FloatArray:
    """Rigid-body joint torques by RNEA (reflected rotor inertia included), shape (n,) [N m]."""
    tau = pin.rnea(robot.model, data, robot.pin_q(q), robot.pin_v(v), robot.pin_v(a))
    return robot.from_pin_v(tau)


def forward_dynamics(robot: RobotModel, data: pin.Data, q: ArrayLike, v: ArrayLike, tau: ArrayLike) -> FloatArray:
    """Joint accelerations by ABA for joint torques ``tau`` (n,), shape (n,) [rad/s^2]."""
    a = pin.aba(robot.model, data, robot.pin_q(q), robot.pin_v(v), robot.pin_v(tau))
    return robot.from_pin_v(a)


def position_limits(robot: RobotModel) -> tuple[FloatArray, FloatArray, NDArray[np.bool_]]:
    """The URDF's position limits, lower (n,) and upper (n,) [rad or m], and which joints have them:
    not continuous, both finite, lower < upper (a URDF without limits leaves pinocchio's defaults)."""
    lower = robot.model.lowerPositionLimit[robot.q_index]
    upper = robot.model.upperPositionLimit[robot.q_index]
    limited = ~robot.continuous & np.isfinite(lower) & np.isfinite(upper) & (upper > lower)
    return lower, upper, limited


def positions_beyond_limits(robot: RobotModel, q: ArrayLike, *, factor: float = 2.0) -> list[str]:
    """Joints whose positions reach farther beyond a URDF limit than ``factor`` times the limited range.

    No robot moves a joint there: such positions are in other units (degrees, encoder counts) or
    the URDF's limits are wrong. With the default 2, the positions of a flagged joint span at least
    three times its range; a calibration offset or a joint pressed past its stop is not flagged.

    Args:
        robot: the model (its URDF limits).
        q: positions (N, n) [rad or m].

    Returns:
        One phrase per flagged joint: ``elbow reaches 70 (URDF limits -2.17 to 2.17)``.
    """
    q = np.asarray(q, dtype=float)
    lower, upper, limited = position_limits(robot)
    width = upper - lower
    low, high = q.min(axis=0), q.max(axis=0)
    out = []
    for j in np.flatnonzero(limited & ((low < lower - factor * width) | (high > upper + factor * width))):
        extreme = low[j] if lower[j] - low[j] > high[j] - upper[j] else high[j]
        out.append(f"{robot.joint_names[j]} reaches {extreme:.4g} (URDF limits {lower[j]:.4g} to {upper[j]:.4g})")
    return out


def check_positions_in_reach(robot: RobotModel, q: ArrayLike) -> None:
    """Refuse positions far outside the URDF's limits (`positions_beyond_limits`), naming the joints.

    A refusal, not a warning: a fit of such data is meaningless (an R2 of -4 on positions in
    degrees), and the cure is the recording's units.

    Raises:
        DataError: one line: each joint, how far it reaches, its limits, and the likely units.
    """
    far = positions_beyond_limits(robot, q)
    if far:
        raise DataError(
            f"positions far outside the URDF's limits [rad or m]: {'; '.join(far)}. Degrees? Encoder counts? "
            "Convert them (a data spec's 'unit: deg' or 'scale'), or correct the URDF's limits"
        )


def random_states(robot: RobotModel, rng: np.random.Generator, count: int) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Random joint states for identifiability studies and tests.

    Positions are uniform within the joint limits (within [-pi, pi] where unlimited), velocities
    and accelerations standard normal. Returns q, v, a, each of shape (count, n).
    """
    lower, upper, limited = position_limits(robot)
    unlimited = ~limited | (upper - lower > 2 * np.pi)
    lower = np.where(unlimited, -np.pi, lower)
    upper = np.where(unlimited, np.pi, upper)
    q = rng.uniform(lower, upper, size=(count, robot.n))
    v = rng.standard_normal((count, robot.n))
    a = rng.standard_normal((count, robot.n))
    return q, v, a
