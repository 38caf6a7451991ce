"""A floating-base robot (pinocchio free-flyer root), its regressor and its contact wrenches.

The equations of motion of a robot whose root link floats (a humanoid on its feet) are

    Y(q, nu, nu_dot) theta = [0_6; tau_joint] + sum_c J_c(q)^T w_c

with nu = [v_B; omega_B; qd] (the base twist in the base frame, pinocchio's free-flyer
convention: linear first, about the base origin), theta the inertial parameters of every body
(the base link first, then the link each joint moves, 10 each in pinocchio's order), and w_c
the wrench [f; tau] the environment applies at frame c, expressed in frame c (a foot's 6-axis
F/T sensor). The first 6 rows, the *base rows*, hold no joint torque: the contact wrenches
alone determine every parameter they depend on (Ayusawa et al. 2014). The next n rows are the
joint rows, usable where joint torques are measured.

`FloatingBaseRegressor.rows` is pinocchio's ``computeJointTorqueRegressor`` on the free-flyer
model with its rows and body blocks reordered to ours; `FloatingBaseRegressor.contact_forces`
maps measured wrenches to generalized forces through the frame Jacobians (LOCAL frame).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.rigid_body.model import INERTIAL_NAMES, RobotModel, load_robot_model
from motor_ident.errors import ConfigError, DataError, ModelError

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

BASE_ROWS = ("fx", "fy", "fz", "tx", "ty", "tz")
"""Names of the 6 base rows: force and torque on the base link, in the base frame [N, N m]."""

ROOT_JOINT = "root_joint"
"""Pinocchio's name of the free-flyer joint."""


