"""A humanoid standing on two feet, computed by pinocchio alone: the soles fixed exactly, no simulator.

A plant that shares no code with the estimator (nothing of `motor_ident.core.floating_base`,
`motor_ident.core.estimation` or the regressor is imported), for checking that identification
recovers what it is given on a second, independent plant (`HumanoidSimConfig.plant` ``rigid``).
No dynamics are integrated: the motion is prescribed and the forces follow from it.

- **The robot.** The robot config's URDF with its link masses perturbed as the MuJoCo plant
  perturbs them (`motor_ident.sim.humanoid_common.perturbed_urdf`, the same ``mass_seed`` the
  same robot), the root link on a free-flyer, joints off ``config.joints`` locked at 0.
- **The motion.** The standing posture with the soles flat on the ground; the whole-body CoM
  sways ``sway`` around the middle of the soles while the pelvis bobs ``bob`` and tilts
  ``tilt`` (roll, pitch, yaw), the torso, arms and head swing by sums of sines within their
  limits (``swing``), all ramped in over the first second (as `motor_ident.sim.humanoid`). The
  pelvis position that puts the CoM on its target is solved every ``GRID_S`` and the base pose
  and the swinging joints are cubic splines through those samples: C2 in time, differentiated
  exactly.
- **The legs** follow from the feet-fixed constraint: positions by Newton's method on both soles'
  poses (warm-started from the previous sample), velocities from J_foot nu = 0 and accelerations
  from J_foot nu_dot + dJ_foot nu = 0, solved for the leg joints (no finite differences).
- **The forces.** The generalized forces are pinocchio's ``rnea`` on the perturbed model. The
  ground's wrench at the soles is any that satisfies the base's six equations; the one taken
  shares the weight between the feet by the CoM's position between the soles (as a robot
  standing still would) and is otherwise the smallest in tangential force and sole moment (the
  weights of the MuJoCo plant's force loop). Each foot's wrench is expressed in its F/T sensor
  frame; joint torques tau = rnea - J^T w.
- **The sensors** read the true motion: the IMU frame's orientation, angular velocity and proper
  acceleration, with the noise and biases of `HumanoidSimConfig`
  (`motor_ident.sim.humanoid_common.noisy_record`).

Double support only (``single_support_phases`` must be 0). What it does not have: joint servos
and their tracking errors, the welds' compliance, contact (the wrench split is chosen, not
simulated: only the total contact wrench is physics; `friction_check` tells whether real feet
would hold the chosen split).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from numpy.typing import NDArray
from scipy.interpolate import CubicSpline

from motor_ident.errors import ConfigError, EstimationError, ModelError
from motor_ident.io.robot_config import RobotConfig
from motor_ident.sim.humanoid_common import (
    HumanoidRun,
    HumanoidSimConfig,
    balancing_excitation,
    perturbed_urdf,
    signal_buffers,
    standing_run,
)

FloatArray = NDArray[np.float64]

GRID_S = 0.01
"""Spacing of the planned pelvis and joint samples the splines pass through [s]."""

ROOT_JOINT = "root_joint"
"""Pinocchio's name of the free-flyer joint."""

_IK_TOLERANCE = 1e-10
"""Largest sole pose error the leg inverse kinematics leaves [m, rad]."""

_COM_TOLERANCE = 1e-10
"""Largest distance of the planned CoM from its target at a grid sample [m] (its jitter between samples
would be accelerations: 1e-10 m over 10 ms is 1e-6 m/s^2)."""


@dataclass(frozen=True, eq=False)
class RigidHumanoid:
    """The true (perturbed) robot on a free-flyer and where its joints sit in pinocchio's vectors.

    Attributes:
        model: pinocchio model, free-flyer first, the config's joints only.
        q_index, v_index: each config joint's index in q and in nu (n,).
        legs: positions in ``config.joints`` of the joints between the base and a sole.
        theta: inertial parameters, the base link first, then each joint's link (10 (n + 1),).
    """

    model: pin.Model
    q_index: NDArray[np.int64]
    v_index: NDArray[np.int64]
    legs: NDArray[np.int64]
    theta: FloatArray


