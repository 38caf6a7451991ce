"""The base orientation: the IMU's orientation output fused with its gyro (ROS-free)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from motor_ident.core.floating_base.samples import fused_orientation


def test_fused_orientation_removes_orientation_noise_and_gyro_bias(rng: np.random.Generator) -> None:
    """A pelvis tilting at 0.3 Hz, its orientation output noisy by 2 mrad per sample, its gyro biased
    by 3 mrad/s: the fused orientation is within 0.3 mrad of the truth and the bias is found."""
    rate, N = 1000.0, 5000
    t = np.arange(N) / rate
    amplitude, w = np.array([0.08, 0.05, 0.03]), 2.0 * np.pi * 0.3
    angles = amplitude * np.sin(w * t)[:, None]  # rotation vector of the IMU, world <- IMU
    true = [pin.exp3(a) for a in angles]
    # the body-frame angular velocity from consecutive true orientations
    omega = np.array([pin.log3(true[k].T @ true[min(k + 1, N - 1)]) * rate for k in range(N)])
    omega[-1] = omega[-2]
    bias = np.array([0.003, -0.002, 0.001])
    gyro = omega + bias + 0.005 * rng.standard_normal((N, 3))
    measured = np.array([pin.Quaternion(R @ pin.exp3(0.002 * rng.standard_normal(3))).coeffs() for R in true])
    fused, found = fused_orientation(t, measured, gyro, 0.5)
    np.testing.assert_allclose(found, bias, atol=3e-4)
    error = np.array(
        [np.linalg.norm(pin.log3(R.T @ pin.Quaternion(q).toRotationMatrix())) for R, q in zip(true, fused)]
    )
    raw = np.array(
        [np.linalg.norm(pin.log3(R.T @ pin.Quaternion(q).toRotationMatrix())) for R, q in zip(true, measured)]
    )
    assert np.sqrt(np.mean(error[1000:] ** 2)) < 3e-4 < 0.1 * np.sqrt(np.mean(raw**2))


def test_fused_orientation_of_exact_signals_does_not_lag() -> None:
    """A noise-free IMU (gyro sampled at the instants): the fused orientation is the true one to 1e-5 rad
    (rotating by each step's starting rate lagged it by omega dt / 2, 1.5e-4 rad here)."""
    rate, N = 1000.0, 3000
    t = np.arange(N) / rate
    amplitude, w = np.array([0.08, 0.05, 0.03]), 2.0 * np.pi * 0.6
    true = [pin.exp3(amplitude * np.sin(w * tk)) for tk in t]
    # body-frame rate of R = exp3(a(t)): Jr(a) a_dot
    gyro = np.array([pin.Jexp3(amplitude * np.sin(w * tk)) @ (amplitude * w * np.cos(w * tk)) for tk in t])
    measured = np.array([pin.Quaternion(R).coeffs() for R in true])
    fused, _ = fused_orientation(t, measured, gyro, 0.5)
    error = [np.linalg.norm(pin.log3(R.T @ pin.Quaternion(q).toRotationMatrix())) for R, q in zip(true, fused)]
    assert max(error) < 1e-5
