"""Liu et al.'s experiments on the simulated ``elastic_arm6``: bidirectional sweeps and excitation records.

The arm (`motor_ident.sim.elastic.ElasticArm`) is driven by a motor-side PID around a rigid-body
feedforward of the config's nominal model (the motor reference is wound up by the spring:
``theta_m_ref = q_ref + tau_ff / K``), which tracks any smooth link reference well enough to
identify from, and is stable for any positive gains (collocated feedback).

Link friction of the simulated arm is Liu et al.'s direction-dependent model (eq. 9-10,
`motor_ident.core.actuators.friction` ``directional``) with `LIU_FRICTION_THRESHOLD` and `liu_friction_truth`;
the harmonic drive adds its load-dependent loss ``mu |tau_j| tanh(v_m / v_s)`` and the rotor its
viscous damping, which no velocity-only friction model explains.

- `bidirectional_sweeps`: every joint at constant speed forward, then backward over the same
  positions (Liu et al. 2023, eq. 5-8), at a list of speeds; returns aligned pairs of passes.
- `excitation_record`: a Fourier excitation (Liu et al. 2023, eq. 15) played through the arm, recorded as
  the sensors give it (quantised encoders, noisy motor torque).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.actuators.friction import FrictionKind, FrictionShape, friction_regressor
from motor_ident.core.excitation.fourier import FourierTrajectory, ramp_in
from motor_ident.core.rigid_body.model import RobotModel, inverse_dynamics
from motor_ident.errors import ConfigError
from motor_ident.io.robot_config import load_robot_config
from motor_ident.sim.elastic import ElasticArm, EncoderConfig, load_elastic_joints

FloatArray = NDArray[np.float64]

ROBOT = "elastic_arm6"
LIU_FRICTION_THRESHOLD = 0.06  # lambda of Liu et al. 2023, eq. 9 in the simulated arm [rad/s]
# eps of Liu et al. 2023, eq. 10 in the simulated arm [rad/s]. The paper's 1e-4 makes friction a stiff damper
# near v = 0 (slope kc / eps) that explicit integration of the light wrist links cannot follow
# (h kc / (eps J_l) must stay below 2), so the simulated arm uses a wider transition.
LIU_FRICTION_EPS = 0.02
# Per joint [kc, kv1, kv2, kv3] of the simulated link friction (same both directions; N m, N m s/rad, ...).
_FRICTION = (
    (4.0, 6.0, -1.0, 0.5),
    (4.0, 6.0, -1.0, 0.5),
    (3.0, 4.0, -0.8, 0.4),
    (1.0, 1.0, -0.2, 0.1),
    (1.0, 1.0, -0.2, 0.1),
    (0.3, 0.3, -0.05, 0.03),
)
PD_KP = np.array([3000.0, 3000.0, 2000.0, 300.0, 300.0, 300.0])  # motor-side position gain [N m/rad]
PD_KD = np.array([120.0, 120.0, 80.0, 12.0, 12.0, 12.0])  # motor-side velocity gain [N m s/rad]
PD_KI = 10.0 * PD_KP  # motor-side integral gain [N m/(rad s)]: no lag on constant-speed passes


def liu_friction_shape(threshold: float = LIU_FRICTION_THRESHOLD) -> FrictionShape:
    """The directional friction shape of the simulated arm (Liu et al. 2023, eq. 9-10)."""
    return FrictionShape(kind=FrictionKind.DIRECTIONAL, direction_threshold=threshold, direction_eps=LIU_FRICTION_EPS)


def liu_friction_truth(asymmetry: float = 0.0) -> list[FloatArray]:
    """True directional friction parameters per joint, in ``liu_friction_shape().names`` order.

    Args:
        asymmetry: a in [0, 1): Coulomb level kc (1 + a) moving forward and kc (1 - a) backward
            (kc1 != kc2 of Liu et al. 2023, eq. 9); 0 = symmetric.
    """
    if not 0.0 <= asymmetry < 1.0:
        raise ConfigError(f"asymmetry = {asymmetry!r}: expected 0 <= a < 1")
    return [
        np.array([kc * (1.0 + asymmetry), kc * (1.0 - asymmetry), kv1, kv2, kv3, kv1, -kv2, kv3])
        for kc, kv1, kv2, kv3 in _FRICTION
    ]


@dataclass(frozen=True)
class ArmSetup:
    """The simulated arm's pieces: the rigid nominal model (with rotor inertia) and the arm factory."""

    robot: RobotModel
    stiffness: FloatArray
    rate_hz: float
    torque_noise_std: float
    encoders: EncoderConfig
    asymmetry: float = 0.0
    drive_loss: float = 1.0

    def arm(self, q0: ArrayLike, seed: int = 0) -> ElasticArm:
        """A fresh elastic arm settled at ``q0`` (its drive loss coefficients mu times ``drive_loss``)."""
        config = load_robot_config(ROBOT)
        elastic = [
            replace(e, load_friction=e.load_friction * self.drive_loss)
            for e in load_elastic_joints(config.source, config.joints)  # type: ignore[arg-type]
        ]
        shape = liu_friction_shape()
        truth = liu_friction_truth(self.asymmetry)

        theta = np.stack(truth)  # (n, 8): every joint has the same shape

        def link_friction(v: FloatArray) -> FloatArray:
            return np.einsum("jk,jk->j", friction_regressor(v, shape), theta)

        return ElasticArm(
            self.robot,
            elastic,
            link_friction=link_friction,
            encoders=self.encoders,
            rate_hz=self.rate_hz,
            substeps=4,
            torque_noise_std=self.torque_noise_std,
            seed=seed,
            q0=q0,
        )


