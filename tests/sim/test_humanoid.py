"""The simulated humanoid (MuJoCo, feet welded): its wrenches obey pinocchio's equations with the true masses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from motor_ident.core.floating_base.identification import (
    FloatingIdentification,
    centre_of_mass,
    identify_floating_base,
    structural_base_parameters,
)
from motor_ident.core.floating_base.model import FloatingBaseRegressor
from motor_ident.core.floating_base.online import OnlineFloatingBase
from motor_ident.core.floating_base.samples import FloatingSamples, floating_samples
from motor_ident.io.robot_config import RobotConfig, load_robot_config
from motor_ident.sim.humanoid import HumanoidRun, HumanoidSimConfig, simulate_humanoid

# a reduced humanoid: the legs, the torso pitch and the shoulders of iCub, nothing iCub-specific in the code
LEGS = [
    f"{side}_{j}" for side in "lr" for j in ("hip_pitch", "hip_roll", "hip_yaw", "knee", "ankle_pitch", "ankle_roll")
]
REDUCED = f"""
robot:
  name: small_humanoid
  urdf: example-robot-data:icub_description/robots/icub.urdf
  joints: [{", ".join(LEGS)}, torso_pitch, l_shoulder_pitch, r_shoulder_pitch]
  friction: {{kind: none}}
  reflected_inertia: false
  floating_base:
    base_link: base_link
    imu_frame: root_link
    contacts:
      left_foot: {{sensor_frame: l_foot_ft_sensor, sole_frame: l_sole}}
      right_foot: {{sensor_frame: r_foot_ft_sensor, sole_frame: r_sole}}
    foot_size: [0.12, 0.05]
    standing_posture: {{l_hip_pitch: 0.4, l_knee: -0.8, l_ankle_pitch: -0.4, r_hip_pitch: 0.4, r_knee: -0.8,
                        r_ankle_pitch: -0.4}}
"""


def reduced_config(directory: Path) -> Path:
    """Write the reduced humanoid's robot YAML into ``directory``."""
    path = directory / "small_humanoid.yaml"
    path.write_text(REDUCED)
    return path


def regressor_samples(config: RobotConfig, run: HumanoidRun) -> tuple[FloatingBaseRegressor, FloatingSamples]:
    """The regressor of the config's floating base and the regressor samples of the run's record."""
    assert config.floating_base is not None
    regressor = FloatingBaseRegressor(config.build_floating_base())
    record = run.record
    samples = floating_samples(
        regressor,
        record.t,
        record.q,
        record.imu_quaternion,
        record.imu_gyro,
        record.wrench,
        imu_frame=config.floating_base.imu_frame,
        sole_frames=config.floating_base.sole_frames,
        tau=record.tau,
    )
    return regressor, samples


@pytest.fixture(scope="module")
def humanoid(tmp_path_factory: pytest.TempPathFactory) -> tuple[RobotConfig, HumanoidRun]:
    """Three seconds of the reduced humanoid balancing at 500 Hz."""
    config = load_robot_config(reduced_config(tmp_path_factory.mktemp("robot")))
    return config, simulate_humanoid(config, HumanoidSimConfig(duration=3.0, rate_hz=500.0))


def test_feet_carry_the_true_weight_inside_the_friction_cone(humanoid: tuple[RobotConfig, HumanoidRun]) -> None:
    """The perturbed robot is heavier or lighter than its URDF, and the feet carry exactly its weight."""
    config, run = humanoid
    mass_true = run.theta_true[0::10].sum()
    assert abs(mass_true / config.build_floating_base().total_mass - 1.0) > 0.01
    assert run.friction["min_normal_force"] > 0.0
    regressor, samples = regressor_samples(config, run)
    vertical = np.einsum("ni,ni->n", samples.F[:, :3], _gravity_direction(samples.Q))
    np.testing.assert_allclose(vertical.mean(), mass_true * 9.81, rtol=2e-3)
    # MuJoCo's wrenches against pinocchio's regressor with MuJoCo's true parameters: model, frames and
    # state estimation agree to a few newtons on ~250 N
    residual = regressor.rows(samples.Q, samples.V, samples.A)[:, :6] @ run.theta_true - samples.F[:, :6]
    rms = np.sqrt(np.mean(residual**2, axis=0))
    assert np.all(rms[:3] < 2.5) and np.all(rms[3:] < 0.5), rms


def test_real_feet_could_hold_the_double_support_wrenches(humanoid: tuple[RobotConfig, HumanoidRun]) -> None:
    """Each foot's CoP 5 mm inside its sole and its force inside the friction cone in >= 99 % of the samples."""
    _, run = humanoid
    assert run.friction["cop_margin"] == 0.005
    assert run.friction["holdable"] >= 0.99, run.friction
    assert run.friction["max_tangential_ratio"] < 0.6
    assert bool(run.contact.all()) and run.record.contact is not None  # no single support asked for


def test_clean_record_is_the_noisy_one_without_sensor_errors(humanoid: tuple[RobotConfig, HumanoidRun]) -> None:
    """The noise-free record holds the true base position and differs from the sensors' by their noise only."""
    _, run = humanoid
    clean, noisy = run.clean, run.record
    assert clean.base_position is not None and noisy.base_position is None
    np.testing.assert_array_equal(clean.base_position, run.base_position)
    encoder = np.std(noisy.q - clean.q)
    assert 1e-4 < encoder < 4e-4  # the default 2e-4 rad
    gyro_bias = np.abs(np.mean(noisy.imu_gyro - clean.imu_gyro, axis=0))
    assert np.all(gyro_bias < 0.01)


