"""Computed torque by pinocchio's RNEA on full parameters: the feedforward node's 1 kHz path.

`ComputedTorque` builds the torque as ``Y_base(q, qd, qdd) theta_base``: a full regressor row block
(n x p, pinocchio's ``computeJointTorqueRegressor`` plus the friction columns), then the base
projection, every cycle. The model the identifier hands over is physically consistent: its gate
projects every estimate onto valid bodies and publishes that full parameter set. Such a set is a
pinocchio model, so the same torque is one RNEA call (O(n)) on a model whose inertias and armature
hold the parameters, plus the friction torque of all joints sharing a friction shape in one
vectorised call: ``tau = RNEA(q, qd, qdd; theta) + tau_friction(qd; theta)``. Torque is linear in
theta, so this equals ``Y(q, qd, qdd) theta`` (the tests check it against the regressor path).

`ModelTorque` holds one parameter set; `RneaComputedTorque` is the control law with the model
switch: while a new model blends in, the torques of the old and new parameter sets at the same
state give both the switch's torque change (what `ModelBlend` bounds) and, by linearity, the torque
of the blended parameters ``(1 - s) tau_from + s tau_to``. The parameters are set on the pinocchio
models when a model arrives, never per cycle; work arrays are preallocated.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.actuators.friction import FrictionShape, joints_friction_torque
from motor_ident.core.control.computed_torque import (
    FeedforwardConfig,
    ModelBlend,
    ReferenceBuffer,
    commanded_acceleration,
    saturate,
)
from motor_ident.core.rigid_body.regressor import Regressor
from motor_ident.errors import ConfigError, ModelError

FloatArray = NDArray[np.float64]


class ModelTorque:
    """Joint torques of one full parameter set: RNEA (rigid body + reflected rotor inertia) + friction
    (+ the coupled motors' rotor inertia and friction, `Regressor.motor_torque`).

    Args:
        regressor: the robot's regressor; its layout says where each parameter sits in theta.
        theta: full parameters (p,) in ``regressor.names`` order; every body's mass > 0.
    """

    def __init__(self, regressor: Regressor, theta: ArrayLike) -> None:
        robot = regressor.robot
        self.regressor = regressor
        self._model = robot.model.copy()
        self._data = self._model.createData()
        self._joint_ids = [int(robot.model.getJointId(name)) for name in robot.joint_names]
        n = robot.n
        self._pin_order = bool(
            robot.model.nq == robot.model.nv == n
            and not robot.continuous.any()
            and np.array_equal(robot.q_index, np.arange(n))
            and np.array_equal(robot.v_index, np.arange(n))
        )
        self._qp = np.zeros(robot.model.nq)
        self._vp = np.zeros(robot.model.nv)
        self._ap = np.zeros(robot.model.nv)
        # joints sharing a friction shape: one joints_friction_torque call for all of them
        groups: dict[FrictionShape, list[int]] = {}
        for j, shape in enumerate(regressor.friction):
            if shape.n_parameters:
                groups.setdefault(shape, []).append(j)
        self._friction = [
            (
                shape,
                np.asarray(joints),
                np.array(
                    [np.arange(regressor.layout.friction[j].start, regressor.layout.friction[j].stop) for j in joints]
                ),
                np.zeros(len(joints)),
            )
            for shape, joints in groups.items()
        ]
        self._coefficients = [np.zeros(cols.shape) for _, _, cols, _ in self._friction]
        self.theta = np.zeros(regressor.n_parameters)
        self._motor_values = np.zeros(0)
        self.set_parameters(theta)

    def set_parameters(self, theta: ArrayLike) -> None:
        """Use the full parameters ``theta`` (p,) from now on.

        Raises:
            ModelError: wrong length, a non-finite value, or a body whose mass is not positive
                (pinocchio cannot hold it; a physically consistent model never has one).
        """
        theta = np.array(theta, dtype=float)
        regressor = self.regressor
        names = regressor.robot.body_names
        if theta.shape != (regressor.n_parameters,) or not np.all(np.isfinite(theta)):
            raise ModelError(
                f"model parameters have shape {theta.shape} or are not finite: expected "
                f"{regressor.n_parameters} finite full parameters in the order {regressor.names[0]}, ..."
            )
        inertial = theta[regressor.layout.inertial].reshape(-1, 10)
        for k in range(len(self._joint_ids)):
            if not inertial[k, 0] > 0.0:
                raise ModelError(
                    f"body {names[k]!r}: mass {inertial[k, 0]!r} is not positive: send the gate's physically "
                    "consistent parameters"
                )
        for k, jid in enumerate(self._joint_ids):
            self._model.inertias[jid] = pin.Inertia.FromDynamicParameters(inertial[k])
        v_index = regressor.robot.v_index
        self._model.armature[v_index] = (
            theta[regressor.layout.reflected_inertia] if regressor.has_reflected_inertia else 0.0
        )
        for coefficients, (_, _, cols, _) in zip(self._coefficients, self._friction):
            coefficients[:] = theta[cols]
        self._motor_values = theta[regressor.layout.motor_block].copy()
        self.theta = theta

    def _to_pin(self, q: FloatArray, qd: FloatArray, qdd: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        if self._pin_order:
            return q, qd, qdd
        robot = self.regressor.robot
        self._qp[:] = robot.pin_q(q)
        self._vp[robot.v_index] = qd
        self._ap[robot.v_index] = qdd
        return self._qp, self._vp, self._ap

    def torque(self, q: FloatArray, qd: FloatArray, qdd: FloatArray, out: FloatArray) -> FloatArray:
        """Joint torques at one state, written into ``out`` (n,) [N m]; friction included.

        Args:
            q, qd, qdd: joint positions, velocities, accelerations (n,) [rad, rad/s, rad/s^2], float64.
            out: preallocated result (n,).
        """
        qp, vp, ap = self._to_pin(q, qd, qdd)
        tau = pin.rnea(self._model, self._data, qp, vp, ap)
        if self._pin_order:
            out[:] = tau
        else:
            np.take(tau, self.regressor.robot.v_index, out=out)
        for (shape, joints, _, friction), coefficients in zip(self._friction, self._coefficients):
            if joints.size == out.size:  # every joint, in order (one shape for the robot): no gather
                out += joints_friction_torque(qd, shape, coefficients, friction)
            else:
                out[joints] += joints_friction_torque(qd[joints], shape, coefficients, friction)
        if self._motor_values.size:  # coupled motors: rotor inertia and friction on each motor's own motion
            drives = self.regressor.motor_drives
            assert drives is not None
            out += drives.torque(qd, qdd, self._motor_values)[0]
        return out

    def gravity(self, q: FloatArray, out: FloatArray) -> FloatArray:
        """Gravity torques at ``q`` (n,) [N m] into ``out``: no motion, no friction."""
        qp, _, _ = self._to_pin(q, q, q)
        g = pin.computeGeneralizedGravity(self._model, self._data, qp)
        if self._pin_order:
            out[:] = g
        else:
            np.take(g, self.regressor.robot.v_index, out=out)
        return out


class RneaComputedTorque:
    """Computed-torque law on full parameters by RNEA, with the model switch blended on the parameters.

    ``command`` is ``RNEA(q, qd, qdd_cmd; theta) + tau_friction(qd; theta)`` with
    ``qdd_cmd = qdd_ref + kd (qd_ref - qd) + kp (q_ref - q)`` (Kolathaya et al. 2016, eq. 109): the
    same torque as `ComputedTorque.command` with ``theta_base = P theta``.

    Args:
        regressor: the robot's regressor (layout of theta, friction shapes, pinocchio model).
        config: gains and limits (``config`` may be replaced while running).
        theta: full parameters in use at start (p,), e.g. the robot config's nominal model.
        blend_rate: bound on a model switch's share of |d tau / dt| [N m/s] (`ModelBlend`).
    """

    def __init__(self, regressor: Regressor, config: FeedforwardConfig, theta: ArrayLike, blend_rate: float) -> None:
        n = regressor.robot.n
        if config.kp.shape != (n,):
            raise ConfigError(f"feedforward gains are for {config.kp.size} joints: expected {n}")
        self.regressor, self.config = regressor, config
        self._to = ModelTorque(regressor, theta)
        self._from = ModelTorque(regressor, theta)
        self.blend = ModelBlend(self._to.theta, rate=blend_rate)
        self._qdd = np.zeros(n)
        self._tau = np.zeros(n)
        self._tau_from = np.zeros(n)
        self._change = np.zeros(n)

    @property
    def theta(self) -> FloatArray:
        """Full parameters in use (p,): the blended ones during a switch."""
        return self.blend.theta

    def set_target(self, theta: ArrayLike) -> None:
        """Switch to the full parameters ``theta`` (p,), blended from the ones in use.

        Raises:
            ModelError: ``theta`` is not a model pinocchio can hold (`ModelTorque.set_parameters`);
                the model in use is kept.
        """
        self._to.set_parameters(theta)  # validates first: a refused model changes nothing
        self._from.set_parameters(self.blend.theta)  # a convex combination of valid models is valid
        self.blend.set_target(self._to.theta)

    def torque(self, q: FloatArray, qd: FloatArray, qdd: FloatArray, dt: float) -> FloatArray:
        """Model torque (n,) [N m] at one state, advancing a model switch by ``dt`` [s] (0: not at all).

        The result is a work array of this object, overwritten by the next call.
        """
        if self.blend.progress >= 1.0:
            return self._to.torque(q, qd, qdd, self._tau)
        tau_from = self._from.torque(q, qd, qdd, self._tau_from)
        tau_to = self._to.torque(q, qd, qdd, self._tau)
        np.subtract(tau_to, tau_from, out=self._change)
        self.blend.advance(float(np.max(np.abs(self._change))), dt)
        s = self.blend.progress
        self._change *= s
        np.add(tau_from, self._change, out=self._tau)
        return self._tau

    def command(
        self, q: FloatArray, qd: FloatArray, q_ref: FloatArray, qd_ref: FloatArray, qdd_ref: FloatArray, dt: float
    ) -> FloatArray:
        """Unsaturated computed torque (n,) [N m] for the measured state and the reference; a work
        array, overwritten by the next call."""
        commanded_acceleration(self.config, q, qd, q_ref, qd_ref, qdd_ref, out=self._qdd)
        return self.torque(q, qd, self._qdd, dt)

    def gravity(self, q: FloatArray) -> FloatArray:
        """Gravity torque (n,) [N m] of the parameters in use at ``q`` (a switch does not advance)."""
        g = self._to.gravity(q, np.zeros_like(q))
        if self.blend.progress < 1.0:
            s = self.blend.progress
            g = s * g + (1.0 - s) * self._from.gravity(q, np.zeros_like(q))
        return g


def trajectory_points(
    law: RneaComputedTorque,
    reference: ReferenceBuffer,
    times: FloatArray,
    previous: FloatArray,
    dt: float,
) -> tuple[FloatArray, FloatArray]:
    """The reference and the model's saturated torque at ``times``: the points of a joint trajectory.

    The torque at each point is the model's at the reference state itself (no feedback terms: the
    trajectory controller's PID closes the loop). A model switch advances by ``dt`` [s] once, at
    the first point (the time since the previous trajectory); the torques go through `saturate`
    point to point, the first from ``previous`` (the previous trajectory's first torque).

    Args:
        law: the control law (its model, blend and limits).
        reference: the reference trajectory.
        times: absolute times of the points (K,) [s], increasing.
        previous: torque of the previous trajectory's first point (n,) [N m].
        dt: time since that point [s].

    Returns:
        (states, efforts): reference ``[q, qd, qdd]`` per point (K', 3, n) and torques (K', n)
        [N m], for the leading K' <= K points the reference covers (K' = 0: none).
    """
    n = previous.size
    states = np.zeros((times.size, 3, n))
    efforts = np.zeros((times.size, n))
    covered = 0
    last, step = previous, dt
    for k, t in enumerate(times):
        sample = reference.sample(float(t))
        if sample is None:
            break
        q, qd, qdd = sample
        states[k] = sample
        tau = law.torque(q, qd, qdd, dt if k == 0 else 0.0)
        last = efforts[k] = saturate(tau, last, law.config, step)
        step = float(times[k + 1] - t) if k + 1 < times.size else step
        covered = k + 1
    return states[:covered], efforts[:covered]