def rigid_humanoid_model(config: RobotConfig, sim: HumanoidSimConfig) -> RigidHumanoid:
    """The true robot of the run (module docstring).

    Raises:
        ConfigError: no ``floating_base`` section, a joint or a frame not in the URDF.
        ModelError: pinocchio cannot read the URDF, or a joint has more than one coordinate.
    """
    fb = config.floating_base
    if fb is None:
        raise ConfigError(f"robot {config.name!r} has no floating_base section")
    try:
        full = pin.buildModelFromXML(perturbed_urdf(config, sim), pin.JointModelFreeFlyer())
    except (RuntimeError, ValueError) as exc:
        raise ModelError(f"pinocchio cannot read the URDF {config.urdf}: {exc}") from exc
    movable = [full.names[j] for j in range(2, full.njoints)]
    missing = [j for j in config.joints if j not in movable]
    if missing:
        raise ConfigError(f"joints {missing} of robot config {config.name!r} are not in the URDF {config.urdf}")
    lock = [full.getJointId(name) for name in movable if name not in config.joints]
    model = pin.buildReducedModel(full, lock, pin.neutral(full)) if lock else full
    model.gravity.linear = np.asarray(config.gravity, dtype=float)
    for frame in (fb.imu_frame, *fb.sensor_frames, *fb.sole_frames):
        if not model.existFrame(frame):
            raise ConfigError(f"frame {frame!r} of robot.floating_base is not in the URDF {config.urdf}")
    ids = [model.getJointId(name) for name in config.joints]
    if any(model.joints[j].nq != 1 or model.joints[j].nv != 1 for j in ids):
        raise ModelError("the rigid plant takes joints of one coordinate (revolute or prismatic) only")
    legs: set[int] = set()
    for frame in fb.sole_frames:
        joint = model.frames[model.getFrameId(frame)].parentJoint
        while joint > 1:  # up to the free-flyer
            legs.add(joint)
            joint = model.parents[joint]
    theta = np.concatenate([model.inertias[j].toDynamicParameters() for j in (model.getJointId(ROOT_JOINT), *ids)])
    return RigidHumanoid(
        model=model,
        q_index=np.array([model.joints[j].idx_q for j in ids]),
        v_index=np.array([model.joints[j].idx_v for j in ids]),
        legs=np.array([k for k, j in enumerate(ids) if j in legs], dtype=np.int64),
        theta=theta,
    )


class _Stance:
    """Both soles fixed at their standing poses: the legs' joints from the rest of the state.

    State: pinocchio's workspace and the last leg solution (the next one's start).
    """

    def __init__(self, robot: RigidHumanoid, sole_frames: tuple[str, ...], soles: list[pin.SE3]) -> None:
        self.robot, self.model = robot, robot.model
        self.data = robot.model.createData()
        self.frames = [robot.model.getFrameId(f) for f in sole_frames]
        self.soles = soles
        self.leg_q = robot.q_index[robot.legs]
        self.leg_v = robot.v_index[robot.legs]
        self.upper = np.setdiff1d(np.arange(robot.q_index.size), robot.legs)
        """Positions in ``config.joints`` of the joints off the legs (prescribed)."""

    def moved(self, q: FloatArray, base: pin.SE3, q_joints: FloatArray) -> FloatArray:
        """q with the base at ``base`` and the joints off the legs at ``q_joints`` (n,); legs unchanged."""
        q = q.copy()
        q[:3] = base.translation
        q[3:7] = pin.Quaternion(base.rotation).coeffs()
        q[self.robot.q_index[self.upper]] = q_joints[self.upper]
        return q

    def configuration(self, base: pin.SE3, q_joints: FloatArray) -> FloatArray:
        """Pinocchio q (nq,) of a base pose and the config joints' positions (n,)."""
        q = pin.neutral(self.model)
        q[:3] = base.translation
        q[3:7] = pin.Quaternion(base.rotation).coeffs()
        q[self.robot.q_index] = q_joints
        return q

    def jacobian(self, q: FloatArray) -> FloatArray:
        """The soles' stacked LOCAL frame Jacobians (6 c, nv) at q (computes the joint Jacobians)."""
        pin.computeJointJacobians(self.model, self.data, q)
        pin.updateFramePlacements(self.model, self.data)
        return np.vstack([pin.getFrameJacobian(self.model, self.data, f, pin.LOCAL) for f in self.frames])

    def positions(self, q: FloatArray) -> FloatArray:
        """q with the leg joints moved so that every sole is at its pose (Newton, from q's legs).

        Raises:
            EstimationError: the legs cannot put the soles there (out of reach, or too few leg joints).
        """
        q = q.copy()
        for _ in range(50):
            J = self.jacobian(q)
            error = np.concatenate(
                [pin.log6(target.actInv(self.data.oMf[f])).vector for f, target in zip(self.frames, self.soles)]
            )
            if np.max(np.abs(error)) < _IK_TOLERANCE:
                return q
            q[self.leg_q] -= np.linalg.lstsq(J[:, self.leg_v], error, rcond=None)[0]
        raise EstimationError(
            f"the legs cannot keep the soles on the ground (pose error {np.max(np.abs(error)):.2g}): "
            "lower sway, bob or tilt, or give every leg six joints"
        )

    def leg_rates(self, J: FloatArray, nu: FloatArray, bias: FloatArray | None = None) -> FloatArray:
        """nu with the leg entries solving J nu + bias = 0 (bias: dJ nu for accelerations; 0 for velocities)."""
        nu = nu.copy()
        nu[self.leg_v] = 0.0
        rhs = J @ nu + (0.0 if bias is None else bias)
        nu[self.leg_v] = -np.linalg.lstsq(J[:, self.leg_v], rhs, rcond=None)[0]
        return nu


