"""Preparing a recording: resampling keeps measured velocities' zeros, recorded stamps, non-uniform derivatives."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from motor_ident.core.estimation.identification import identify
from motor_ident.core.estimation.signals import local_polynomial_derivatives, savgol_derivatives
from motor_ident.core.estimation.validation import prediction_metrics
from motor_ident.core.excitation.fourier import random_fourier_trajectory
from motor_ident.core.rigid_body.regressor import Regressor
from motor_ident.io.data import JointRecord
from motor_ident.io.preprocess import Preparation, prepare_record
from motor_ident.io.robot_config import load_robot_config
from tests.conftest import REPO

URDF = REPO / "config" / "urdf" / "valkyrie_arm.urdf"  # plain URDF: hard-sign Coulomb friction
RESTING = 3  # the joint that rests for a quarter of the recording
VELOCITY_STEP = 0.02  # one encoder count per sample period of the drives' velocity reading [rad/s]


def _smoothstep(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Quintic 0 -> 1 on [0, 1] and its first two derivatives."""
    x = np.clip(x, 0.0, 1.0)
    return x**3 * (10 - 15 * x + 6 * x**2), 30 * x**2 * (1 - x) ** 2, 60 * x * (1 - x) * (1 - 2 * x)


def resting_arm_recording(seed: int, duration: float = 24.0) -> tuple[JointRecord, Regressor, np.ndarray]:
    """The 4-DoF arm on 8-13 ms logger stamps, joint `RESTING` exactly at rest for 25 % of the time.

    Joint torques from the URDF's model with Coulomb + viscous friction (hard sign) and 0.05 N m
    noise; measured velocities with exact zeros at rest. Returns the record, the regressor and theta.
    """
    rng = np.random.default_rng(seed)
    config = load_robot_config(URDF)
    regressor = config.build_regressor()
    theta = config.nominal_parameters(regressor)
    for joint in regressor.layout.friction:
        theta[joint] = [1.0, 0.5]  # Coulomb [N m], viscous [N m s/rad]
    steps = rng.choice([0.008, 0.009, 0.010, 0.010, 0.011, 0.012, 0.013], size=int(duration / 0.0105))
    t = np.concatenate([[0.0], np.cumsum(steps)])
    t = t[t <= duration]
    traj = random_fourier_trajectory(rng, n=4, base_frequency=0.25, velocity_amplitude=1.0)
    q, qd, qdd = traj.evaluate(t)
    # the resting joint: motion weighted by w(t), exactly 0 from 40 % to 65 % of the record (25 %)
    s = t / duration
    up, dup, ddup = _smoothstep((0.40 - s) / 0.05)
    down, ddown, dddown = _smoothstep((s - 0.65) / 0.05)
    w = up + down
    dw = (dup * -1.0 + ddown) / (0.05 * duration)
    ddw = (ddup + dddown) / (0.05 * duration) ** 2
    f, df, ddf = q[:, RESTING].copy(), qd[:, RESTING].copy(), qdd[:, RESTING].copy()
    q[:, RESTING], qd[:, RESTING] = w * f, dw * f + w * df
    qdd[:, RESTING] = ddw * f + 2 * dw * df + w * ddf
    tau = regressor.predict(theta, q, qd, qdd) + 0.05 * rng.standard_normal(q.shape)
    # the drive's velocity reading: 0.001 rad/s noise, exactly 0 below its standstill threshold,
    # and one encoder count per period (VELOCITY_STEP) on 5 % of the samples at rest (dither)
    measured = np.where(np.abs(qd) < 0.005, 0.0, qd + 0.001 * rng.standard_normal(qd.shape))
    dither = (qd[:, RESTING] == 0.0) & (rng.random(t.size) < 0.05)
    measured[dither, RESTING] = VELOCITY_STEP * rng.choice([-1.0, 1.0], size=int(dither.sum()))
    record = JointRecord(t=t, joint_names=config.joints, q=q, tau=tau, qd=measured)
    return record, regressor, theta


