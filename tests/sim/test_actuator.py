"""Actuator simulator and the procedures of Guedelha et al. 2021 on it: truth recovered at 100 Hz with sensor noise.

Experiments are shortened (10 s phase 1, 6 s phase 2) to keep the file fast; `motor-ident reproduce
guedelha` runs the longer ones.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from numpy.testing import assert_allclose

from motor_ident.io.robot_config import load_robot_config
from motor_ident.papers.guedelha.coupled import (
    feedforward_tracking,
    identify_joint_wise,
    identify_motor_wise,
    perturbed_coupling,
    run_group_experiments,
    worst_errors,
)
from motor_ident.papers.guedelha.protocol import ChainResult, ProtocolConfig, identify_uncoupled
from motor_ident.sim.actuator import ActuatorPlant, ActuatorSimConfig, oscillation, plant_from_config, simulate

PROTOCOL = ProtocolConfig(friction_duration=10.0, pwm_duration=6.0, sim=ActuatorSimConfig(seed=3))


@pytest.fixture(scope="module")
def leg() -> tuple[ActuatorPlant, list[ChainResult]]:
    """The right leg (Table 1 friction) identified joint by joint, all joints at once."""
    config = load_robot_config("icub_right_leg")
    plant = plant_from_config(config)
    return plant, identify_uncoupled(plant, config.joint_parameters[0].friction, PROTOCOL)


@pytest.fixture(scope="module")
def torso() -> dict[str, object]:
    """The torso group's motor-mode and joint-mode experiments."""
    config = load_robot_config("icub_torso")
    plant = plant_from_config(config)
    group = plant.transmission.groups[0]
    return {
        "plant": plant,
        "group": group,
        "shape": config.motor_drives()[0].friction,
        "motor": run_group_experiments(plant, group.name, mode="motor", protocol=PROTOCOL),
        "joint": run_group_experiments(plant, group.name, mode="joint", protocol=PROTOCOL),
    }


def test_static_friction_holds_a_small_pwm() -> None:
    """A duty whose torque is below sigma_s (both directions) leaves the knee at rest; a larger one moves it."""
    plant = plant_from_config(load_robot_config("icub_right_leg"))
    knee = plant.transmission.motors.index("r_knee")
    chain = plant.chains[knee]
    config = ActuatorSimConfig(seed=1)
    below = (chain.breakaway[0] - chain.motor.tau_0) * 0.8 / chain.motor.k_pwm
    schedule = np.zeros(6)
    schedule[knee] = below
    record = simulate(plant, duration=1.0, pwm=lambda t: np.tile(schedule, (t.size, 1)), config=config)
    assert np.all(record.true_qd_motor[:, knee] == 0.0) and np.all(record.stuck[:, knee])
    schedule[knee] = 3.0 * below
    record = simulate(plant, duration=1.0, pwm=lambda t: np.tile(schedule, (t.size, 1)), config=config)
    assert record.true_qd_motor[-1, knee] > 1e-3


def test_chain_equation_holds_on_true_signals() -> None:
    """D qdd = K_pwm PWM + tau_0 - back_emf qd - friction - T' tau_joint on the noise-free torso record."""
    plant = plant_from_config(load_robot_config("icub_torso"))
    tr = plant.transmission
    reference = oscillation(tr.T[:, 1], v_max=0.1, v_min=0.05, period=3.0)
    pwm = lambda t: 0.2 * np.sin(2.0 * np.pi * 0.7 * t)[:, None] * np.ones(3)  # noqa: E731
    sim = ActuatorSimConfig(substeps=20, seed=2)
    record = simulate(plant, duration=3.0, reference=reference, pwm=pwm, config=sim)
    moving = ~record.stuck.any(axis=1)
    k = np.array([c.motor.k_pwm for c in plant.chains])
    tau_0 = np.array([c.motor.tau_0 for c in plant.chains])
    emf = np.array([c.motor.back_emf for c in plant.chains])
    lhs = plant.reflected_inertia * record.qdd_motor  # acceleration noise 0.05 rad/s^2 -> 0.005 N m
    drive = k * record.pwm + tau_0 - emf * record.true_qd_motor
    rhs = drive - record.true_friction - tr.motor_torque(record.true_tau_joint)
    residual = (lhs - rhs)[moving]
    assert np.sqrt(np.mean(drive[moving] ** 2)) > 1.0  # the balance is between N m-sized terms
    assert np.sqrt(np.mean(residual**2)) < 0.01


