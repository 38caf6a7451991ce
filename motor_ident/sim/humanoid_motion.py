"""What the simulated humanoid does: a balancing motion real feet could hold, and its contact schedule.

The motion is planned on the simulated robot's own (true) masses, as a real robot's balance
controller would close the same loop on its measured centre of pressure:

- **Double support.** The whole-body centre of mass (CoM) is the commanded quantity: it sways
  around the middle of the soles (``sway``, forward and sideways) while the pelvis tilts and bobs
  and the torso, arms and head swing; the pelvis position is solved at every reference sample so
  that the CoM is where the plan says (the arms' swing would otherwise carry it off the feet). The
  legs follow by stance inverse kinematics.
- **Single support** (``single_support_phases``, alternating feet): the CoM moves over one sole's
  centre, that foot's weld is released once the other foot is unloaded, the free foot is lifted
  (``step_height``), moved forward and back and tilted, put down at its pose and welded again; the
  CoM moves back to the middle. The pelvis tilts and the upper body's swings are cut to a
  quarter there (the CoP has a 5 cm wide sole to stay on).

`ForceDistribution` is the legs' force loop in double support: the two feet in a closed chain
can carry internal wrenches (pushing against each other) that real flat feet could not, and the
position servos alone set them by their tracking errors. From the measured sole wrenches it adds
leg torques that move the internal part toward the distribution with the smallest sole moments
and tangential forces; an internal wrench changes no motion, only how the feet share the load.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import mujoco
import numpy as np
import pinocchio as pin
from numpy.typing import NDArray
from scipy.interpolate import CubicSpline

from motor_ident.core.floating_base.model import FloatingBaseModel
from motor_ident.core.floating_base.stance import leg_joints, stance_inverse_kinematics
from motor_ident.errors import ConfigError

FloatArray = NDArray[np.float64]

GRID_S = 0.01
"""Spacing of the planned reference samples (the servos follow a cubic spline through them) [s]."""

# a single-support phase, as fractions of its duration: CoM over the stance sole, hold (the other
# foot unloads), release and swing, re-weld and hold, CoM back to the middle
_SHIFT, _UNLOAD, _SWING, _SETTLE = 0.32, 0.05, 0.28, 0.03
_HOVER = 0.15
"""Last fraction of the swing the foot rests at its landing pose before it is welded (servo lag settles)."""
DOUBLE_SUPPORT_MIN_S = 1.0
"""Shortest double-support stretch between (and around) single-support phases [s]."""


@dataclass(frozen=True)
class Phase:
    """One single-support phase: ``stance`` holds the robot, foot ``swing`` is free in [release, reweld) [s]."""

    start: float
    duration: float
    stance: int
    swing: int

    @property
    def release(self) -> float:
        """Time the swing foot's weld is switched off [s]."""
        return self.start + (_SHIFT + _UNLOAD) * self.duration

    @property
    def reweld(self) -> float:
        """Time the swing foot's weld is switched on again [s]."""
        return self.release + _SWING * self.duration


def contact_schedule(duration: float, phases: int, phase_s: float, feet: int) -> list[Phase]:
    """Single-support phases spread over the recording, between double-support stretches.

    Raises:
        ConfigError: they do not fit (each needs ``phase_s`` and every double-support stretch
            `DOUBLE_SUPPORT_MIN_S`), or the robot has not two feet.
    """
    if phases == 0:
        return []
    if feet != 2:
        raise ConfigError(f"single-support phases need a robot on two feet, not {feet}")
    gap = (duration - phases * phase_s) / (phases + 1)
    if gap < DOUBLE_SUPPORT_MIN_S:
        raise ConfigError(
            f"{phases} single-support phases of {phase_s} s do not fit in {duration} s: each needs "
            f"{phase_s} s plus {DOUBLE_SUPPORT_MIN_S} s of double support around it"
        )
    return [
        Phase(start=gap + k * (phase_s + gap), duration=phase_s, stance=k % 2, swing=1 - k % 2) for k in range(phases)
    ]


def in_contact(schedule: Sequence[Phase], t: FloatArray, feet: int) -> NDArray[np.bool_]:
    """Which feet are welded at times ``t`` (N,): shape (N, feet)."""
    out = np.ones((t.size, feet), dtype=bool)
    for phase in schedule:
        out[(t >= phase.release) & (t < phase.reweld), phase.swing] = False
    return out


def _smooth(x: FloatArray) -> FloatArray:
    """C2 smootherstep of x clipped to [0, 1]."""
    x = np.clip(x, 0.0, 1.0)
    return x**3 * (10.0 - 15.0 * x + 6.0 * x**2)


