"""The independent plant (MuJoCo) against pinocchio, and what identification recovers from it.

All tests are ROS-free. Pinocchio appears here only as the independent reference: the plant
under test never calls it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import mujoco
import numpy as np
import pytest
from numpy.testing import assert_allclose

from motor_ident.core.rigid_body.model import inverse_dynamics, random_states
from motor_ident.errors import ConfigError
from motor_ident.io.robot_config import RobotConfig, load_robot_config
from motor_ident.sim.engines import make_plant, without_unmodelled_effects
from motor_ident.sim.mujoco_plant import MujocoRobot
from motor_ident.sim.plant import PlantConfig

ROBOTS = ("valkyrie_arm", "szabo_3dof", "icub_torso", "icub_right_leg", "elastic_arm6")
QUIET = {"torque_noise_std": 0.0, "velocity_noise_std": 0.0}


def with_friction(config: RobotConfig, scale_dry: float, scale_viscous: float) -> RobotConfig:
    """``config`` with its coulomb_viscous friction values scaled (dry, viscous)."""
    drives = tuple(
        replace(j, friction_values=(scale_dry * j.friction_values[0], scale_viscous * j.friction_values[1]))
        for j in config.joint_parameters
    )
    return replace(config, joint_parameters=drives)


@pytest.mark.parametrize("robot", ROBOTS)
def test_truth_holds_the_urdf_inertias_as_pinocchio_reads_them(robot: str) -> None:
    """MuJoCo's own reading of the URDF, summed per joint, equals pinocchio's inertial parameters and armature."""
    config = load_robot_config(robot)
    regressor = config.build_regressor()
    truth = make_plant(config, PlantConfig(), engine="mujoco").truth
    nominal = config.nominal_parameters(regressor)
    assert truth.shape == nominal.shape
    rigid = slice(0, regressor.layout.reflected_inertia.stop)
    assert_allclose(truth[rigid], nominal[rigid], atol=1e-10, err_msg=robot)


def test_truth_writes_each_friction_model_in_the_estimators_terms() -> None:
    """coulomb_viscous as configured; stribeck [fc, fv, fc, fc]; arctan [tau_s + tau_sc, 0, tau_v]."""
    for robot in ("valkyrie_arm", "icub_right_leg", "szabo_3dof"):
        config = load_robot_config(robot)
        regressor = config.build_regressor()
        truth = make_plant(config, PlantConfig(), engine="mujoco").truth
        for joint, drive, cols in zip(config.joints, config.joint_parameters, regressor.layout.friction, strict=True):
            v = np.asarray(drive.friction_values)
            kind = drive.friction.kind.value
            if kind == "coulomb_viscous":
                expected = v
            elif kind == "stribeck":
                expected = np.array([v[0], v[1], v[0], v[0]])
            else:
                expected = np.array([v[0] + v[1], 0.0, v[2]])
            assert_allclose(truth[cols], expected, atol=1e-12, err_msg=f"{robot} {joint}")


@pytest.mark.parametrize("robot", ROBOTS)
def test_mujoco_inverse_dynamics_equals_rnea(robot: str, rng: np.random.Generator) -> None:
    """Without friction, mj_inverse on the plant's model equals pinocchio's RNEA (armature included)."""
    config = load_robot_config(robot)
    frictionless = replace(
        config, joint_parameters=tuple(replace(j, friction_values=None) for j in config.joint_parameters)
    )
    plant = make_plant(frictionless, without_unmodelled_effects(PlantConfig(**QUIET)), engine="mujoco")
    assert isinstance(plant, MujocoRobot)
    plant.model.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_LIMIT  # random states leave the joint ranges
    robot_model = config.build_model()
    data = robot_model.create_data()
    q, v, a = random_states(robot_model, rng, 20)
    model, mj = plant.model, mujoco.MjData(plant.model)
    qpos = [model.jnt_qposadr[model.joint(j).id] for j in config.joints]
    dof = [model.jnt_dofadr[model.joint(j).id] for j in config.joints]
    for k in range(q.shape[0]):
        mj.qpos[qpos], mj.qvel[dof], mj.qacc[dof] = q[k], v[k], a[k]
        mujoco.mj_inverse(model, mj)
        expected = inverse_dynamics(robot_model, data, q[k], v[k], a[k])
        assert_allclose(mj.qfrc_inverse[dof], expected, atol=1e-9 * (1.0 + np.abs(expected).max()), err_msg=robot)


def test_forward_simulation_follows_the_pinocchio_plant() -> None:
    """Effects off, viscous friction only, same torques: both engines integrate the same motion.

    The integrators differ (pinocchio: semi-implicit Euler; MuJoCo: implicitfast), so the
    trajectories agree to the integration error, far below the motion itself."""
    config = with_friction(load_robot_config("valkyrie_arm"), 0.0, 1.0)
    settings = without_unmodelled_effects(PlantConfig(**QUIET, substeps=4))
    plants = [make_plant(config, settings, engine=engine) for engine in ("pinocchio", "mujoco")]
    assert isinstance(plants[1], MujocoRobot)
    plants[1].model.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_LIMIT  # pinocchio's plant has no hard stops
    t = np.arange(1500) / settings.rate_hz
    tau = 2.0 * np.sin(2.0 * np.pi * np.outer(t, [0.5, 0.7, 1.1, 1.3])) + np.array([0.0, 0.0, 0.0, 3.0])
    paths = np.zeros((2, t.size, 4))
    measured = np.zeros((2, t.size, 4))
    for k in range(t.size):
        for i, plant in enumerate(plants):
            plant.set_effort(tau[k])
            plant.step()
            m = plant.measure()
            paths[i, k], measured[i, k] = m.q, m.effort
    travel = np.ptp(paths[0], axis=0)
    assert np.all(travel > 0.2), travel  # the arm moves
    assert np.abs(paths[1] - paths[0]).max() < 2e-3 * travel.max(), np.abs(paths[1] - paths[0]).max(axis=0)
    assert_allclose(measured[1], tau, atol=1e-12)  # the measured joint torque is what was applied


def test_the_command_arrives_one_sample_late_and_saturated() -> None:
    """Default delay of one sample; the applied torque is clamped to the URDF's effort limits."""
    config = load_robot_config("valkyrie_arm")
    plant = make_plant(config, PlantConfig(**QUIET), engine="mujoco")
    first, second = np.array([1.0, -2.0, 3.0, 1000.0]), np.array([-1.0, 2.0, -3.0, 4.0])
    plant.set_effort(first)
    plant.step()
    assert_allclose(plant.measure().effort, 0.0)
    plant.set_effort(second)
    plant.step()
    assert_allclose(plant.measure().effort, [1.0, -2.0, 3.0, 65.0])
    immediate = make_plant(
        config,
        replace(PlantConfig(**QUIET), mujoco=replace(PlantConfig().mujoco, mujoco_command_delay_samples=0)),
        engine="mujoco",
    )
    immediate.set_effort(second)
    immediate.step()
    assert_allclose(immediate.measure().effort, second)


