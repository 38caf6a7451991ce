"""The IMU orientation's white noise: estimated from the data, and its bias on the vertical CoM taken out (SIMEX)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from motor_ident.commands.floating_base import orientation_corrected, record_samples
from motor_ident.core.floating_base.errors_in_variables import orientation_noise, simex_correction
from motor_ident.core.floating_base.identification import (
    centre_of_mass,
    identify_floating_base,
    structural_base_parameters,
)
from motor_ident.core.floating_base.model import FloatingBaseRegressor
from motor_ident.io.robot_config import load_robot_config
from motor_ident.sim.rigid_humanoid import simulate_rigid_humanoid
from tests.sim.test_rigid_humanoid import REDUCED, SIM


def _rotating(rng: np.random.Generator, sigma: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Time (N,), true and noisy quaternions (N, 4) of a body turning at 0.3-0.5 rad/s, and its gyro (N, 3)."""
    t = np.arange(3000) * 1e-3
    rate = np.array([0.3, -0.4, 0.5])
    true = [pin.exp3(rate * tk) for tk in t]
    noisy = np.array([pin.Quaternion(R @ pin.exp3(rng.normal(0.0, sigma, 3))).coeffs() for R in true])
    clean = np.array([pin.Quaternion(R).coeffs() for R in true])
    return t, clean, noisy, np.tile(rate, (t.size, 1))


def test_noise_estimate_and_extrapolation_on_a_known_statistic(rng: np.random.Generator) -> None:
    """The increments give the orientation noise within 5 %; a statistic linear in the noise variance (the mean
    squared orientation error) extrapolates to the noise-free value, 0, within 5 % of its noisy one."""
    t, clean, noisy, gyro = _rotating(rng, 0.002)
    sigma = orientation_noise(t, noisy, gyro)
    np.testing.assert_allclose(sigma, 0.002, rtol=0.05, err_msg="per-axis white-noise std")
    assert np.all(orientation_noise(t, clean, gyro) < 1e-6)

    def squared_error(quaternion: np.ndarray) -> np.ndarray:
        errors = [pin.log3(pin.Quaternion(c).toRotationMatrix().T @ pin.Quaternion(q).toRotationMatrix()) for c, q in
                  zip(clean, quaternion)]  # fmt: skip
        return np.array([np.mean(np.square(errors))])

    naive = squared_error(noisy)
    result = simex_correction(squared_error, t, noisy, gyro, naive, seed=1)
    assert result.refits == 6 and result.lambdas.tolist() == [0.0, 0.5, 1.0, 2.0]
    assert abs(result.corrected[0]) < 0.05 * naive[0], (result.corrected, naive)
    assert np.all(np.diff(result.means[:, 0]) > 0.0)  # more noise, more error
    np.testing.assert_allclose(result.correction, result.corrected - naive)
    assert np.all(result.std >= np.abs(result.extrapolant_difference))


@pytest.fixture(scope="module")
def small_romeo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The reduced Romeo of the rigid-plant tests."""
    path = tmp_path_factory.mktemp("robot") / "small_romeo.yaml"
    path.write_text(REDUCED)
    return path


def test_simex_brings_the_vertical_com_back(small_romeo: Path) -> None:
    """On the rigid plant the 2 mrad orientation noise puts the reduced Romeo's vertical CoM ~35 mm up; the
    correction estimates that noise within 20 % and takes off more than 40 % of the error, the mass kept."""
    config = load_robot_config(small_romeo)
    assert config.floating_base is not None
    run = simulate_rigid_humanoid(config, replace(SIM, seed=0))
    regressor = FloatingBaseRegressor(config.build_floating_base())
    samples = record_samples(regressor, config, run.record)
    base = structural_base_parameters(
        regressor, "base", supports=[tuple(config.floating_base.sole_frames)], standing=samples.Q[0]
    )
    fit = identify_floating_base(regressor, samples.Q, samples.V, samples.A, samples.F, method="wls", base=base)
    corrected, correction = orientation_corrected(regressor, config, run.record, samples, fit)
    np.testing.assert_allclose(correction.noise, SIM.orientation_noise, rtol=0.2, err_msg="orientation noise")
    truth = centre_of_mass(regressor, samples.Q[0], base, np.eye(base.n_base), run.theta_true).value
    before, after = fit.com.value[2] - truth[2], corrected.com.value[2] - truth[2]
    assert before > 0.015, f"the uncorrected vertical CoM is {1000 * before:.1f} mm off: no bias to correct"
    assert abs(after) < 0.6 * before, f"{1000 * before:.1f} mm -> {1000 * after:.1f} mm"
    assert np.all(corrected.com.std >= fit.com.std) and float(corrected.mass.std) >= float(fit.mass.std)
    assert abs(float(corrected.mass.value) - float(fit.mass.value)) < 3.0 * float(fit.mass.std)
