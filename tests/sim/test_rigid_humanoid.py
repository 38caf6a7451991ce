"""The rigid plant (pinocchio alone, soles fixed): its own physics, then a recovery test on a plant that shares no
code with the estimator."""

from __future__ import annotations

import ast
from dataclasses import replace

import numpy as np
import pinocchio as pin
import pytest

from motor_ident.core.floating_base.identification import (
    centre_of_mass,
    identify_floating_base,
    structural_base_parameters,
)
from motor_ident.core.floating_base.model import FloatingBaseRegressor
from motor_ident.core.floating_base.samples import floating_samples
from motor_ident.errors import ConfigError
from motor_ident.io.robot_config import RobotConfig, load_robot_config
from motor_ident.sim.humanoid_common import HumanoidRun, HumanoidSimConfig
from motor_ident.sim.rigid_humanoid import rigid_humanoid_model, simulate_rigid_humanoid
from tests.conftest import REPO

# a reduced Romeo: the legs, the trunk and the shoulders (config/romeo.yaml's frames and posture)
LEGS = [
    f"{side}{j}" for side in "LR" for j in ("HipYaw", "HipRoll", "HipPitch", "KneePitch", "AnklePitch", "AnkleRoll")
]
REDUCED = f"""
robot:
  name: small_romeo
  urdf: example-robot-data:romeo_description/urdf/romeo_small.urdf
  joints: [{", ".join(LEGS)}, TrunkYaw, LShoulderPitch, RShoulderPitch]
  friction: {{kind: none}}
  reflected_inertia: false
  floating_base:
    base_link: base_link
    imu_frame: ImuTorsoGyrometer_frame
    contacts:
      left_foot: {{sensor_frame: l_ankle, sole_frame: l_sole}}
      right_foot: {{sensor_frame: r_ankle, sole_frame: r_sole}}
    foot_size: [0.12, 0.08]
    standing_posture: {{LHipPitch: -0.35, LKneePitch: 0.7, LAnklePitch: -0.35, RHipPitch: -0.35, RKneePitch: 0.7,
                        RAnklePitch: -0.35, LShoulderPitch: 1.5, RShoulderPitch: 1.5}}
"""


SIM = HumanoidSimConfig(plant="rigid", duration=4.0, rate_hz=500.0, mass_seed=3)


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> RobotConfig:
    """The reduced Romeo's robot config."""
    path = tmp_path_factory.mktemp("robot") / "small_romeo.yaml"
    path.write_text(REDUCED)
    return load_robot_config(path)


@pytest.fixture(scope="module")
def run(config: RobotConfig) -> HumanoidRun:
    """Four seconds of the reduced Romeo balancing at 500 Hz on the rigid plant (masses 4 % lighter than the URDF's)."""
    return simulate_rigid_humanoid(config, SIM)


def _configurations(config: RobotConfig, run: HumanoidRun) -> tuple[pin.Model, np.ndarray]:
    """The true model and pinocchio configurations (N, nq) of the run's true states."""
    robot = rigid_humanoid_model(config, SIM)
    Q = np.tile(pin.neutral(robot.model), (run.clean.t.size, 1))
    Q[:, :3], Q[:, 3:7], Q[:, robot.q_index] = run.base_position, run.base_quaternion, run.clean.q
    return robot.model, Q