def _standing_base(stance: _Stance, posture: FloatArray) -> tuple[pin.SE3, list[pin.SE3]]:
    """Base pose with the first sole flat and the soles' centre at the origin, and each sole's pose there."""
    model, data = stance.model, stance.data
    pin.framesForwardKinematics(model, data, stance.configuration(pin.SE3.Identity(), posture))
    z_first = data.oMf[stance.frames[0]].rotation[:, 2]
    R_fix = pin.Quaternion.FromTwoVectors(z_first, np.array([0.0, 0.0, 1.0])).toRotationMatrix()
    centre = np.mean([R_fix @ data.oMf[f].translation for f in stance.frames], axis=0)
    base = pin.SE3(R_fix, -centre)
    pin.framesForwardKinematics(model, data, stance.configuration(base, posture))
    return base, [data.oMf[f].copy() for f in stance.frames]


def _plan(stance: _Stance, sim: HumanoidSimConfig, base0: pin.SE3, posture: FloatArray) -> CubicSpline:
    """Spline of time -> [base offset xyz, roll, pitch, yaw, every config joint] (6 + n,).

    The base offset's x, y put the CoM on its target at every grid sample (fixed-point steps
    to `_COM_TOLERANCE`, legs by `_Stance.positions`); the legs' columns are the solved positions, which the
    samples solve again exactly.
    """
    robot, model = stance.robot, stance.model
    lower = model.lowerPositionLimit[robot.q_index]
    upper = model.upperPositionLimit[robot.q_index]
    t, axes, joints = balancing_excitation(sim, posture, lower, upper, stance.upper, GRID_S)
    middle = np.mean([sole.translation[:2] for sole in stance.soles], axis=0)
    offset = np.zeros((t.size, 3))
    correction = np.zeros(2)
    q = stance.configuration(base0, posture)
    for k in range(t.size):
        for _ in range(30):  # a fixed point: about half the CoM's error left per step
            base = _base_pose(base0, np.array([*correction, axes[k, 2]]), axes[k, 3:])
            q = stance.positions(stance.moved(q, base, joints[k]))
            error = middle + axes[k, :2] - pin.centerOfMass(model, stance.data, q)[:2]
            correction += error
            if np.max(np.abs(error)) < _COM_TOLERANCE:
                break
        offset[k] = [*correction, axes[k, 2]]
        joints[k, robot.legs] = q[robot.q_index[robot.legs]]
    return CubicSpline(t, np.hstack([offset, axes[:, 3:], joints]), axis=0)


def _base_pose(base0: pin.SE3, offset: FloatArray, rpy: FloatArray) -> pin.SE3:
    """The standing base pose moved by ``offset`` (world, [m]) and turned by roll, pitch, yaw in its own axes."""
    return pin.SE3(base0.rotation @ pin.rpy.rpyToMatrix(*rpy), base0.translation + offset)


def _weight_split(com: FloatArray, soles: list[pin.SE3]) -> FloatArray:
    """Share of the weight per foot (c,): by the CoM's position along the line between two soles (one foot: 1)."""
    if len(soles) != 2:
        return np.full(len(soles), 1.0 / len(soles))
    a, b = soles[0].translation[:2], soles[1].translation[:2]
    along = float(np.clip((com[:2] - a) @ (b - a) / ((b - a) @ (b - a)), 0.0, 1.0))
    return np.array([1.0 - along, along])