def _gravity_direction(Q: np.ndarray) -> np.ndarray:
    """Up (-gravity) in the base frame per sample, (N, 3)."""
    import pinocchio as pin

    return np.array([pin.Quaternion(np.asarray(q[3:7])).toRotationMatrix()[2] for q in Q])


def base_row_fit(config: RobotConfig, run: HumanoidRun) -> FloatingIdentification:
    """WLS fit of the run's base rows (wrenches and IMU alone) on the standing robot's base parameters."""
    assert config.floating_base is not None
    regressor, samples = regressor_samples(config, run)
    base = structural_base_parameters(
        regressor, stance=config.floating_base.sole_frames, standing=samples.Q[0], samples=80
    )
    return identify_floating_base(regressor, samples.Q, samples.V, samples.A, samples.F, base=base)


def test_base_rows_identify_the_true_total_mass(humanoid: tuple[RobotConfig, HumanoidRun]) -> None:
    """Wrenches and IMU alone: the total mass within 0.3 % of the truth (the URDF is > 1 % off)."""
    config, run = humanoid
    result = base_row_fit(config, run)
    mass_true = run.theta_true[0::10].sum()
    assert bool(np.all(result.mass.identifiable))
    assert abs(float(result.mass.value) / mass_true - 1.0) < 3e-3
    assert list(result.com.identifiable) == [True, True, False]  # feet standing still: their vertical CoM is unseen


def _online(config: RobotConfig, run: HumanoidRun, **options: Any) -> OnlineFloatingBase:
    """The online estimator of the simulated robot's base rows at 500 Hz (``options``: chunk, gate, ...)."""
    assert config.floating_base is not None
    regressor, samples = regressor_samples(config, run)
    base = structural_base_parameters(
        regressor, stance=config.floating_base.sole_frames, standing=samples.Q[0], samples=80
    )
    return OnlineFloatingBase(
        regressor,
        base,
        imu_frame=config.floating_base.imu_frame,
        sole_frames=config.floating_base.sole_frames,
        rate_hz=500.0,
        **options,
    )


def test_online_mass_follows_the_offline_one(humanoid: tuple[RobotConfig, HumanoidRun]) -> None:
    """Fed sample by sample, the chunked online fit reaches the true total mass within 0.5 %."""
    config, run = humanoid
    online = _online(config, run, chunk_s=1.0, margin_s=0.25)
    record = run.record
    refits = [
        k
        for k in range(record.t.size)
        if online.add_sample(record.t[k], record.q[k], record.imu_quaternion[k], record.imu_gyro[k], record.wrench[k])
    ]
    assert len(refits) == 2 and online.estimate is not None
    assert abs(float(online.estimate.mass.value) / run.theta_true[0::10].sum() - 1.0) < 5e-3


def test_online_std_come_from_the_residuals_and_cover_the_truth(humanoid: tuple[RobotConfig, HumanoidRun]) -> None:
    """The filtered residuals are correlated: the published std are several times the white-noise
    ones, and cover the errors the white-noise ones miss (mass and horizontal CoM within 1.96 std)."""
    config, run = humanoid
    online = _online(config, run, chunk_s=1.0, margin_s=0.25)
    record = run.record
    for k in range(record.t.size):
        online.add_sample(record.t[k], record.q[k], record.imu_quaternion[k], record.imu_gyro[k], record.wrench[k])
    estimate = online.estimate
    assert estimate is not None and online.sandwich.span > 5.0  # the scores stay correlated for many samples
    zero = np.zeros((online.base.n_base, online.base.n_base))
    com_true = centre_of_mass(online.regressor, estimate.q_reference, online.base, zero, run.theta_true).value
    error = np.abs([float(estimate.mass.value) - run.theta_true[0::10].sum(), *(estimate.com.value - com_true)])
    std = np.array([estimate.mass.std, *estimate.com.std])
    white = np.array([estimate.mass_white.std, *estimate.com_white.std])
    assert np.all(std > 3.0 * white), std / white
    assert np.all(error[:3] <= 1.96 * std[:3]) and error[3] <= 3.0 * std[3], error / std  # z: weakly determined
    assert np.count_nonzero(error > 1.96 * white) >= 3, error / white  # the white-noise std miss


def test_online_gate_block_averages_and_lost_samples(humanoid: tuple[RobotConfig, HumanoidRun]) -> None:
    """Blocks of 5 samples averaged, 20 ms of lost samples interpolated, a repeated stamp restarting the
    chunk: the gate opens on the true mass; forced nominal, the active mass is the URDF's."""
    from motor_ident.core.estimation.gate import GateConfig

    config, run = humanoid
    online = _online(
        config,
        run,
        chunk_s=0.8,
        margin_s=0.2,
        decimation=5,
        gate=GateConfig(max_condition_number=1e8),  # 3 s of a 15-joint robot: no tighter
    )
    record = run.record
    lost = range(1000, 1010)  # 20 ms: two blocks of 5
    for k in range(record.t.size):
        if k not in lost:
            online.add_sample(record.t[k], record.q[k], record.imu_quaternion[k], record.imu_gyro[k], record.wrench[k])
    assert online.filled == 2 and online.gaps == 0 and online.refits >= 2
    assert online.gate_open, online.gate.reason
    mass, com = online.active()
    mass_true = run.theta_true[0::10].sum()
    assert abs(float(mass.value) / mass_true - 1.0) < 5e-3 and com is not None
    online.gate.forced_nominal = True
    assert not online.regate() and float(online.active()[0].value) == online.nominal_mass
    for k in range(10):  # the recording again from its start: stamps went backwards
        online.add_sample(record.t[k], record.q[k], record.imu_quaternion[k], record.imu_gyro[k], record.wrench[k])
    assert online.gaps == 1 and online.statistics.count > 0  # the chunk starts again, the statistics stay