def test_soles_stay_where_they_stand(config: RobotConfig, run: HumanoidRun) -> None:
    """The pelvis sways, bobs and tilts, and both soles stay at their first pose to 1e-9."""
    model, Q = _configurations(config, run)
    data = model.createData()
    assert config.floating_base is not None
    frames = [model.getFrameId(f) for f in config.floating_base.sole_frames]
    poses = []
    for q in Q[:: max(1, Q.shape[0] // 200)]:
        pin.framesForwardKinematics(model, data, q)
        poses.append([pin.log6(data.oMf[f]).vector for f in frames])
    drift = np.abs(np.array(poses) - poses[0])
    assert drift.max() < 1e-9, f"soles moved by {drift.max():.3g}"
    assert np.ptp(run.base_position, axis=0).min() > 0.005  # the base moved in x, y and z
    assert np.ptp(run.clean.q, axis=0).min() > 0.01  # every joint moved


def test_at_rest_the_feet_carry_the_weight(config: RobotConfig) -> None:
    """Standing still, the two feet's wrenches add up to the true weight at the CoM, shared by both feet."""
    still = replace(SIM, duration=1.0, rate_hz=100.0, sway=0.0, bob=0.0, tilt=0.0, swing=0.0)
    run = simulate_rigid_humanoid(config, still)
    model, Q = _configurations(config, run)
    data = model.createData()
    assert config.floating_base is not None
    total = np.zeros(6)
    pin.framesForwardKinematics(model, data, Q[0])
    for c, frame in enumerate(config.floating_base.sensor_frames):
        total += data.oMf[model.getFrameId(frame)].act(pin.Force(run.clean.wrench[0, c])).vector  # world, at 0
    weight = run.theta_true[0::10].sum() * 9.81
    com = pin.centerOfMass(model, data, Q[0])
    np.testing.assert_allclose(total[:3], [0.0, 0.0, weight], atol=1e-6 * weight)
    np.testing.assert_allclose(total[3:], np.cross(com, [0.0, 0.0, weight]), atol=1e-6 * weight)
    assert np.all(run.clean.wrench[:, :, 2] > 0.3 * weight)  # each foot carries part of it
    np.testing.assert_allclose(run.clean.imu_accelerometer, np.tile([0.0, 0.0, 9.81], (Q.shape[0], 1)), atol=1e-6)
    np.testing.assert_allclose(run.clean.imu_gyro, 0.0, atol=1e-12)


def test_clean_record_obeys_rnea(config: RobotConfig, run: HumanoidRun) -> None:
    """rnea of the true model on the true states (rates by central differences) equals J^T w + [0; tau]."""
    model, Q = _configurations(config, run)
    data = model.createData()
    h = 1.0 / 500.0
    assert config.floating_base is not None
    frames = [model.getFrameId(f) for f in config.floating_base.sensor_frames]
    robot = rigid_humanoid_model(config, SIM)
    weight = run.theta_true[0::10].sum() * 9.81
    worst = 0.0
    for k in range(100, Q.shape[0] - 1, 97):
        back, ahead = pin.difference(model, Q[k - 1], Q[k]), pin.difference(model, Q[k], Q[k + 1])
        generalized = pin.rnea(model, data, Q[k], (back + ahead) / (2 * h), (ahead - back) / h**2)
        pin.computeJointJacobians(model, data, Q[k])
        pin.updateFramePlacements(model, data)
        applied = sum(
            pin.getFrameJacobian(model, data, f, pin.LOCAL).T @ run.clean.wrench[k, c] for c, f in enumerate(frames)
        )
        applied[robot.v_index] += run.clean.tau[k] if run.clean.tau is not None else 0.0
        worst = max(worst, float(np.max(np.abs(generalized - applied))))
    assert worst < 1e-3 * weight, f"rnea - J^T w - tau up to {worst:.3g} (weight {weight:.0f} N)"


def test_identification_recovers_mass_and_horizontal_com(config: RobotConfig, run: HumanoidRun) -> None:
    """Recovery on a plant that shares no code with the estimator: the total mass within 0.5 % (the URDF is
    further off) and the horizontal CoM within 2 mm of the truth, from the noisy sensors."""
    assert config.floating_base is not None
    regressor = FloatingBaseRegressor(config.build_floating_base())
    record = run.record
    samples = floating_samples(
        regressor, record.t, record.q, record.imu_quaternion, record.imu_gyro, record.wrench,
        imu_frame=config.floating_base.imu_frame, sole_frames=config.floating_base.sole_frames,
    )  # fmt: skip
    supports = [config.floating_base.sole_frames]
    base = structural_base_parameters(regressor, "base", supports=supports, standing=samples.Q[0])
    result = identify_floating_base(regressor, samples.Q, samples.V, samples.A, samples.F, method="wls", base=base)
    mass_true = run.theta_true[0::10].sum()
    assert abs(result.mass.value / mass_true - 1.0) < 5e-3
    assert abs(regressor.floating.total_mass / mass_true - 1.0) > 1e-2
    com_true = centre_of_mass(regressor, samples.Q[0], base, np.eye(base.n_base), run.theta_true).value
    np.testing.assert_allclose(result.com.value[:2], com_true[:2], atol=2e-3)


def test_rigid_plant_shares_no_code_with_the_estimator() -> None:
    """The rigid plant's modules import no MuJoCo and nothing of motor_ident.core: of motor_ident only the robot
    config and the record type (which the estimator reads too), the settings, errors and the shared sim modules."""
    allowed = {
        "motor_ident.errors",
        "motor_ident.schema",
        "motor_ident.io.robot_config",
        "motor_ident.io.floating_record",
        "motor_ident.sim.humanoid_common",
        "motor_ident.sim.urdf_xml",
    }
    for module in ("rigid_humanoid", "humanoid_common", "urdf_xml"):
        tree = ast.parse((REPO / "motor_ident" / "sim" / f"{module}.py").read_text())
        imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module}
        imported |= {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
        ours = {m for m in imported if m.startswith("motor_ident")}
        assert ours <= allowed, f"{module} imports {sorted(ours - allowed)}"
        assert "mujoco" not in imported


def test_rigid_plant_stands_on_both_feet() -> None:
    """Single-support phases are refused on the rigid plant, naming the setting."""
    with pytest.raises(ConfigError, match="single_support_phases"):
        replace(HumanoidSimConfig(plant="rigid"), single_support_phases=1)
    with pytest.raises(ConfigError, match="plant"):
        HumanoidSimConfig(plant="bullet")


def test_romeo_config_stands() -> None:
    """config/romeo.yaml: 31 joints, 320 parameters, its IMU on the base link and its soles flat."""
    config = load_robot_config("romeo")
    robot = rigid_humanoid_model(config, SIM)
    assert len(config.joints) == 31 and robot.theta.size == 320
    assert config.floating_base is not None
    imu = robot.model.frames[robot.model.getFrameId(config.floating_base.imu_frame)]
    assert robot.model.names[imu.parentJoint] == "root_joint"