def _bump(x: FloatArray) -> FloatArray:
    """0 -> 1 -> 0 over x in [0, 1] (sin^2, zero slope at both ends), 0 outside."""
    inside = (x >= 0.0) & (x <= 1.0)
    return np.where(inside, np.sin(np.pi * np.clip(x, 0.0, 1.0)) ** 2, 0.0)


@dataclass(frozen=True)
class MotionPlan:
    """Inputs of `plan_reference`, each on the time grid t (T,).

    Attributes:
        com_offset: CoM target relative to the middle of the soles, world (T, 2) [m], double support.
        base_motion: pelvis [height, roll, pitch, yaw] offsets from the standing pose (T, 4) [m, rad].
        upper: joint positions of the joints off the legs (T, n) [rad] (leg columns ignored).
    """

    t: FloatArray
    com_offset: FloatArray
    base_motion: FloatArray
    upper: FloatArray


def plan_reference(
    truth: FloatingBaseModel,
    plan: MotionPlan,
    schedule: Sequence[Phase],
    soles: dict[str, pin.SE3],
    base0: pin.SE3,
    q_start: FloatArray,
    *,
    step_height: float,
    inset: float = 0.0,
) -> tuple[CubicSpline, pin.SE3]:
    """Joint references (spline of time, (n,) per time) realising the plan, and the first base pose.

    The CoM target moves over the stance sole for each phase of ``schedule`` and the free foot
    follows its swing (the CoM target ``inset`` [m] from the sole centre toward the middle, room
    for the CoP to go outward when the CoM moves back); at every grid sample the pelvis position
    is corrected (three fixed-point steps) until the model's CoM is at its target.
    """
    names = list(soles)
    centres = np.array([pose.translation[:2] for pose in soles.values()])
    middle = centres.mean(axis=0)
    toward = (middle - centres) / np.maximum(np.linalg.norm(middle - centres, axis=1, keepdims=True), 1e-9)
    stance_targets = centres + inset * toward
    t = plan.t
    over = np.zeros(t.size)  # 0: CoM target in the middle (plus the sway), 1: over the stance sole
    stance_of = np.zeros(t.size, dtype=int)
    swing_pose: list[tuple[int, float]] = [(-1, 0.0)] * t.size
    for phase in schedule:
        x = (t - phase.start) / phase.duration
        shift_in = _smooth(x / _SHIFT)
        shift_out = 1.0 - _smooth((x - (1.0 - _SHIFT)) / _SHIFT)
        active = (x >= 0.0) & (x <= 1.0)
        over = np.where(active, np.minimum(shift_in, shift_out), over)
        stance_of = np.where(active, phase.stance, stance_of)
        for i in np.flatnonzero((t >= phase.release) & (t < phase.reweld)):
            fraction = float(t[i] - phase.release) / (phase.reweld - phase.release)
            swing_pose[i] = (phase.swing, min(fraction / (1.0 - _HOVER), 1.0))
    calm = 1.0 - 0.75 * over  # single support: pelvis tilts and upper-body swings at a quarter
    model = truth.model
    data = model.createData()
    legs = leg_joints(truth, [model.getFrameId(name) for name in names])
    others = np.setdiff1d(np.arange(truth.n), legs)
    q = np.asarray(q_start, dtype=float).copy()
    correction = np.zeros(2)
    out = np.empty((t.size, truth.n))
    start = base0
    for k in range(t.size):
        target = (1.0 - over[k]) * (middle + plan.com_offset[k]) + over[k] * stance_targets[stance_of[k]]
        height, roll, pitch, yaw = plan.base_motion[k] * np.array([1.0, calm[k], calm[k], calm[k]])
        targets = dict(soles)
        foot, s = swing_pose[k]
        if foot >= 0:
            lift = _bump(np.array([s]))[0]
            forward = np.sin(2.0 * np.pi * s) * np.sin(np.pi * s)  # forward, then back, zero at both ends
            tilt = pin.rpy.rpyToMatrix(0.15 * forward, 0.25 * lift, 0.1 * forward)
            pose = soles[names[foot]]
            targets[names[foot]] = pin.SE3(
                pose.rotation @ tilt, pose.translation + [0.03 * forward, 0.0, step_height * lift]
            )
        q[others] = q_start[others] + calm[k] * (plan.upper[k, others] - q_start[others])
        for _ in range(3):
            offset = np.array([correction[0], correction[1], height])
            base = pin.SE3(base0.rotation @ pin.rpy.rpyToMatrix(roll, pitch, yaw), base0.translation + offset)
            q = stance_inverse_kinematics(truth, [base], q, targets)[0]
            Q = truth.configuration(base.translation, pin.Quaternion(base.rotation).coeffs(), q)[0]
            com = pin.centerOfMass(model, data, Q)
            correction += target - com[:2]
        out[k] = q
        start = base if k == 0 else start
    return CubicSpline(t, out, axis=0), start