def test_measured_positions_are_encoder_counts() -> None:
    """q is quantised to the encoder resolution; the rotor signals follow the config's transmission."""
    config = load_robot_config("valkyrie_arm")
    plant = make_plant(config, PlantConfig(encoder_counts_per_rev=4096), engine="mujoco")
    for _ in range(50):
        plant.step()
    m = plant.measure()
    counts = m.q / (2.0 * np.pi / 4096)
    assert_allclose(counts, np.round(counts), atol=1e-9)
    assert np.all(np.abs(m.q - plant.q) <= np.pi / 4096 + 1e-12)
    assert_allclose(m.motor_position, 100.0 * plant.q, rtol=1e-12)


def test_the_dry_friction_holds_a_joint_below_its_level() -> None:
    """MuJoCo's frictionloss is a (soft) constraint: below the dry level a weightless joint only creeps
    (MuJoCo's default constraint softness), above it the joint slides."""
    config = replace(with_friction(load_robot_config("valkyrie_arm"), 1.0, 1.0), gravity=(0.0, 0.0, 0.0))
    settings = without_unmodelled_effects(PlantConfig(**QUIET))
    plant = make_plant(config, settings, engine="mujoco")
    start = plant.q
    plant.set_effort([0.0, 0.0, 0.0, 0.5])  # elbow: dry level 0.8 N m
    for _ in range(500):
        plant.step()
    creep = plant.q[3] - start[3]
    assert 0.0 <= creep < 5e-3, plant.q - start
    plant.set_effort([0.0, 0.0, 0.0, 1.6])
    for _ in range(500):
        plant.step()
    assert plant.q[3] - start[3] > 20.0 * creep, plant.q - start