def arm_setup(
    *, rate_hz: float = 200.0, torque_noise_std: float = 0.02, asymmetry: float = 0.0, drive_loss: float = 1.0
) -> ArmSetup:
    """The elastic_arm6 setup used by Liu et al.'s reproduction and tests.

    ``asymmetry``: `liu_friction_truth`; ``drive_loss``: factor on the config's drive loss mu (0: none).
    """
    if not drive_loss >= 0.0:
        raise ConfigError(f"drive_loss = {drive_loss!r}: expected a factor >= 0")
    config = load_robot_config(ROBOT)
    elastic = load_elastic_joints(config.source, config.joints)  # type: ignore[arg-type]
    return ArmSetup(
        robot=config.build_model(),
        stiffness=np.array([e.stiffness for e in elastic]),
        rate_hz=rate_hz,
        torque_noise_std=torque_noise_std,
        encoders=EncoderConfig(),
        asymmetry=asymmetry,
        drive_loss=drive_loss,
    )


@dataclass(frozen=True)
class ArmRecord:
    """Sensor samples of the arm, each (N,) or (N, n): t [s], link q [rad], motor angle / N [rad],
    measured motor torque [N m, link side], and the true link velocity [rad/s] for checks."""

    t: FloatArray
    q: FloatArray
    motor_position: FloatArray
    effort: FloatArray
    qd_true: FloatArray

    def select(self, mask: ArrayLike) -> ArmRecord:
        """The samples where ``mask`` (N,) is true (or at the given indices)."""
        keep = np.asarray(mask)
        return ArmRecord(*(x[keep] for x in (self.t, self.q, self.motor_position, self.effort, self.qd_true)))


def _play(setup: ArmSetup, q_ref: FloatArray, qd_ref: FloatArray, qdd_ref: FloatArray, seed: int) -> ArmRecord:
    """Track a link reference (N, n) sampled at the arm's rate with the motor-side PD + feedforward."""
    arm = setup.arm(q_ref[0], seed=seed)
    data = setup.robot.create_data()
    N, n = q_ref.shape
    out = {k: np.zeros((N, n)) for k in ("q", "motor_position", "effort", "qd_true")}
    t = np.zeros(N)
    integral = np.zeros(n)
    dt = 1.0 / setup.rate_hz
    for k in range(N):
        tau_ff = inverse_dynamics(setup.robot, data, q_ref[k], qd_ref[k], qdd_ref[k])
        error = q_ref[k] + tau_ff / setup.stiffness - arm.theta_m
        integral += error * dt
        tau = tau_ff + PD_KP * error + PD_KI * integral + PD_KD * (qd_ref[k] - arm.v_m)
        arm.step(tau)
        m = arm.measure()
        t[k] = m.t
        out["q"][k], out["motor_position"][k], out["effort"][k], out["qd_true"][k] = (
            m.q,
            m.motor_position,
            m.effort,
            m.qd,
        )
    return ArmRecord(t=t, **out)


