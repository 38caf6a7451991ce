"""The simulated robot's PWM actuation: motor chains through the coupling, against independent results.

All tests are ROS-free. The waist of config/icub_torso.yaml, gravity off where a closed form needs it.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from numpy.testing import assert_allclose

from motor_ident.errors import ConfigError
from motor_ident.io.robot_config import RobotConfig, load_robot_config
from motor_ident.sim.actuator import ActuatorSimConfig, plant_from_config, random_pwm, simulate
from motor_ident.sim.motor_chain import motor_chains
from motor_ident.sim.plant import PlantConfig, SimulatedRobot, simulated_robot

QUIET = {"torque_noise_std": 0.0, "velocity_noise_std": 0.0, "encoder_counts_per_rev": 0}


@pytest.fixture(scope="module")
def weightless() -> RobotConfig:
    """icub_torso without gravity."""
    return replace(load_robot_config("icub_torso"), gravity=(0.0, 0.0, 0.0))


def pwm_robot(config: RobotConfig, **settings: object) -> SimulatedRobot:
    """The PWM-driven plant of ``config`` at rest at q = 0, noise off unless given."""
    return simulated_robot(config, PlantConfig(command_interface="pwm", **{**QUIET, **settings}), q0=np.zeros(3))


def test_pwm_plant_matches_the_actuator_simulation(weightless) -> None:
    """Small motions (M(q) ~ M(0)): the plant, with pinocchio's M(q) and Coriolis, follows
    `motor_ident.sim.actuator.simulate` (constant link inertia) driven by the same duty cycles,
    stiction phases included."""
    n_samples = 1500
    schedule = random_pwm(3, amplitude=0.3, seed=4)
    duty = schedule(np.arange(n_samples) / 1000.0)
    quiet = ActuatorSimConfig(
        rate_hz=1000.0,
        substeps=2,
        torque_noise_std=0.0,
        joint_velocity_noise_std=0.0,
        motor_velocity_noise_std=0.0,
        acceleration_noise_std=0.0,
        encoder_counts_per_rev=0,
    )
    record = simulate(plant_from_config(weightless), duration=n_samples / 1000.0, pwm=schedule, config=quiet)
    sim = pwm_robot(weightless)
    q, tau = np.zeros((n_samples, 3)), np.zeros((n_samples, 3))
    for k in range(n_samples):
        sim.set_pwm(duty[k])
        sim.step()
        q[k], tau[k] = sim.q, sim.tau_actuator
    assert np.all(record.stuck.mean(axis=0) > 0.02)  # every motor stuck at times
    assert np.all(np.ptp(q, axis=0) > 0.03)
    assert np.max(np.abs(q - record.q_joint)) < 1e-3 * np.max(np.abs(record.q_joint))
    error = np.sqrt(np.mean((tau - record.true_tau_joint) ** 2, axis=0))
    assert np.all(error < 0.06 * np.sqrt(np.mean(record.true_tau_joint**2, axis=0))), error


def test_constant_duty_spins_the_yaw_motor_at_its_steady_velocity(weightless) -> None:
    """Motor 0B4M0 drives the yaw 1:1 (T's first column): a constant duty d settles at
    (K_pwm* d + tau_0 - fc) / (fv + back_emf); the motor torque reported is K_pwm* d + tau_0 - back_emf v
    at the rotor; at constant speed the yaw takes no torque (pitch and roll only the chest's centrifugal
    pull, < 1e-3 N m), the other motors stay stuck."""
    _, chains = motor_chains(weightless)
    chain = chains[0]
    fc, fv = chain.friction_values[:2]
    d = 0.5
    v_ss = (chain.motor.k_pwm * d + chain.motor.tau_0 - fc) / (fv + chain.motor.back_emf)
    sim = pwm_robot(weightless)
    for _ in range(1000):
        sim.set_pwm([d, 0.0, 0.0])
        sim.step()
    m = sim.measure()
    assert_allclose(m.qd, [0.0, 0.0, v_ss], atol=1e-9, rtol=1e-9)
    rho = 100.0
    assert_allclose(m.motor_velocity, rho * np.array([v_ss, 0.0, 0.0]), atol=1e-7)
    tau_drive = chain.motor.k_pwm * d + chain.motor.tau_0 - chain.motor.back_emf * v_ss
    assert m.motor_effort[0] * rho == pytest.approx(tau_drive, rel=1e-9)
    assert abs(m.effort[2]) < 1e-9 and np.max(np.abs(m.effort)) < 1e-3


def test_static_friction_holds_a_small_duty(weightless) -> None:
    """Motor 0B3M0 (breakaway 1.6 N m) stays at rest at duty 0.02 (1.15 N m) and moves at 0.05 (2.95 N m)."""
    for duty, moves in ((0.02, False), (0.05, True)):
        sim = pwm_robot(weightless)
        for _ in range(200):
            sim.set_pwm([0.0, duty, 0.0])
            sim.step()
        assert bool(np.max(np.abs(sim.q)) > 1e-4) is moves, (duty, sim.q)


def test_measurements_go_through_the_transmission(rng) -> None:
    """Rotor encoders rho T^-1 q and rho T^-1 qd in the config's motor order; with effort commands the
    motor torque at the rotor is T' tau / rho, what the joints take."""
    T = np.array([[0.0, 0.55, 0.55], [0.0, 0.55, -0.55], [1.0, -0.25, 0.25]])
    config = load_robot_config("icub_torso")
    for interface in ("effort", "pwm"):
        sim = simulated_robot(config, PlantConfig(command_interface=interface, **QUIET))
        assert sim.transmission.motors == ("m_0B4M0", "m_0B3M0", "m_0B3M1")
        command = rng.uniform(-0.5, 0.5, 3)
        for _ in range(50):
            apply = sim.set_effort if interface == "effort" else sim.set_pwm
            apply(command)
            sim.step()
        m = sim.measure()
        assert_allclose(m.motor_position, 100.0 * np.linalg.solve(T, sim.q), rtol=1e-12)
        assert_allclose(m.motor_velocity, 100.0 * np.linalg.solve(T, m.qd), rtol=1e-12)
        if interface == "effort":
            assert_allclose(m.motor_effort, T.T @ command / 100.0, rtol=1e-12)


def test_each_plant_takes_only_its_command_interface() -> None:
    """A PWM plant refuses joint torques and an effort plant duty cycles; PWM needs every motor's data."""
    config = load_robot_config("icub_torso")
    with pytest.raises(ConfigError, match="command_interface = 'pwm'"):
        simulated_robot(config, PlantConfig(command_interface="pwm")).set_effort(np.zeros(3))
    with pytest.raises(ConfigError, match="command_interface = 'effort'"):
        simulated_robot(config, PlantConfig()).set_pwm(np.zeros(3))
    with pytest.raises(ConfigError, match="motor 'shoulder_extensor'.*'motor:' block"):
        simulated_robot(load_robot_config("valkyrie_arm"), PlantConfig(command_interface="pwm"))
    with pytest.raises(ConfigError, match="command_interface = 'current'"):
        PlantConfig(command_interface="current")