def test_a_payload_moves_the_truth_and_the_motion() -> None:
    """add_payload: the last body's mass and first moment in `truth` grow by the payload's; the arm sags."""
    config = load_robot_config("valkyrie_arm")
    plant = make_plant(config, PlantConfig(**QUIET), engine="mujoco")
    before = plant.truth.copy()
    q_before = plant.q
    plant.add_payload(2.0, [0.0, 0.0, -0.25])
    body = slice(30, 40)
    assert_allclose(plant.truth[body][:4] - before[body][:4], [2.0, 0.0, 0.0, -0.5], atol=1e-12)
    assert_allclose(plant.truth[:30], before[:30], atol=1e-12)
    assert_allclose(plant.q, q_before)  # the state carries over
    for _ in range(100):
        plant.step()
    assert np.all(np.isfinite(plant.q))


def test_what_the_mujoco_engine_refuses() -> None:
    """PWM commands, directional friction and unknown engines are refused with what to change."""
    config = load_robot_config("valkyrie_arm")
    with pytest.raises(ConfigError, match="command_interface = 'effort'"):
        make_plant(config, PlantConfig(command_interface="pwm"), engine="mujoco")
    with pytest.raises(ConfigError, match="engine = 'bullet'"):
        make_plant(config, PlantConfig(), engine="bullet")
    with pytest.raises(ConfigError, match="engine"):
        PlantConfig(engine="bullet")
    from motor_ident.core.actuators.friction import FrictionShape

    directional = replace(
        config,
        joint_parameters=tuple(
            replace(j, friction=FrictionShape(kind="directional"), friction_values=None)
            for j in config.joint_parameters
        ),
    )
    with pytest.raises(ConfigError, match="directional"):
        make_plant(directional, PlantConfig(), engine="mujoco")


def test_the_engine_setting_reaches_the_closed_loop() -> None:
    """sim_robot's ``engine`` parameter chooses the closed loop's plant."""
    from motor_ident.scenario.closed_loop import build_closed_loop

    loop = build_closed_loop("valkyrie_arm", {"sim_robot": {"engine": "mujoco"}})
    assert isinstance(loop.sim, MujocoRobot)
    for _ in range(20):
        m, _ = loop.step()
    assert np.all(np.isfinite(m.effort))


# Tolerances of `test_identification_recovers_the_plant`, per engine: measured values in the comments
# (20 s of the valkyrie_arm scenario's excitation, 30 % held out).
RECOVERY = {
    # engine: (held-out R2 all samples, |fc| rel, |fv| rel, moving: |fc|, |fv|, |first moments| rel, model torque [N m])
    "pinocchio": (0.985, 0.02, 0.1, 0.02, 0.1, 0.02, 0.015),  # 0.987, 0.3 %, 3 %, 0.2 %, 2 %, 0.4 %, 0.005
    "mujoco": (0.97, 0.1, 0.4, 0.03, 0.3, 0.03, 0.04),  # 0.977, 5 %, 24 %, 1 %, 18 %, 0.5 %, 0.023
}