def excitation_record(
    setup: ArmSetup, trajectory: FourierTrajectory, duration: float, *, ramp_time: float = 1.0, seed: int = 0
) -> ArmRecord:
    """Play ``trajectory`` (ramped in from rest at its start) for ``duration`` s; the ramp is cut off."""
    if not duration > ramp_time:
        raise ConfigError(f"duration = {duration!r}: expected more than the ramp_time {ramp_time} s")
    t = np.arange(int(round(duration * setup.rate_hz))) / setup.rate_hz
    q_start = trajectory.evaluate(np.zeros(1))[0][0]
    q, qd, qdd = ramp_in(t, q_start, trajectory, ramp_time)
    record = _play(setup, q, qd, qdd, seed)
    return record.select(t >= ramp_time)


@dataclass(frozen=True)
class SweepPair:
    """One constant-speed forward pass and its backward pass over the same positions.

    Attributes:
        speed: commanded speed of each joint [rad/s], shape (n,) (forward sign positive).
        forward, backward: the passes' steady-state samples, the backward one reversed in time so
            that sample k of both lies at the same commanded position.
    """

    speed: FloatArray
    forward: ArmRecord
    backward: ArmRecord


def bidirectional_sweeps(
    setup: ArmSetup,
    speeds: ArrayLike,
    *,
    q_center: ArrayLike,
    pass_time: float = 1.5,
    settle_time: float = 0.4,
    seed: int = 0,
) -> list[SweepPair]:
    """Constant-speed forward/backward passes of every joint at once (Liu et al. 2023, eq. 5-8).

    Each pass moves all joints at ``speed`` for ``settle_time + pass_time`` s, centred on
    ``q_center``; only the last ``pass_time`` s (constant speed, acceleration transients gone) are
    kept. The backward pass retraces the same positions at ``-speed``.

    Args:
        setup: the arm.
        speeds: speeds [rad/s], shape (K,) (the same for every joint).
        q_center: centre of the swept positions (n,) [rad].
    """
    speeds = np.asarray(speeds, dtype=float)
    q_center = np.asarray(q_center, dtype=float)
    if speeds.ndim != 1 or np.any(~(speeds > 0.0)):
        raise ConfigError(f"speeds = {speeds.tolist()}: expected positive speeds [rad/s]")
    rate = setup.rate_hz
    n_settle, n_pass = int(round(settle_time * rate)), int(round(pass_time * rate))
    n_hold = max(int(round(0.2 * rate)), 2)  # rest before the forward pass and at the turn
    total = 2 * n_settle + n_pass  # samples of one pass: settle, kept part, and room to settle backward
    kept = np.arange(n_settle, n_settle + n_pass)  # forward-pass indices of the kept positions
    out = []
    for speed in speeds:
        start = q_center - 0.5 * speed * (total - 1) / rate
        q_fwd = start[None, :] + (np.arange(total) / rate * speed)[:, None]
        q_ref = np.concatenate([np.repeat(q_fwd[:1], n_hold, axis=0), q_fwd, np.repeat(q_fwd[-1:], n_hold, axis=0)])
        q_ref = np.concatenate([q_ref, q_fwd[::-1]])
        qd_ref = np.gradient(q_ref, 1.0 / rate, axis=0)
        qdd_ref = np.gradient(qd_ref, 1.0 / rate, axis=0)
        record = _play(setup, q_ref, qd_ref, qdd_ref, seed)
        forward = record.select(n_hold + kept)
        backward = record.select(2 * n_hold + total + (total - 1 - kept))  # same positions, reversed time
        out.append(SweepPair(speed=np.full(q_center.size, speed), forward=forward, backward=backward))
    return out


__all__ = [
    "LIU_FRICTION_THRESHOLD",
    "ArmRecord",
    "ArmSetup",
    "SweepPair",
    "arm_setup",
    "bidirectional_sweeps",
    "excitation_record",
    "liu_friction_shape",
    "liu_friction_truth",
]
