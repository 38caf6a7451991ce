"""Joint-torque regressors: rigid body (pinocchio), reflected rotor inertia and friction.

The full parameter vector of a robot with n joints is laid out as

    theta = [inertial (10 n) | reflected rotor inertia rho^2 I_m (n, optional) | friction of joint 1 | ...
             | coupled motors' rotor inertia and friction (optional)]

(the last block: `motor_ident.core.actuators.transmission.CoupledMotorDrives`, each coupled motor's
terms on its own motion) and ``tau_joint = Y(q, qd, qdd) @ theta`` with `Regressor.rows` giving Y for a
batch of samples.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.actuators.friction import FrictionShape, friction_regressor
from motor_ident.core.actuators.transmission import CoupledMotorDrives
from motor_ident.core.rigid_body.model import RobotModel
from motor_ident.errors import ConfigError, DataError

FloatArray = NDArray[np.float64]


def _body_columns(robot: RobotModel) -> NDArray[np.int64]:
    """Columns of pinocchio's regressor, reordered to our joint order (10 per body)."""
    cols: list[int] = []
    for name in robot.joint_names:
        jid = int(robot.model.getJointId(name))
        cols.extend(range(10 * (jid - 1), 10 * jid))
    return np.asarray(cols, dtype=np.int64)


def rigid_body_regressor(robot: RobotModel, data: pin.Data, q: ArrayLike, v: ArrayLike, a: ArrayLike) -> FloatArray:
    """Rigid-body joint-torque regressor of one sample, shape (n, 10 n), from pinocchio.

    ``rigid_body_regressor(...) @ robot.inertial_parameters()`` equals RNEA without the reflected
    rotor inertia. Rows and body blocks follow ``robot.joint_names``.
    """
    Y = pin.computeJointTorqueRegressor(robot.model, data, robot.pin_q(q), robot.pin_v(v), robot.pin_v(a))
    rows: FloatArray = Y[np.ix_(robot.v_index, _body_columns(robot))]
    return rows


def unit_parameter_regressor(robot: RobotModel, q: ArrayLike, v: ArrayLike, a: ArrayLike) -> FloatArray:
    """Rigid-body regressor built as Kolathaya et al. 2016 Algorithm 1: inverse dynamics, one unit parameter at a time.

    Inverse dynamics is linear in the inertial parameters, so column k is the torque produced by
    the unit parameter e_k alone. Pinocchio cannot hold a body of zero mass, so each column is
    taken as ``rnea(theta_0 + e_k) - rnea(theta_0)`` around the robot's own (valid) parameters,
    which is the same column by linearity. It costs 10 n + 1 RNEA calls: a slow, obvious
    reference for `rigid_body_regressor`. Returns shape (n, 10 n).
    """
    model = robot.model.copy()
    model.armature[:] = 0.0
    data = model.createData()
    qp, vp, ap = robot.pin_q(q), robot.pin_v(v), robot.pin_v(a)
    theta0 = robot.inertial_parameters()
    ids = [int(model.getJointId(name)) for name in robot.joint_names]
    base = pin.rnea(model, data, qp, vp, ap)[robot.v_index].copy()
    Y = np.empty((robot.n, 10 * robot.n))
    for body, jid in enumerate(ids):
        original = model.inertias[jid].copy()
        for j in range(10):
            col = 10 * body + j
            unit = theta0[10 * body : 10 * body + 10].copy()
            unit[j] += 1.0
            model.inertias[jid] = pin.Inertia.FromDynamicParameters(unit)
            Y[:, col] = pin.rnea(model, data, qp, vp, ap)[robot.v_index] - base
        model.inertias[jid] = original
    return Y


