"""Write the realistic example logs of examples/arm_log/: what a robot's own logger produces.

Three recordings of the simulated 4-DoF arm (config valkyrie_arm) tracking two different random
Fourier trajectories under computed torque + PD control (the nominal model's feedforward), each
with the arm resting 2 s before and after the motion; the third (payload.csv) repeats the
identification run's motion with a 2 kg point payload at the last link's centre of mass, for
identifying the drive gains of the currents (``identify --payload-data``). The simulated arm is not its config's
nominal model: bodies 10-25 % heavier or lighter, rotors 20 % heavier, and a nearly hard
Coulomb friction with a Stribeck peak, stronger than the config's nominal friction.

The files look like a vendor logger's: headerless CSV, columns ``time [ms]``, then per axis
``position [deg], motor current [A], joint torque [N m]``; stamps every 8-13 ms on a nominal
10 ms. Deterministic: the same files on every run.

    .venv/bin/python tools/make_example_log.py [--out examples/arm_log]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from motor_ident.core.actuators.friction import FrictionShape
from motor_ident.core.estimation.drive_gains import payload_attachment, point_payload
from motor_ident.core.excitation.fourier import random_fourier_trajectory
from motor_ident.core.rigid_body.regressor import Regressor
from motor_ident.io.robot_config import load_robot_config
from motor_ident.sim.plant import PlantConfig, SimulatedRobot

ROBOT = "valkyrie_arm"
SEED = 17
REST_S = 2.0  # rest before and after the motion [s]
RAMP_S = 1.0  # smooth blend from rest into the trajectory and back [s]
TORQUE_CONSTANT = 0.12  # motor torque per ampere [N m/A], motor side
MASS_SCALE = (1.10, 1.15, 0.90, 1.25)  # true body / URDF body, per joint
ROTOR_SCALE = 1.2
TRUE_FRICTION = FrictionShape(kind="stribeck", smoothing_velocity=0.002, stribeck_velocity=0.05)
TRUE_FC = np.array([2.0, 1.6, 1.0, 1.1])  # Coulomb [N m]
TRUE_FV = np.array([1.1, 0.9, 0.5, 0.6])  # viscous [N m s/rad]
STATIC = 1.3  # static / Coulomb friction
PAYLOAD_KG = 2.0  # payload.csv: the identification motion with this mass at the last link
LOGGER_STEPS_MS = (8, 9, 10, 10, 10, 10, 11, 12, 13)  # the logger's jittered steps, median 10 ms


def _smoothstep(x: float) -> float:
    x = min(max(x, 0.0), 1.0)
    return x**3 * (10.0 - 15.0 * x + 6.0 * x * x)


def _dsmoothstep(x: float) -> float:
    x = min(max(x, 0.0), 1.0)
    return 30.0 * x * x * (1.0 - x) ** 2


def simulate(motion_s: float, seed: int, payload_kg: float = 0.0) -> dict[str, np.ndarray]:
    """One recording: t [s], q [rad], tau [N m], current [A] at jittered logger stamps.

    ``payload_kg``: a point mass at the last link's centre of mass (where ``identify --payload-data``
    assumes it by default).
    """
    config = load_robot_config(ROBOT)
    nominal = config.build_regressor()
    theta_nominal = config.nominal_parameters(nominal)
    robot = config.build_model()
    inertial = robot.inertial_parameters().reshape(robot.n, 10) * np.asarray(MASS_SCALE)[:, None]
    if payload_kg:
        joint, position = payload_attachment(robot)
        inertial[joint] += point_payload(payload_kg, position)
    robot = robot.with_inertial_parameters(inertial.ravel()).with_rotor_inertia(ROTOR_SCALE * robot.rotor_inertia)
    truth = Regressor(robot, [TRUE_FRICTION] * robot.n)
    friction = [np.array([fc, fv, STATIC * fc, STATIC * fc]) for fc, fv in zip(TRUE_FC, TRUE_FV)]
    rng = np.random.default_rng(seed)
    lower = robot.model.lowerPositionLimit[robot.q_index]
    upper = robot.model.upperPositionLimit[robot.q_index]
    centre = 0.5 * (lower + upper)
    trajectory = random_fourier_trajectory(rng, n=robot.n, base_frequency=0.2, velocity_amplitude=1.0, q0=centre)
    plant_config = PlantConfig(rate_hz=1000.0, substeps=2, torque_noise_std=0.08, seed=seed)
    plant = SimulatedRobot(truth, friction, plant_config, q0=centre)
    total = 2.0 * REST_S + motion_s
    steps = int(round(total * plant_config.rate_hz))
    kp, kd = 900.0, 60.0
    t_plant = np.arange(steps) / plant_config.rate_hz
    q_log = np.zeros((steps, robot.n))
    tau_log = np.zeros((steps, robot.n))
    for k, t in enumerate(t_plant):
        s = t - REST_S
        a, b = _smoothstep(s / RAMP_S), _smoothstep((motion_s - s) / RAMP_S)
        w = a * b
        dw = (_dsmoothstep(s / RAMP_S) * b - a * _dsmoothstep((motion_s - s) / RAMP_S)) / RAMP_S
        q_f, qd_f, qdd_f = (x[0] for x in trajectory.evaluate(np.array([max(s, 0.0)])))
        offset = q_f - centre
        q_ref = centre + w * offset
        qd_ref = w * qd_f + dw * offset
        qdd_ref = w * qdd_f + 2.0 * dw * qd_f  # the w'' term is small against these
        m = plant.measure()
        feedforward = nominal.predict(theta_nominal, q_ref[None], qd_ref[None], qdd_ref[None])[0]
        plant.set_effort(feedforward + kp * (q_ref - m.q) + kd * (qd_ref - m.qd))
        q_log[k], tau_log[k] = m.q, m.effort
        plant.step()
    # The logger: a stamp every 8-13 ms, each sample the newest 1 kHz measurement.
    stamps = [0]
    while True:
        nxt = stamps[-1] + int(rng.choice(LOGGER_STEPS_MS))
        if nxt >= steps:
            break
        stamps.append(nxt)
    idx = np.array(stamps)
    gear = np.asarray([j.gear_ratio for j in config.joint_parameters])
    current = tau_log[idx] / (gear * TORQUE_CONSTANT) + 0.01 * rng.standard_normal((idx.size, robot.n))
    return {"t": t_plant[idx], "q": q_log[idx], "tau": tau_log[idx], "current": current}


def write_vendor_csv(path: Path, rec: dict[str, np.ndarray], clock_ms: float) -> None:
    """Headerless: time [ms], then per axis position [deg], current [A], torque [N m]."""
    n = rec["q"].shape[1]
    cols = [rec["t"] * 1e3 + clock_ms]
    fmt = ["%.0f"]
    for j in range(n):
        cols += [np.rad2deg(rec["q"][:, j]), rec["current"][:, j], rec["tau"][:, j]]
        fmt += ["%.4f", "%.3f", "%.3f"]
    np.savetxt(path, np.column_stack(cols), delimiter=",", fmt=fmt)


def main() -> None:
    """Write examples/arm_log/{identification,validation,payload}.csv."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default="examples/arm_log", help="output directory")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs = (
        ("identification", 30.0, SEED, 5.1e6, 0.0),
        ("validation", 20.0, SEED + 1, 6.3e6, 0.0),
        ("payload", 30.0, SEED, 7.2e6, PAYLOAD_KG),
    )
    for name, motion_s, seed, clock, payload_kg in runs:
        rec = simulate(motion_s, seed, payload_kg)
        write_vendor_csv(out / f"{name}.csv", rec, clock)
        print(f"{out / f'{name}.csv'}: {rec['t'].size} samples, {rec['t'][-1]:.1f} s")


if __name__ == "__main__":
    main()
