"""Stance kinematics: the base pose from the feet on the ground, and leg inverse kinematics.

While a foot stands still on the ground, its sole pose in the world is fixed, so the base pose
follows from the joint encoders and the base orientation (IMU):

    p_WB = p_WS - R_WB p_BS(q)

averaged over the feet in stance (`base_positions`). Its time derivatives (zero-phase
differentiation, like the joints') give the base velocity and acceleration the regressor needs.
`stance_inverse_kinematics` is the reverse: joint positions that keep every sole at its pose
while the base follows a given trajectory (the balancing excitation of the simulated humanoid).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.floating_base.model import FloatingBaseModel
from motor_ident.errors import DataError, EstimationError

FloatArray = NDArray[np.float64]


def base_positions(
    floating: FloatingBaseModel,
    q: ArrayLike,
    base_quaternion: ArrayLike,
    sole_frames: Sequence[str],
    sole_positions: ArrayLike | None = None,
    *,
    contact: ArrayLike | None = None,
) -> FloatArray:
    """Base origin in the world (N, 3) [m] from joint positions and base orientations.

    Args:
        q: joint positions (N, n) [rad].
        base_quaternion: world <- base orientation [qx, qy, qz, qw] (N, 4).
        sole_frames: frames of the feet.
        sole_positions: their world positions while first on the ground (c, 3) [m]; by default
            placed so that the first sample's base is at the origin (only relative motion matters).
        contact: which feet stand on the ground per sample (N, c) (all, always, when None). A foot
            that lands is anchored where the feet already standing put it.

    Raises:
        DataError: a sample with no foot on the ground.
    """
    q = np.atleast_2d(np.asarray(q, dtype=float))
    quat = np.atleast_2d(np.asarray(base_quaternion, dtype=float))
    N = q.shape[0]
    model = floating.model
    data = model.createData()
    frames = [model.getFrameId(name) for name in sole_frames]
    on = np.ones((N, len(frames)), dtype=bool) if contact is None else np.asarray(contact, dtype=bool)
    if not np.all(on.any(axis=1)):
        raise DataError(f"no foot on the ground at sample {int(np.argmin(on.any(axis=1)))}: the base pose is unknown")
    Q = floating.configuration(np.zeros((N, 3)), quat, q)
    offsets = np.empty((N, len(frames), 3))  # R_WB p_BS: sole position relative to the base, world axes
    for k in range(N):
        pin.framesForwardKinematics(model, data, Q[k])
        for c, frame in enumerate(frames):
            offsets[k, c] = data.oMf[frame].translation
    anchors = np.full((len(frames), 3), np.nan)
    if sole_positions is not None:
        anchors[on[0]] = np.asarray(sole_positions, dtype=float)[on[0]]
    positions = np.empty((N, 3))
    previous = np.zeros(3)
    for k in range(N):
        known = on[k] & ~np.isnan(anchors[:, 0])
        positions[k] = (anchors[known] - offsets[k, known]).mean(axis=0) if known.any() else previous
        landed = on[k] & ~known
        anchors[landed] = positions[k] + offsets[k, landed]
        anchors[~on[k]] = np.nan
        previous = positions[k]
    return positions


def contact_from_wrenches(wrench: ArrayLike, fraction: float = 0.05) -> NDArray[np.bool_]:
    """Which feet are on the ground (N, c), as a robot tells: the force a foot's F/T sensor measures
    (N, c, 6) exceeds ``fraction`` of the median total force (the robot's weight when standing)."""
    force = np.linalg.norm(np.asarray(wrench, dtype=float)[..., :3], axis=-1)
    threshold = fraction * float(
        np.median(np.linalg.norm(np.asarray(wrench, dtype=float)[..., :3].sum(axis=1), axis=-1))
    )
    on: NDArray[np.bool_] = force > threshold
    return on


def spatial_base_motion(
    base_quaternion: ArrayLike, position_rates: tuple[ArrayLike, ArrayLike], omega: ArrayLike, omega_dot: ArrayLike
) -> tuple[FloatArray, FloatArray]:
    """Base twist and its derivative in pinocchio's free-flyer convention, each (N, 6).

    Args:
        base_quaternion: world <- base [qx, qy, qz, qw] (N, 4).
        position_rates: world velocity and acceleration of the base origin, (N, 3) each [m/s, m/s^2].
        omega, omega_dot: angular velocity and acceleration in the base frame (N, 3) [rad/s, rad/s^2].

    Returns:
        V_B = [R' p_dot; omega] and A_B = [R' p_ddot - omega x R' p_dot; omega_dot]: pinocchio's
        base acceleration is the derivative of the base-frame twist, not the classical acceleration.
    """
    quat = np.atleast_2d(np.asarray(base_quaternion, dtype=float))
    R = np.array([pin.Quaternion(np.asarray(x)).normalized().toRotationMatrix() for x in quat])
    p_dot, p_ddot = (np.asarray(x, dtype=float) for x in position_rates)
    omega, omega_dot = np.asarray(omega, dtype=float), np.asarray(omega_dot, dtype=float)
    v_local = np.einsum("nji,nj->ni", R, p_dot)
    a_local = np.einsum("nji,nj->ni", R, p_ddot) - np.cross(omega, v_local)
    return np.hstack([v_local, omega]), np.hstack([a_local, omega_dot])


def stance_inverse_kinematics(
    floating: FloatingBaseModel,
    base_poses: Sequence[pin.SE3],
    q_start: ArrayLike,
    soles: dict[str, pin.SE3],
    *,
    iterations: int = 20,
    tolerance: float = 1e-9,
) -> FloatArray:
    """Joint positions (N, n) keeping each sole at its world pose while the base moves.

    Damped Newton on the sole pose errors (pinocchio ``log6``) over the joints that move the
    soles, started from the previous sample's solution; the other joints keep ``q_start``.

    Raises:
        EstimationError: a pose is out of the legs' reach (no convergence).
    """
    model = floating.model
    data = model.createData()
    frames = [model.getFrameId(name) for name in soles]
    targets = list(soles.values())
    q = np.asarray(q_start, dtype=float).copy()
    _, movers = _legs(floating, frames)  # joints on the paths from the base to the soles
    cols = floating.robot.v_index[movers]
    out = np.empty((len(base_poses), floating.n))
    for k, pose in enumerate(base_poses):
        quat = pin.Quaternion(pose.rotation).coeffs()
        for _ in range(iterations):
            Q = floating.configuration(pose.translation, quat, q)[0]
            pin.computeJointJacobians(model, data, Q)
            pin.updateFramePlacements(model, data)
            errors, jacobians = [], []
            for frame, target in zip(frames, targets):
                errors.append(pin.log6(target.actInv(data.oMf[frame])).vector)
                jacobians.append(pin.getFrameJacobian(model, data, frame, pin.LOCAL)[:, cols])
            e, J = np.concatenate(errors), np.vstack(jacobians)
            if float(e @ e) < tolerance**2:
                break
            q[movers] -= np.linalg.solve(J.T @ J + 1e-8 * np.eye(J.shape[1]), J.T @ e)
        else:
            raise EstimationError(
                f"stance inverse kinematics: sample {k} did not converge (|error| {np.linalg.norm(e):.3g})"
            )
        out[k] = q
    return out


def stance_states(
    floating: FloatingBaseModel,
    sole_frames: Sequence[str],
    rng: np.random.Generator,
    count: int,
    *,
    standing: ArrayLike | None = None,
    spread: float = 0.15,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Random (Q, V, A) with every sole standing still: what double-support data can show.

    The soles stay at their poses in ``standing`` (a configuration (7 + n,), e.g. a record's first
    sample; the neutral one when None). Joints off the legs are uniform within their limits; the
    base pose is the standing one moved by up to ``spread`` (rad and 0.1 ``spread`` m, each axis),
    the legs follow by stance inverse kinematics. Velocities and accelerations are random in the
    null space of the soles' Jacobians (plus the acceleration that cancels their drift), so the
    soles neither move nor accelerate. Samples where the legs cannot reach are skipped.
    """
    model = floating.model
    data = model.createData()
    Q0 = pin.neutral(model) if standing is None else np.asarray(standing, dtype=float)
    q0 = Q0[floating.robot.q_index]
    base0 = pin.XYZQUATToSE3(Q0[:7])
    frames = [model.getFrameId(name) for name in sole_frames]
    pin.framesForwardKinematics(model, data, Q0)
    soles = {name: data.oMf[f].copy() for name, f in zip(sole_frames, frames)}
    lower = model.lowerPositionLimit[floating.robot.q_index]
    upper = model.upperPositionLimit[floating.robot.q_index]
    Qs, Vs, As = [], [], []
    for _ in range(count):
        q = rng.uniform(lower, upper)
        offset = rng.uniform(-spread, spread, 6) * np.array([0.1, 0.1, 0.1, 1.0, 1.0, 1.0])
        pose = base0 * pin.SE3(pin.rpy.rpyToMatrix(*offset[3:]), offset[:3])
        start = q0.copy()
        try:
            legs = stance_inverse_kinematics(floating, [pose], start, soles, iterations=30, tolerance=1e-8)[0]
        except EstimationError:
            continue
        _, solved_legs = _legs(floating, frames)
        q[solved_legs] = legs[solved_legs]
        Q = floating.configuration(pose.translation, pin.Quaternion(pose.rotation).coeffs(), q)[0]
        pin.computeJointJacobians(model, data, Q)
        pin.updateFramePlacements(model, data)
        J = np.vstack([pin.getFrameJacobian(model, data, f, pin.LOCAL) for f in frames])
        _, s, Vt = np.linalg.svd(J)
        null = Vt[int(np.sum(s > 1e-9 * s[0])) :].T
        v = null @ rng.standard_normal(null.shape[1])
        pin.forwardKinematics(model, data, Q, v, np.zeros(model.nv))
        drift = np.concatenate([pin.getFrameAcceleration(model, data, f, pin.LOCAL).vector for f in frames])
        a = -np.linalg.pinv(J) @ drift + null @ rng.standard_normal(null.shape[1])
        Qs.append(Q)
        Vs.append(v)
        As.append(a)
    if len(Qs) < count // 2:
        raise EstimationError(f"only {len(Qs)} of {count} random stance poses were reachable: lower the spread")
    return np.array(Qs), np.array(Vs), np.array(As)


def leg_joints(floating: FloatingBaseModel, frames: Sequence[int]) -> NDArray[np.int64]:
    """Our indices of the joints on the paths from the base to the given frames (pinocchio frame ids)."""
    return _legs(floating, frames)[1]


def _legs(floating: FloatingBaseModel, frames: Sequence[int]) -> tuple[list[int], NDArray[np.int64]]:
    """Joint ids and our joint indices on the paths from the base to the given frames."""
    model = floating.model
    ids = sorted(
        {
            j
            for f in frames
            for j in model.supports[model.frames[f].parentJoint]
            if model.names[j] in floating.robot.joint_names
        }
    )
    return ids, np.array([floating.robot.joint_names.index(model.names[j]) for j in ids], dtype=np.int64)