@dataclass(frozen=True)
class ParameterLayout:
    """Where each group of parameters sits in the full vector theta.

    Attributes:
        names: one name per parameter, e.g. ``link2.mx``, ``elbow.Ia``, ``elbow.fc``.
        inertial: slice of the 10 n inertial parameters.
        reflected_inertia: slice of the n reflected rotor inertias rho^2 I_m [kg m^2] (empty
            when the regressor leaves them out).
        friction: one slice per joint, into theta, of that joint's friction parameters.
        motor_inertia: slice of the coupled motors' reflected rotor inertias (empty without them).
        motor_friction: one slice per coupled motor of its friction parameters.
    """

    names: tuple[str, ...]
    inertial: slice
    reflected_inertia: slice
    friction: tuple[slice, ...]
    motor_inertia: slice = field(default_factory=lambda: slice(0, 0))
    motor_friction: tuple[slice, ...] = ()

    @property
    def motor_block(self) -> slice:
        """Slice of every coupled-motor parameter (inertias and friction; empty without them)."""
        stop = self.motor_friction[-1].stop if self.motor_friction else self.motor_inertia.stop
        return slice(self.motor_inertia.start, stop)

    @property
    def n_parameters(self) -> int:
        """Length of theta."""
        return len(self.names)

    def index(self, name: str) -> int:
        """Position of the parameter called ``name`` in theta."""
        try:
            return self.names.index(name)
        except ValueError:
            raise ConfigError(f"unknown parameter {name!r}") from None