def test_locked_motors_stay_put(torso: dict[str, object]) -> None:
    """In motor mode only the tested motor moves; the joints move along its column of T."""
    records = torso["motor"]
    for c, record in enumerate(records.phase1):
        others = np.delete(record.true_qd_motor, c, axis=1)
        assert np.all(others == 0.0)
        assert np.abs(record.true_qd_motor[:, c]).max() > 0.1


def test_leg_truth_recovered(leg: tuple[ActuatorPlant, list[ChainResult]]) -> None:
    """sigma_s+, sigma_s- and K_v within 5 %, K_pwm* within 2 % on every leg joint (100 Hz, noisy)."""
    plant, results = leg
    friction, gain = worst_errors(results, plant)
    assert friction < 0.05, f"worst friction error {friction:.3%}"
    assert gain < 0.02, f"worst K_pwm* error {gain:.3%}"
    for result in results:
        assert 1.0 < result.stribeck.condition_number < 1e12 and 1.0 < result.motor_fit.condition_number < 1e6


def test_stribeck_beats_coulomb_viscous_near_rest(leg: tuple[ActuatorPlant, list[ChainResult]]) -> None:
    """Below 3 deg/s the Stribeck residual is under half the Coulomb + viscous one; on the knee the
    Coulomb + viscous K_c sits above the Stribeck K_c, as in Guedelha et al. Fig. 10."""
    plant, results = leg
    for result in results:
        rmse = result.low_velocity_rmse
        assert rmse["stribeck"] < 0.5 * rmse["coulomb_viscous"], (result.motor, rmse)
        assert rmse["stribeck_zero_slope"] < rmse["coulomb_viscous"], (result.motor, rmse)
    knee = results[plant.transmission.motors.index("r_knee")]
    assert knee.coulomb_viscous.value("fc") > knee.stribeck.value("fc")


def test_torso_motor_wise_truth_recovered(torso: dict[str, object]) -> None:
    """Motor by motor (others braked), with T exact: friction within 5 %, K_pwm* within 2 %."""
    results = identify_motor_wise(torso["motor"], torso["shape"], PROTOCOL, coupling=torso["group"].T)
    friction, gain = worst_errors(results, torso["plant"])
    assert friction < 0.05 and gain < 0.02, (friction, gain)


def test_coupling_error_spoils_joint_wise_not_motor_wise(torso: dict[str, object]) -> None:
    """With every coupling ratio 5 % off, joint-wise K_pwm* errs by > 3 %; motor-wise, whose column is
    measured from the motion of the one moving motor, stays within 2 % (Guedelha et al. sec. 3.4.2)."""
    group, plant, shape = torso["group"], torso["plant"], torso["shape"]
    wrong = perturbed_coupling(group, ratio_error=0.05)
    assert_allclose(np.abs(wrong[:2, 1:]), 0.55 * 1.05)
    joint_wise = identify_joint_wise(torso["joint"], shape, PROTOCOL, coupling=wrong)
    motor_wise = identify_motor_wise(torso["motor"], shape, PROTOCOL)
    exact_joint_wise = identify_joint_wise(torso["joint"], shape, PROTOCOL, coupling=group.T)
    assert worst_errors(exact_joint_wise, plant)[1] < 0.02
    assert worst_errors(joint_wise, plant)[1] > 0.03
    friction, gain = worst_errors(motor_wise, plant)
    assert friction < 0.05 and gain < 0.02, (friction, gain)
    for result in motor_wise:
        assert_allclose(result.column, group.T[:, group.motors.index(result.motor)], atol=0.01)


def test_friction_compensation_cuts_torque_tracking_error(leg: tuple[ActuatorPlant, list[ChainResult]]) -> None:
    """PWM feedforward from the identified models tracks a joint torque at least 3x better with
    friction compensation than without, while the external actuator moves the leg."""
    plant, results = leg
    runs = feedforward_tracking(plant, results, replace(PROTOCOL.sim, seed=5), duration=8.0)
    for _, record in runs.values():
        assert np.all(np.isfinite(record.pwm)) and np.all(np.abs(record.pwm) <= 1.0)
    rmse = {compensate: error for compensate, (error, _) in runs.items()}
    assert rmse[True] * 3.0 < rmse[False], rmse