def test_resampling_keeps_the_exact_zeros_of_a_measured_velocity() -> None:
    """Linear interpolation of measured velocities: between two readings of 0 rad/s the grid reads exactly 0."""
    record, _, _ = resting_arm_recording(seed=1)
    assert record.qd is not None
    zero = record.qd[:, RESTING] == 0.0
    assert zero.mean() > 0.22  # a quarter of the time at rest, less the dither
    prepared, notes = prepare_record(record, Preparation())
    assert prepared.qd is not None and np.allclose(np.diff(prepared.t), 0.0105, atol=0.002)
    after = np.clip(np.searchsorted(record.t, prepared.t), 1, record.t.size - 1)
    between_zeros = zero[after - 1] & zero[after]
    assert between_zeros.sum() > 0.15 * prepared.t.size
    assert np.all(prepared.qd[between_zeros, RESTING] == 0.0)
    said = " ".join(notes)
    assert "positions by cubic spline, measured velocities, torques linearly" in said


def test_resample_none_differentiates_on_the_recorded_stamps() -> None:
    """``resample: none``: the stamps stay, the Savitzky-Golay fit runs on them (exact on a cubic)."""
    record, _, _ = resting_arm_recording(seed=2)
    t = record.t
    cubic = 0.3 + 0.5 * t - 0.2 * t**2 + 0.01 * t**3
    smooth, dx, ddx = local_polynomial_derivatives(t, cubic, window_s=0.05)
    np.testing.assert_allclose(dx, 0.5 - 0.4 * t + 0.03 * t**2, atol=1e-7)
    np.testing.assert_allclose(ddx, -0.4 + 0.06 * t, atol=1e-5)
    uniform = np.arange(500) * 0.01
    x = np.sin(3.0 * uniform)
    for ours, reference in zip(local_polynomial_derivatives(uniform, x), savgol_derivatives(uniform, x)):
        np.testing.assert_allclose(ours, reference, atol=1e-8, err_msg="uniform stamps: Savitzky-Golay")
    prepared, notes = prepare_record(replace(record, qd=None), Preparation(resample="none"))
    assert np.array_equal(prepared.t, record.t) and np.array_equal(prepared.tau, record.tau)
    assert prepared.qd is not None and np.max(np.abs(prepared.qd - record.qd)) < 0.03  # type: ignore[operator]  # dither: 0.02
    assert any("kept as recorded" in n for n in notes)


def _validation_rre(resample: str, *, before: bool = False) -> np.ndarray:
    """Identify on one resting-arm recording, validate on another: RRE per joint [%].

    ``before``: measured velocities splined like the positions, and the metrics computed on the
    resampled grid (motor_ident before resampling kept the recorded data); else on the recorded stamps.
    """
    import motor_ident.io.preprocess as preprocess

    original, preprocess.SMOOTH_FIELDS = preprocess.SMOOTH_FIELDS, ("q", "qd") if before else ("q",)
    try:
        train, regressor, _ = resting_arm_recording(seed=3)
        test, _, _ = resting_arm_recording(seed=4)
        fit, _ = prepare_record(train, Preparation(resample=resample))
        assert fit.qd is not None and fit.qdd is not None
        result = identify(regressor, fit.q, fit.qd, fit.qdd, fit.tau, method="ols")
        check, _ = prepare_record(test, Preparation(resample=resample, recorded_stamps=not before))
        if not before:
            assert np.array_equal(check.t, test.t[: check.t.size]) and check.t.size >= test.t.size - 1
        assert check.qd is not None and check.qdd is not None
        predicted = regressor.predict(result.theta, check.q, check.qd, check.qdd)
        return np.asarray(prediction_metrics(check.tau, predicted).rre)
    finally:
        preprocess.SMOOTH_FIELDS = original


@pytest.mark.parametrize("resample", ["auto", "none"])
def test_a_joint_at_rest_is_not_given_coulomb_friction(resample: str) -> None:
    """25 % at rest on non-uniform stamps: the resting joint's validation error is below that of splined velocities."""
    rre = _validation_rre(resample)
    before = _validation_rre("auto", before=True)
    print(
        f"validation RRE % (resample {resample}): {np.round(rre, 2)}; splined velocities, grid: {np.round(before, 2)}"
    )
    assert rre[RESTING] < 0.9 * before[RESTING], (rre, before)
    assert np.all(rre < before) and np.all(rre < 20.0), (rre, before)