def robot_batch_to_pin(
    robot: RobotModel, q: FloatArray, v: FloatArray, a: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Batches (N, n) in our joint order -> pinocchio's q (N, nq), v and a (N, nv), vectorised."""
    N = q.shape[0]
    qp = np.zeros((N, robot.model.nq))
    plain = ~robot.continuous
    qp[:, robot.q_index[plain]] = q[:, plain]
    if robot.continuous.any():
        qp[:, robot.q_index[robot.continuous]] = np.cos(q[:, robot.continuous])
        qp[:, robot.q_index[robot.continuous] + 1] = np.sin(q[:, robot.continuous])
    vp = np.empty((N, robot.model.nv))
    ap = np.empty((N, robot.model.nv))
    vp[:, robot.v_index] = v
    ap[:, robot.v_index] = a
    return qp, vp, ap


class Regressor:
    """Full joint-torque regressor of a robot: rigid body + reflected inertia + friction.

    Holds its own pinocchio workspace; one instance per thread.
    """

    def __init__(
        self,
        robot: RobotModel,
        friction: Sequence[FrictionShape],
        *,
        reflected_inertia: bool = True,
        motor_drives: CoupledMotorDrives | None = None,
    ) -> None:
        """Build the regressor.

        Args:
            robot: the rigid-body model.
            friction: one friction shape per joint, in ``robot.joint_names`` order.
            reflected_inertia: include one rho^2 I_m column per joint. Leave it out only for
                robots without rotors (direct drive, or a textbook arm): then the robot's rotor
                inertias must be zero, since nothing else would account for their torque.
            motor_drives: the rotor inertia and friction of coupled motors, on each motor's own
                motion, appended after the joints' friction (none by default).
        """
        if len(friction) != robot.n:
            raise ConfigError(f"friction: {len(friction)} models for {robot.n} joints {list(robot.joint_names)}")
        if not reflected_inertia and np.any(robot.reflected_inertia != 0.0):
            raise ConfigError("reflected_inertia = false needs zero rotor inertia on every joint")
        self.robot = robot
        self.friction = tuple(friction)
        self._data = robot.create_data()
        self._columns = _body_columns(robot)
        n = robot.n
        n_reflected = n if reflected_inertia else 0
        names = robot.inertial_parameter_names() + [f"{j}.Ia" for j in robot.joint_names[:n_reflected]]
        slices = []
        start = 10 * n + n_reflected
        for joint, shape in zip(robot.joint_names, self.friction):
            slices.append(slice(start, start + shape.n_parameters))
            names += [f"{joint}.{p}" for p in shape.names]
            start += shape.n_parameters
        self.motor_drives = motor_drives
        motor_inertia, motor_friction = slice(start, start), []
        if motor_drives is not None and motor_drives.motors:
            if motor_drives.motor_from_joint.shape[1] != n:
                raise ConfigError(
                    f"coupled motor drives for {motor_drives.motor_from_joint.shape[1]} joints: expected {n}"
                )
            names += motor_drives.names
            motor_inertia = slice(start, start + motor_drives.n_inertia)
            start = motor_inertia.stop
            for shape in motor_drives.friction:
                motor_friction.append(slice(start, start + shape.n_parameters))
                start += shape.n_parameters
        self.layout = ParameterLayout(
            names=tuple(names),
            inertial=slice(0, 10 * n),
            reflected_inertia=slice(10 * n, 10 * n + n_reflected),
            friction=tuple(slices),
            motor_inertia=motor_inertia,
            motor_friction=tuple(motor_friction),
        )
        self._rigid_model = robot.model.copy()
        self._rigid_model.armature[:] = 0.0
        self._rows_idx, self._cols_idx = np.ix_(robot.v_index, self._columns)
        self._identity = bool(
            np.array_equal(robot.v_index, np.arange(n)) and np.array_equal(self._columns, np.arange(10 * n))
        )
        self._raw = np.zeros((0, robot.model.nv, 10 * (robot.model.njoints - 1)))
        # Our joint order is pinocchio's and every joint is 1-DoF: batches go to pinocchio as they are.
        self._pin_order = bool(
            robot.model.nq == robot.model.nv == n
            and not robot.continuous.any()
            and np.array_equal(robot.q_index, np.arange(n))
            and np.array_equal(robot.v_index, np.arange(n))
        )
        self._joint_range = np.arange(n)
        self._reflected_cols = 10 * n + self._joint_range
        # Joints sharing a friction shape are evaluated in one vectorised call.
        groups: dict[FrictionShape, list[int]] = {}
        for j, shape in enumerate(self.friction):
            if shape.n_parameters:
                groups.setdefault(shape, []).append(j)
        self._friction_groups = [
            (
                shape,
                np.asarray(joints),
                np.asarray(joints)[:, None],
                np.array([np.arange(slices[j].start, slices[j].stop) for j in joints]),
            )
            for shape, joints in groups.items()
        ]

    @property
    def n_parameters(self) -> int:
        """Length of theta."""
        return self.layout.n_parameters

    @property
    def has_reflected_inertia(self) -> bool:
        """True when theta holds one rho^2 I_m per joint."""
        return bool(self.layout.reflected_inertia.stop > self.layout.reflected_inertia.start)

    @property
    def names(self) -> tuple[str, ...]:
        """Parameter names, length `n_parameters`."""
        return self.layout.names

    def rows(self, q: ArrayLike, v: ArrayLike, a: ArrayLike, out: FloatArray | None = None) -> FloatArray:
        """Regressor of N samples, shape (N, n, p).

        Args:
            q, v, a: joint positions, velocities, accelerations, each shape (N, n) or (n,).
            out: optional preallocated output of shape (N, n, p), filled in place.

        Raises:
            DataError: the arrays have the wrong shape.
        """
        q, v, a = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (q, v, a))
        n = self.robot.n
        if q.shape != v.shape or q.shape != a.shape or q.shape[1] != n:
            raise DataError(f"q, v, a have shapes {q.shape}, {v.shape}, {a.shape}: expected (N, {n}) each")
        N = q.shape[0]
        Y = np.zeros((N, n, self.n_parameters)) if out is None else out
        if out is not None:
            Y.fill(0.0)
        if self._pin_order:
            qp, vp, ap = (np.ascontiguousarray(x) for x in (q, v, a))
        else:
            qp, vp, ap = robot_batch_to_pin(self.robot, q, v, a)
        model, data = self._rigid_model, self._data
        if self._identity:  # pinocchio's columns are ours: write straight into Y
            for k in range(N):
                Y[k, :, : 10 * n] = pin.computeJointTorqueRegressor(model, data, qp[k], vp[k], ap[k])
        else:
            raw = self._raw_buffer(N)
            for k in range(N):
                raw[k] = pin.computeJointTorqueRegressor(model, data, qp[k], vp[k], ap[k])
            Y[:, :, : 10 * n] = raw[:, self._rows_idx, self._cols_idx]
        if self.has_reflected_inertia:
            Y[:, self._joint_range, self._reflected_cols] = a
        for shape, joints, rows, cols in self._friction_groups:
            F = friction_regressor(v[:, joints].ravel(), shape)
            Y[:, rows, cols] = F.reshape(N, joints.size, -1)
        block = self.layout.motor_block
        if self.motor_drives is not None and block.stop > block.start:
            Y[:, :, block] = self.motor_drives.columns(v, a)
        return Y

    def _raw_buffer(self, N: int) -> FloatArray:
        if self._raw.shape[0] < N:
            self._raw = np.zeros((N, *self._raw.shape[1:]))
        return self._raw[:N]

    def friction_torque(self, v: ArrayLike, theta: ArrayLike) -> FloatArray:
        """Friction torque of every joint for the friction part of ``theta`` (the joints' own
        friction: coupled motors' friction depends on other joints' velocities too, `motor_torque`).

        Args:
            v: joint velocities, shape (n,) or (N, n) [rad/s].
            theta: full parameter vector (p,).

        Returns:
            Friction torques of the shape of ``v`` [N m].
        """
        v = np.asarray(v, dtype=float)
        flat = np.atleast_2d(v)
        theta = np.asarray(theta, dtype=float)
        out = np.zeros_like(flat)
        for shape, joints, _, cols in self._friction_groups:
            F = friction_regressor(flat[:, joints].ravel(), shape).reshape(flat.shape[0], joints.size, -1)
            out[:, joints] = np.einsum("nkm,km->nk", F, theta[cols])
        return out.reshape(v.shape)

    def motor_torque(self, v: ArrayLike, a: ArrayLike, theta: ArrayLike) -> FloatArray:
        """Joint torques of the coupled motors' rotor inertia and friction, shape (N, n) [N m] (zeros without them).

        Args:
            v, a: joint velocities and accelerations, shape (N, n) or (n,).
            theta: full parameter vector (p,).
        """
        v2 = np.atleast_2d(np.asarray(v, dtype=float))
        block = self.layout.motor_block
        if self.motor_drives is None or block.stop == block.start:
            return np.zeros_like(v2)
        return self.motor_drives.torque(v2, a, np.asarray(theta, dtype=float)[block])

    def predict(self, theta: ArrayLike, q: ArrayLike, v: ArrayLike, a: ArrayLike) -> FloatArray:
        """Joint torques ``Y @ theta`` for N samples, shape (N, n) [N m]."""
        tau: FloatArray = self.rows(q, v, a) @ np.asarray(theta, dtype=float)
        return tau

    def parameters(
        self,
        robot: RobotModel | None = None,
        friction: Sequence[ArrayLike] | None = None,
        motors: ArrayLike | None = None,
    ) -> FloatArray:
        """Full theta of a robot model (its inertias and rotor inertias) and friction values.

        Args:
            robot: the model to read the rigid-body parameters from (this regressor's by default).
            friction: one parameter array per joint (zeros when None).
            motors: the coupled motors' block (``layout.motor_block``; zeros when None).
        """
        robot = self.robot if robot is None else robot
        theta = np.zeros(self.n_parameters)
        theta[self.layout.inertial] = robot.inertial_parameters()
        if self.has_reflected_inertia:
            theta[self.layout.reflected_inertia] = robot.reflected_inertia
        if friction is not None:
            if len(friction) != robot.n:
                raise ConfigError(f"friction values for {len(friction)} joints: expected {robot.n}")
            for j, (values, cols) in enumerate(zip(friction, self.layout.friction)):
                arr = np.asarray(values, dtype=float)
                if arr.shape != (cols.stop - cols.start,):
                    raise ConfigError(
                        f"friction values of joint {self.robot.joint_names[j]!r} have shape {arr.shape}: "
                        f"expected ({cols.stop - cols.start},) for {self.friction[j].names}"
                    )
                theta[cols] = arr
        if motors is not None:
            block = self.layout.motor_block
            values = np.asarray(motors, dtype=float)
            if values.shape != (block.stop - block.start,):
                raise ConfigError(
                    f"coupled motor parameters have shape {values.shape}: expected ({block.stop - block.start},)"
                )
            theta[block] = values
        return theta
