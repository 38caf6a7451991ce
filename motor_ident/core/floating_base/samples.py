"""From sensor signals to regressor samples: base state from the IMU and the feet, rates, wrenches.

Inputs are what a humanoid logs: joint encoders, an IMU on the base (orientation, gyro) and a
6-axis wrench per foot. The base orientation is the IMU's (through the fixed IMU-to-base
rotation), fused with its integrated gyro above `ORIENTATION_CROSSOVER_HZ`; its angular velocity
the gyro's, less the gyro's bias; the base position comes from the feet in stance
(`motor_ident.core.floating_base.stance.base_positions`) unless the log has it. Every signal,
the wrenches included, goes through the same zero-phase filter (`Differentiation`), so the
regressor and the measured wrenches see the same frequency content; the first and last
``trim_s`` seconds (filter edges) are dropped. The accelerometer is not needed: the base's
linear acceleration is the second derivative of its position from the feet.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.estimation.signals import Differentiation
from motor_ident.core.floating_base.model import ROOT_JOINT, FloatingBaseRegressor
from motor_ident.core.floating_base.stance import base_positions, contact_from_wrenches, spatial_base_motion
from motor_ident.errors import ConfigError, DataError

FloatArray = NDArray[np.float64]

DEFAULT_DIFFERENTIATION = Differentiation(method="butterworth", cutoff_hz=5.0)
"""Balancing motions stay below ~2 Hz; 5 Hz keeps them and drops the F/T and encoder noise."""

ORIENTATION_CROSSOVER_HZ = 0.5
"""Below this frequency the base orientation follows the IMU's orientation output, above it the
integrated gyro (`fused_orientation`). The base position from the feet is the orientation times a
lever of ~0.5 m, differentiated twice: orientation noise of 2 mrad per sample at 1 kHz, even after
the 5 Hz filter, made base accelerations as noisy as a balancing sway's (~0.1 m/s^2), and that
noise in the regressor pulled the vertical CoM of the simulated iCub up by 7-33 mm."""


def fused_orientation(
    t: ArrayLike, quaternion: ArrayLike, gyro: ArrayLike, crossover_hz: float = ORIENTATION_CROSSOVER_HZ
) -> tuple[FloatArray, FloatArray]:
    """The IMU's orientation from its gyro, pulled toward its orientation output (a complementary filter).

    Each step rotates by the gyro's rate (the mean of the step's two samples) and then a fraction
    ``2 pi crossover_hz dt`` of the way to the measured orientation: orientation noise above the
    crossover is replaced by the integrated gyro's, far smaller. Rotating by the rate at the step's
    start instead lagged the orientation by half a sample (omega dt / 2, ~0.1 mrad for a pelvis
    tilting 0.08 rad at 0.5 Hz, at 1 kHz): an error that follows the motion, which put the vertical
    CoM of noise-free rigid-plant data of Romeo 8-11 mm up (3 and 6 mm without). A constant gyro
    bias b would tilt the result by about b / (2 pi crossover_hz); the corrections make up for it on
    average, so a first pass estimates b as minus their mean rate (after a settling time of
    3 / (2 pi crossover_hz)), and the second runs on the gyro less b.

    Args:
        t: time stamps (N,) [s], increasing.
        quaternion: measured orientation world <- IMU [qx, qy, qz, qw] (N, 4).
        gyro: angular velocity in the IMU frame (N, 3) [rad/s].
        crossover_hz: > 0 [Hz].

    Returns:
        The fused orientation (N, 4) [qx, qy, qz, qw] and the estimated gyro bias (3,) [rad/s].
    """
    t = np.asarray(t, dtype=float)
    gyro = np.asarray(gyro, dtype=float)
    measured = [
        pin.Quaternion(np.asarray(x, dtype=float)).normalized().toRotationMatrix() for x in np.asarray(quaternion)
    ]
    if t.size < 2:
        return np.asarray(quaternion, dtype=float).copy(), np.zeros(3)
    dt = np.diff(t)
    gain = np.minimum(2.0 * np.pi * crossover_hz * dt, 1.0)

    def run(bias: FloatArray) -> tuple[FloatArray, FloatArray]:
        out, corrections = np.empty((t.size, 4)), np.empty((dt.size, 3))
        R = measured[0]
        out[0] = pin.Quaternion(R).coeffs()
        for k in range(dt.size):
            R = R @ pin.exp3((0.5 * (gyro[k] + gyro[k + 1]) - bias) * dt[k])  # trapezoid: no half-step lag
            corrections[k] = gain[k] * pin.log3(R.T @ measured[k + 1])
            R = R @ pin.exp3(corrections[k])
            out[k + 1] = pin.Quaternion(R).coeffs()
        return out, corrections

    _, corrections = run(np.zeros(3))
    settled = t[1:] >= t[0] + 3.0 / (2.0 * np.pi * crossover_hz)
    settled = settled if settled.sum() >= 10 else np.ones_like(settled)
    bias = -corrections[settled].sum(axis=0) / dt[settled].sum()
    return run(bias)[0], bias


@dataclass(frozen=True, eq=False)
class FloatingSamples:
    """Regressor inputs of a record: Q (N, 7 + n), V and A (N, 6 + n), and the measured
    generalized force F (N, 6 + n) (contact wrenches, plus joint torques on the joint rows where
    measured, NaN there otherwise); t (N,) [s]; contact (N, c): which feet stood on the ground."""

    t: FloatArray
    Q: FloatArray
    V: FloatArray
    A: FloatArray
    F: FloatArray
    contact: NDArray[np.bool_]

    def slice(self, start: int, stop: int) -> FloatingSamples:
        """Samples start .. stop - 1."""
        t, Q, V, A, F = (x[start:stop] for x in (self.t, self.Q, self.V, self.A, self.F))
        return FloatingSamples(t, Q, V, A, F, self.contact[start:stop])

    def supports(self) -> tuple[tuple[int, ...], ...]:
        """The sets of feet on the ground that occur (contact indices), most frequent first."""
        sets, counts = np.unique(self.contact, axis=0, return_counts=True)
        return tuple(tuple(int(c) for c in np.flatnonzero(sets[i])) for i in np.argsort(-counts))


def imu_to_base(regressor: FloatingBaseRegressor, imu_frame: str) -> FloatArray:
    """Rotation R_BI (3, 3) of an IMU frame fixed on the base link.

    Raises:
        ConfigError: the frame is not on the base link.
    """
    model = regressor.floating.model
    if not model.existFrame(imu_frame):
        raise ConfigError(f"IMU frame {imu_frame!r} is not a frame of the URDF")
    frame = model.frames[model.getFrameId(imu_frame)]
    if frame.parentJoint != model.getJointId(ROOT_JOINT):
        raise ConfigError(f"IMU frame {imu_frame!r} is not on the base link {regressor.floating.base_link!r}")
    return np.asarray(frame.placement.rotation, dtype=float)


def floating_samples(
    regressor: FloatingBaseRegressor,
    t: ArrayLike,
    q: ArrayLike,
    imu_quaternion: ArrayLike,
    imu_gyro: ArrayLike,
    wrench: ArrayLike,
    *,
    imu_frame: str,
    sole_frames: Sequence[str],
    tau: ArrayLike | None = None,
    base_position: ArrayLike | None = None,
    contact: ArrayLike | None = None,
    differentiation: Differentiation = DEFAULT_DIFFERENTIATION,
    trim_s: float = 0.25,
    orientation_crossover_hz: float | None = ORIENTATION_CROSSOVER_HZ,
) -> FloatingSamples:
    """Regressor samples of a floating-base record (module docstring).

    Args:
        t: uniform time stamps (N,) [s].
        q: joint positions (N, n) [rad]; imu_quaternion: world <- IMU [qx, qy, qz, qw] (N, 4);
        imu_gyro: (N, 3) [rad/s] in the IMU frame; wrench: (N, c, 6) at the contact sensor frames.
        imu_frame, sole_frames: from the robot config's ``floating_base`` section.
        tau: joint torques (N, n) [N m] when measured.
        base_position: base origin in the world (N, 3) [m] when logged.
        contact: which feet stand on the ground (N, c) when logged (a contact schedule); else a
            foot stands where its measured force exceeds 5 % of the weight (`contact_from_wrenches`).
        orientation_crossover_hz: of `fused_orientation` (gyro above, the IMU's orientation
            below; its bias removed from the angular velocity too); None: the IMU's orientation alone.

    Raises:
        DataError: shapes disagree or too few samples remain after trimming.
    """
    t = np.asarray(t, dtype=float)
    N = t.size
    floating = regressor.floating
    R_BI = imu_to_base(regressor, imu_frame)
    quat_imu = np.asarray(imu_quaternion, dtype=float)
    W = np.asarray(wrench, dtype=float)
    if W.shape != (N, len(floating.contact_frames), 6):
        raise DataError(f"wrench has shape {W.shape}: expected ({N}, {len(floating.contact_frames)}, 6)")
    q_f, qd, qdd = differentiation.derivatives(t, np.asarray(q, dtype=float))
    # orientation: the gyro fused with the IMU's orientation (sign made continuous first), then the
    # same filter as every signal on the quaternion components, renormalised
    gyro = np.asarray(imu_gyro, dtype=float)
    flips = np.cumprod(np.where(np.einsum("ij,ij->i", quat_imu[1:], quat_imu[:-1]) < 0.0, -1.0, 1.0))
    quat_imu = quat_imu * np.concatenate([[1.0], flips])[:, None]
    if orientation_crossover_hz is not None:
        quat_imu, bias = fused_orientation(t, quat_imu, gyro, orientation_crossover_hz)
        gyro = gyro - bias
        flips = np.cumprod(np.where(np.einsum("ij,ij->i", quat_imu[1:], quat_imu[:-1]) < 0.0, -1.0, 1.0))
        quat_imu = quat_imu * np.concatenate([[1.0], flips])[:, None]
    quat_imu = differentiation.derivatives(t, quat_imu)[0]
    quat_imu /= np.linalg.norm(quat_imu, axis=1, keepdims=True)
    R_IB = pin.Quaternion(R_BI.T)
    quat = np.array([(pin.Quaternion(np.asarray(x)) * R_IB).coeffs() for x in quat_imu])
    omega, omega_dot = (x @ R_BI.T for x in differentiation.derivatives(t, gyro)[:2])
    on = contact_from_wrenches(W) if contact is None else np.asarray(contact, dtype=float) > 0.5
    if on.shape != W.shape[:2]:
        raise DataError(f"contact has shape {on.shape}: expected {W.shape[:2]}")
    if base_position is None:
        base_position = base_positions(floating, q_f, quat, sole_frames, contact=on)
    p, p_dot, p_ddot = differentiation.derivatives(t, np.asarray(base_position, dtype=float))
    twist, twist_dot = spatial_base_motion(quat, (p_dot, p_ddot), omega, omega_dot)
    W = differentiation.derivatives(t, W.reshape(N, -1))[0].reshape(W.shape)
    keep = slice(int(round(trim_s / np.median(np.diff(t)))), None)
    keep = slice(keep.start, N - keep.start)
    if keep.stop - keep.start < 10:
        raise DataError(f"{N} samples leave fewer than 10 after trimming {trim_s} s at each end")
    Q = floating.configuration(p[keep], quat[keep], q_f[keep])
    F = regressor.contact_forces(Q, W[keep])
    if tau is None:
        F[:, 6:] = np.nan
    else:
        tau_f = differentiation.derivatives(t, np.asarray(tau, dtype=float))[0][keep]
        F[:, 6:] += tau_f
    return FloatingSamples(
        t=t[keep],
        Q=Q,
        V=floating.velocity(twist[keep], qd[keep]),
        A=floating.velocity(twist_dot[keep], qdd[keep]),
        F=F,
        contact=on[keep],
    )