class ForceDistribution:
    """The legs' internal-force loop in double support (module docstring).

    State: the accumulated torque correction of every hinge dof (an integrator).

    Args:
        model: the compiled MuJoCo model; sole_bodies: MuJoCo body ids of the soles (welded bodies).
        hinge_dofs: dof addresses of the servoed joints; weight: the robot's weight [N].
        foot_size: sole length x width [m]; friction_coefficient: mu.
        gain: fraction of the wrench error corrected per call (0, 1].
    """

    def __init__(
        self,
        model: mujoco.MjModel,
        sole_bodies: Sequence[int],
        hinge_dofs: NDArray[np.int64],
        *,
        weight: float,
        foot_size: tuple[float, float],
        friction_coefficient: float,
        gain: float = 0.3,
    ) -> None:
        self.model, self.soles, self.dofs, self.gain = model, list(sole_bodies), hinge_dofs, gain
        self.share = weight / len(self.soles)
        # cost per sole-frame component, relative to the foot's normal force: tangential force against
        # the cone, CoP against the sole size; the normal force itself nearly free
        self._scale = np.array(
            [friction_coefficient, friction_coefficient, 10.0, 0.5 * foot_size[1], 0.5 * foot_size[0], 0.02]
        )
        self.torque = np.zeros(len(hinge_dofs))

    def update(self, data: mujoco.MjData, welded: NDArray[np.bool_]) -> FloatArray:
        """Torque correction of the hinge dofs (n,) [N m] after this state (mj_rnePostConstraint done)."""
        active = [b for b, on in zip(self.soles, welded) if on]
        if len(active) < 2:
            self.torque *= 0.99  # one foot: no internal wrench to set; let the correction fade
            return self.torque
        G, w, D, frames = [], [], [], []
        for body in active:
            p, R = data.xpos[body], data.xmat[body].reshape(3, 3)
            torque_c, force = data.cfrc_ext[body, :3], data.cfrc_ext[body, 3:]
            torque = torque_c + np.cross(data.subtree_com[self.model.body_rootid[body]] - p, force)
            jacp, jacr = np.zeros((3, self.model.nv)), np.zeros((3, self.model.nv))
            mujoco.mj_jac(self.model, data, jacp, jacr, p, body)
            G.append(np.vstack([jacp, jacr]))
            w.append(np.concatenate([force, torque]))
            frames.append(R)
            rotate = np.zeros((6, 6))
            rotate[:3, :3] = rotate[3:, 3:] = R.T
            normal = max(float((R.T @ force)[2]), 0.02 * self.share)
            D.append(rotate / (self._scale * normal)[:, None])
        J = np.vstack(G)  # (6 c, nv): generalized force of the stacked wrenches is J' w
        wrench = np.concatenate(w)
        weights = np.zeros((J.shape[0], J.shape[0]))
        for c, block in enumerate(D):
            weights[6 * c : 6 * c + 6, 6 * c : 6 * c + 6] = block
        _, s, Vt = np.linalg.svd(J[:, :6].T)  # internal wrenches: no net force on the free body
        internal = Vt[int(np.sum(s > 1e-9 * s[0])) :].T
        A, b = weights @ internal, -weights @ wrench
        change = internal @ np.linalg.lstsq(A, b, rcond=None)[0]  # wished change of the soles' wrenches
        # a foot pulling on the ground (normal force under 5 % of its share): hold it there, solve again
        up = np.zeros((len(active), J.shape[0]))  # normal force of each foot from the stacked wrenches
        for c, R in enumerate(frames):
            up[c, 6 * c : 6 * c + 3] = R[:, 2]
        low = up @ (wrench + change) < 0.05 * self.share
        if np.any(low):
            strong = 100.0 / self.share
            A = np.vstack([A, strong * up[low] @ internal])
            b = np.concatenate([b, strong * (0.05 * self.share - up[low] @ wrench)])
            change = internal @ np.linalg.lstsq(A, b, rcond=None)[0]
        # motors adding J' x to the generalized force make the ground carry -x
        self.torque -= self.gain * (J.T @ change)[self.dofs]
        return self.torque