@dataclass(frozen=True, eq=False)
class FloatingBaseModel:
    """A robot on a free-flyer root: the actuated joints in `robot`, plus the base link.

    Attributes:
        robot: `RobotModel` of the actuated joints; its pinocchio model has the free-flyer
            joint first (q: 7 base coordinates [x, y, z, qx, qy, qz, qw], v: 6 base velocities).
        base_link: name of the floating link (the URDF's root link).
        contact_frames: frames where wrenches are measured (F/T sensor frames), length c.
    """

    robot: RobotModel
    base_link: str
    contact_frames: tuple[str, ...] = ()

    @property
    def model(self) -> pin.Model:
        """The pinocchio model (free-flyer first)."""
        return self.robot.model

    @property
    def n(self) -> int:
        """Number of actuated joints."""
        return self.robot.n

    @property
    def nv(self) -> int:
        """Generalized velocities: 6 + n."""
        return 6 + self.robot.n

    @property
    def body_names(self) -> tuple[str, ...]:
        """The base link, then the link each joint moves, length n + 1."""
        return (self.base_link, *self.robot.body_names)

    @property
    def total_mass(self) -> float:
        """Mass of the model [kg]."""
        return float(sum(inertia.mass for inertia in self.model.inertias))

    def inertial_parameters(self) -> FloatArray:
        """Inertial parameters of all bodies, shape (10 (n + 1),), base first."""
        base = self.model.inertias[self.model.getJointId(ROOT_JOINT)].toDynamicParameters()
        return np.concatenate([base, self.robot.inertial_parameters()])

    def inertial_parameter_names(self) -> tuple[str, ...]:
        """Names ``<body>.<param>`` of `inertial_parameters`."""
        return tuple(f"{body}.{p}" for body in self.body_names for p in INERTIAL_NAMES)

    def with_inertial_parameters(self, theta: ArrayLike) -> FloatingBaseModel:
        """A copy whose bodies carry ``theta`` (10 (n + 1),).

        Raises:
            ModelError: a body's mass is not positive.
        """
        theta = np.asarray(theta, dtype=float)
        if theta.shape != (10 * (self.n + 1),):
            raise ConfigError(f"inertial parameters have shape {theta.shape}: expected ({10 * (self.n + 1)},)")
        if not theta[0] > 0.0:
            raise ModelError(f"base link {self.base_link!r}: mass {theta[0]!r} is not positive")
        robot = self.robot.with_inertial_parameters(theta[10:])
        robot.model.inertias[robot.model.getJointId(ROOT_JOINT)] = pin.Inertia.FromDynamicParameters(theta[:10])
        return FloatingBaseModel(robot=robot, base_link=self.base_link, contact_frames=self.contact_frames)

    def configuration(self, base_position: ArrayLike, base_quaternion: ArrayLike, q: ArrayLike) -> FloatArray:
        """Pinocchio configurations (N, 7 + n) of base poses and joint positions.

        Args:
            base_position: base origin in the world, shape (N, 3) [m].
            base_quaternion: base orientation [qx, qy, qz, qw] (world <- base), shape (N, 4).
            q: joint positions in ``robot.joint_names`` order, shape (N, n) [rad].
        """
        p, quat, q = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (base_position, base_quaternion, q))
        N = q.shape[0]
        if p.shape != (N, 3) or quat.shape != (N, 4) or q.shape != (N, self.n):
            raise DataError(
                f"base position {p.shape}, quaternion {quat.shape}, q {q.shape}: expected (N, 3/4/{self.n})"
            )
        out = np.zeros((N, self.model.nq))
        out[:, :3] = p
        out[:, 3:7] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
        out[:, self.robot.q_index] = q
        return out

    def velocity(self, base_twist: ArrayLike, qd: ArrayLike) -> FloatArray:
        """Pinocchio velocities or accelerations (N, 6 + n): base twists [v; omega] (N, 6), joint rates (N, n)."""
        twist, qd = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (base_twist, qd))
        if twist.shape != (qd.shape[0], 6) or qd.shape[1] != self.n:
            raise DataError(f"base twist {twist.shape}, joint rates {qd.shape}: expected (N, 6) and (N, {self.n})")
        out = np.zeros((qd.shape[0], self.nv))
        out[:, :6] = twist
        out[:, self.robot.v_index] = qd
        return out

    def random_states(self, rng: np.random.Generator, count: int) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Random (Q, V, A) in pinocchio order for identifiability studies: any base orientation,
        joints uniform within their limits, standard normal velocities and accelerations."""
        lower = self.model.lowerPositionLimit[self.robot.q_index]
        upper = self.model.upperPositionLimit[self.robot.q_index]
        wide = ~np.isfinite(lower) | ~np.isfinite(upper) | (upper <= lower) | (upper - lower > 2 * np.pi)
        q = rng.uniform(np.where(wide, -np.pi, lower), np.where(wide, np.pi, upper), size=(count, self.n))
        quat = rng.standard_normal((count, 4))
        Q = self.configuration(rng.standard_normal((count, 3)), quat, q)
        return Q, rng.standard_normal((count, self.nv)), rng.standard_normal((count, self.nv))


def load_floating_base_model(
    urdf: str | Path,
    *,
    joint_names: Sequence[str] | None = None,
    contact_frames: Sequence[str] = (),
    gravity: ArrayLike = (0.0, 0.0, -9.81),
) -> FloatingBaseModel:
    """A `FloatingBaseModel` of a URDF: its root link on a free-flyer joint.

    Args:
        urdf: URDF path or XML.
        joint_names: actuated joints in the order of every array; all movable joints when None
            (the others are locked at their neutral position).
        contact_frames: frames where contact wrenches are measured.
        gravity: in the world frame [m/s^2].

    Raises:
        ModelError, ConfigError: as `load_robot_model`; a contact frame is not in the URDF.
    """
    robot = load_robot_model(urdf, joint_names=joint_names, gravity=gravity, floating_base=True)
    model = robot.model
    root = model.getJointId(ROOT_JOINT)
    bodies = [f.name for f in model.frames if f.parentJoint == root and f.type == pin.FrameType.BODY]
    missing = [f for f in contact_frames if not model.existFrame(f)]
    if missing:
        raise ConfigError(f"contact frames {missing} are not frames of the URDF")
    return FloatingBaseModel(
        robot=robot, base_link=bodies[0] if bodies else ROOT_JOINT, contact_frames=tuple(contact_frames)
    )


class FloatingBaseRegressor:
    """Regressor of the floating-base equations and the generalized forces of measured wrenches.

    State: pinocchio workspaces and the row / column maps. Rows: the 6 base rows (`BASE_ROWS`),
    then the n joint rows in ``robot.joint_names`` order. Columns: `FloatingBaseModel.body_names`,
    10 each.
    """

    def __init__(self, floating: FloatingBaseModel) -> None:
        self.floating = floating
        model = floating.model.copy()
        model.armature[:] = 0.0  # rigid body only: rotor inertia and friction act on the joint rows alone
        self._model = model
        self._data = model.createData()
        order = [ROOT_JOINT, *floating.robot.joint_names]
        self._columns = np.concatenate(
            [np.arange(10 * (model.getJointId(name) - 1), 10 * model.getJointId(name)) for name in order]
        )
        self._rows = np.concatenate([np.arange(6), floating.robot.v_index]).astype(np.int64)
        self._identity = bool(
            np.array_equal(self._columns, np.arange(self._columns.size))
            and np.array_equal(self._rows, np.arange(floating.nv))
        )
        self._frames = [model.getFrameId(name) for name in floating.contact_frames]
        self.names = floating.inertial_parameter_names()
        self.row_names = (*BASE_ROWS, *floating.robot.joint_names)

    @property
    def n_parameters(self) -> int:
        """Columns p = 10 (n + 1)."""
        return len(self.names)

    def rows(
        self, Q: ArrayLike, V: ArrayLike, A: ArrayLike, *, count: int | None = None, out: FloatArray | None = None
    ) -> FloatArray:
        """Regressor of N samples, shape (N, count, p): the first ``count`` rows (all 6 + n when
        None; 6 = the base rows alone).

        Only the rows asked for are copied out of pinocchio's regressor, straight into the batch
        (pinocchio computes them all: the joint rows come out of the same backward pass).

        Args:
            Q: configurations (N, 7 + n) (`FloatingBaseModel.configuration`).
            V, A: velocities and accelerations (N, 6 + n) (`FloatingBaseModel.velocity`; the base
                acceleration is the derivative of the base-frame twist, pinocchio's convention).
            count: rows per sample, 1 <= count <= 6 + n.
            out: optional preallocated (N, count, p), filled in place and returned (a caller
                looping over chunks reuses one buffer instead of touching fresh memory each time).

        Raises:
            DataError: shapes disagree, or ``out`` has the wrong shape.
        """
        Q, V, A = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (Q, V, A))
        N = Q.shape[0]
        nv = self._model.nv
        if Q.shape[1] != self._model.nq or V.shape != (N, nv) or A.shape != V.shape:
            raise DataError(f"Q {Q.shape}, V {V.shape}, A {A.shape}: expected (N, {self._model.nq}), (N, {nv}) x2")
        count = nv if count is None else int(count)
        if not 1 <= count <= nv:
            raise DataError(f"count = {count}: expected 1 to {nv} rows")
        shape = (N, count, self.n_parameters)
        if out is None:
            out = np.empty(shape)
        elif out.shape != shape:
            raise DataError(f"out has shape {out.shape}: expected {shape}")
        model, data, regressor = self._model, self._data, pin.computeJointTorqueRegressor
        if self._identity and count == nv:
            for row, q, v, a in zip(out, Q, V, A):
                row[...] = regressor(model, data, q, v, a)
        elif self._identity:
            for row, q, v, a in zip(out, Q, V, A):
                row[...] = regressor(model, data, q, v, a)[:count]
        else:
            rows, columns = np.ix_(self._rows[:count], self._columns)
            for row, q, v, a in zip(out, Q, V, A):
                row[...] = regressor(model, data, q, v, a)[rows, columns]
        return out

    def contact_forces(self, Q: ArrayLike, wrenches: ArrayLike) -> FloatArray:
        """Generalized forces sum_c J_c^T w_c of measured wrenches, shape (N, 6 + n), our row order.

        Args:
            Q: configurations (N, 7 + n).
            wrenches: (N, c, 6) wrench [f; tau] applied to the robot at each contact frame,
                expressed in that frame [N, N m], frames in ``contact_frames`` order.
        """
        Q = np.atleast_2d(np.asarray(Q, dtype=float))
        W = np.asarray(wrenches, dtype=float).reshape(Q.shape[0], len(self._frames), 6)
        out = np.zeros((Q.shape[0], self._model.nv))
        model, data = self._model, self._data
        for k in range(Q.shape[0]):
            pin.computeJointJacobians(model, data, Q[k])
            pin.updateFramePlacements(model, data)
            for c, frame in enumerate(self._frames):
                J = pin.getFrameJacobian(model, data, frame, pin.LOCAL)
                out[k] += J.T @ W[k, c]
        return out[:, self._rows]

    def frame_placements(self, q: ArrayLike, frames: Sequence[str]) -> list[pin.SE3]:
        """Placements (world <- frame) of ``frames`` at one configuration q (7 + n,)."""
        pin.framesForwardKinematics(self._model, self._data, np.asarray(q, dtype=float))
        return [self._data.oMf[self._model.getFrameId(name)].copy() for name in frames]