@pytest.mark.parametrize("engine", ["pinocchio", "mujoco"])
def test_identification_recovers_the_plant(engine: str) -> None:
    """identify on the scenario's excitation tracked by each plant (unmodelled effects on): held-out R2,
    friction and the gravity terms within the engine's tolerances.

    "moving" keeps the samples where every joint is faster than 0.05 rad/s: on MuJoCo the joints
    stick at velocity reversals (8-10 % of the samples), which no smooth friction model explains."""
    from motor_ident.core.estimation.identification import identify
    from motor_ident.sim.tracked_excitation import tracked_excitation_record

    r2_min, fc_all, fv_all, fc_moving, fv_moving, moments, torque = RECOVERY[engine]
    config = load_robot_config("valkyrie_arm")
    regressor = config.build_regressor()
    record, _, plant = tracked_excitation_record(
        config, PlantConfig(torque_noise_std=0.1), engine=engine, duration=20.0, velocity_amplitude=1.2, seed=3
    )
    record = record.with_derivatives()
    assert record.qd is not None and record.qdd is not None
    moving = np.all(np.abs(record.qd) > 0.05, axis=1)
    for subset, fc_tol, fv_tol in ((record.t > 0.5, fc_all, fv_all), (moving, fc_moving, fv_moving)):
        q, qd, qdd, tau = (x[subset] for x in (record.q, record.qd, record.qdd, record.tau))
        result = identify(
            regressor, q, qd, qdd, tau, theta_nominal=config.nominal_parameters(regressor), validate_fraction=0.3
        )
        names, true_base = result.base.expressions(), result.base.to_base(plant.truth)
        error = {
            name: (result.fit.theta[i] - true_base[i]) / true_base[i] for i, name in enumerate(names) if true_base[i]
        }
        for joint in config.joints:
            assert abs(error[f"{joint}.fc"]) < fc_tol, (engine, joint, error[f"{joint}.fc"])
            assert abs(error[f"{joint}.fv"]) < fv_tol, (engine, joint, error[f"{joint}.fv"])
        if subset is moving:
            gravity = [e for name, e in error.items() if name.startswith(("upper_arm_link.mz", "forearm_link.mz"))]
            assert len(gravity) == 2 and max(abs(e) for e in gravity) < moments, (engine, gravity)
            k = slice(result.n_train, None)
            model = regressor.predict(result.theta, q[k], qd[k], qdd[k]) - regressor.predict(
                plant.truth, q[k], qd[k], qdd[k]
            )
            assert np.all(np.sqrt(np.mean(model**2, axis=0)) < torque), (engine, np.sqrt(np.mean(model**2, axis=0)))
        else:
            assert result.heldout is not None and min(result.heldout.r2) >= r2_min, (engine, result.heldout.r2)


MOTOR_IDENT = str(Path(sys.executable).parent / "motor-ident")
RECORD_S = 10.0


def motor_ident(*args: str) -> None:
    """Run ``motor-ident ARGS`` as a user would; fail with its output."""
    done = subprocess.run([MOTOR_IDENT, *args], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
def test_record_on_mujoco_then_identify(tmp_path: Path) -> None:
    """``record --engine mujoco`` then ``identify`` the bag: what a user gets from the scenario's closed loop.

    The loop starts from the deliberately wrong nominal model (no friction) and the gate stays
    closed on this plant, so the joints stick at most velocity reversals: measured (10 s, 30 %
    held out) held-out R2 0.955-0.968 per joint and Coulomb levels within 19 %, where the
    pinocchio plant gives R2 >= 0.987 and 0.5 %. Viscous coefficients are not recovered from
    this record (errors up to 150 %).
    """
    bag, fit_json = tmp_path / "run", tmp_path / "fit.json"
    motor_ident("record", "--engine", "mujoco", "--duration", str(RECORD_S), "--out", str(bag))
    motor_ident("identify", str(bag), "--robot", "valkyrie_arm", "--validate", "0.3", "--json", str(fit_json))
    fit = json.loads(fit_json.read_text())
    config = load_robot_config("valkyrie_arm")
    names = list(config.build_regressor().names)
    truth = make_plant(config, PlantConfig(), engine="mujoco").truth
    assert min(fit["heldout_r2_per_joint"]) >= 0.93, fit["heldout_r2_per_joint"]
    for joint in config.joints:
        fc, true_fc = fit["base_parameters"][f"{joint}.fc"], truth[names.index(f"{joint}.fc")]
        assert abs(fc - true_fc) < 0.3 * true_fc, (joint, fc, true_fc)