def simulate_rigid_humanoid(config: RobotConfig, sim: HumanoidSimConfig) -> HumanoidRun:
    """The standing humanoid's motion, wrenches and sensors, computed by pinocchio alone (module docstring).

    Raises:
        ConfigError: no ``floating_base`` section, or bad frames.
        ModelError: the URDF cannot be read; EstimationError: the soles are out of the legs' reach.
    """
    fb = config.floating_base
    if fb is None:
        raise ConfigError(f"robot {config.name!r} has no floating_base section")
    robot = rigid_humanoid_model(config, sim)
    model = robot.model
    posture = np.asarray(fb.posture(config.joints), dtype=float)
    stance = _Stance(robot, fb.sole_frames, [])
    base0, stance.soles = _standing_base(stance, posture)
    plan = _plan(stance, sim, base0, posture)
    data = model.createData()
    sensors = [model.getFrameId(f) for f in fb.sensor_frames]
    sole_in_sensor = [
        model.frames[s].placement.actInv(model.frames[model.getFrameId(f)].placement)
        for s, f in zip(sensors, fb.sole_frames)
    ]
    imu = model.getFrameId(fb.imu_frame)
    gravity = np.asarray(config.gravity, dtype=float)
    foot = np.array(fb.foot_size or (0.1, 0.05))
    mu = fb.friction_coefficient
    scale = np.tile([mu, mu, 10.0, 0.5 * foot[1], 0.5 * foot[0], 0.02], len(sensors))
    spread = np.diag(scale**2)  # the inverse of the wrench split's weights (module docstring)
    N, n, c = int(round(sim.duration * sim.rate_hz)), len(config.joints), len(sensors)
    t = np.arange(N, dtype=float) / sim.rate_hz
    out = signal_buffers(N, n, c)
    values, rates, accelerations = plan(t), plan(t, 1), plan(t, 2)
    q = stance.configuration(base0, posture)
    for k in range(N):
        s, ds, dds = values[k], rates[k], accelerations[k]
        base = _base_pose(base0, s[:3], s[3:6])
        q = stance.positions(stance.moved(q, base, s[6:]))
        R = base.rotation
        J_rpy = pin.rpy.computeRpyJacobian(s[3:6], pin.LOCAL)
        omega = J_rpy @ ds[3:6]
        v_base = R.T @ ds[:3]
        nu, nu_dot = np.zeros(model.nv), np.zeros(model.nv)
        nu[:6] = [*v_base, *omega]
        nu_dot[:3] = R.T @ dds[:3] - np.cross(omega, v_base)
        nu_dot[3:6] = J_rpy @ dds[3:6] + pin.rpy.computeRpyJacobianTimeDerivative(s[3:6], ds[3:6], pin.LOCAL) @ ds[3:6]
        nu[robot.v_index], nu_dot[robot.v_index] = ds[6:], dds[6:]
        J = stance.jacobian(q)
        nu = stance.leg_rates(J, nu)
        pin.forwardKinematics(model, stance.data, q, nu, np.zeros(model.nv))
        drift = np.concatenate(
            [pin.getFrameAcceleration(model, stance.data, f, pin.LOCAL).vector for f in stance.frames]
        )
        nu_dot = stance.leg_rates(J, nu_dot, drift)
        generalized = pin.rnea(model, data, q, nu, nu_dot)
        share = _weight_split(pin.centerOfMass(model, data, q), stance.soles)
        # the base's 6 equations and the weight's split between the feet (sole frames: z is up)
        A = np.vstack([J[:, :6].T, np.zeros((c - 1, 6 * c))])
        for i in range(1, c):
            A[5 + i, 2] = share[i]
            A[5 + i, 6 * i + 2] = -share[0]
        b = np.concatenate([generalized[:6], np.zeros(c - 1)])
        sole_wrench = spread @ A.T @ np.linalg.solve(A @ spread @ A.T, b)
        out["sole_wrench"][k] = sole_wrench.reshape(c, 6)
        for i in range(c):
            out["wrench"][k, i] = sole_in_sensor[i].act(pin.Force(sole_wrench[6 * i : 6 * i + 6])).vector
        out["tau"][k] = (generalized - J.T @ sole_wrench)[robot.v_index]
        out["q"][k] = q[robot.q_index]
        pin.forwardKinematics(model, data, q, nu, nu_dot)
        pin.updateFramePlacements(model, data)
        R_imu = data.oMf[imu].rotation
        out["quat"][k] = pin.Quaternion(R_imu).coeffs()
        out["gyro"][k] = pin.getFrameVelocity(model, data, imu, pin.LOCAL).angular
        out["acc"][k] = pin.getFrameClassicalAcceleration(model, data, imu, pin.LOCAL).linear - R_imu.T @ gravity
        out["base_p"][k] = q[:3]
        out["base_q"][k] = q[3:7]
    contact = np.ones((N, c), dtype=bool)
    return standing_run(config, sim, t, out, contact, robot.theta)
