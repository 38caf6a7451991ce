"""Szabó & Szádeczky-Kardoss's identification data recorded on a simulated plant (``--engine``).

The paper builds its data from the model itself (Simulink, joint-angle noise negligible): torques
of the exact trajectory. `record_tracking` instead runs the ``szabo_3dof`` arm on a plant of
`motor_ident.sim.engines.make_plant` (``mujoco``: independent dynamics and friction, command delay,
encoder quantisation), tracking the excitation with computed torque (the config's nominal model,
PD in acceleration), and returns what its sensors report, downsampled to the identification rate: the
measured positions and velocities, accelerations by Savitzky-Golay differentiation of the
positions, and the measured joint torque without noise (the Monte Carlo adds the paper's noise).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from motor_ident.core.estimation.signals import savgol_derivatives
from motor_ident.core.excitation.fourier import FourierTrajectory
from motor_ident.core.rigid_body.model import inverse_dynamics
from motor_ident.io.robot_config import load_robot_config
from motor_ident.sim.engines import make_plant
from motor_ident.sim.plant import PlantConfig

FloatArray = NDArray[np.float64]

KP = 100.0  # tracking gains in acceleration [1/s^2], [1/s] (10 rad/s, critically damped)
KD = 20.0
PLANT_RATE_HZ = 1000.0
DERIVATIVE_WINDOW_S = 0.05


@dataclass(frozen=True, eq=False)
class PlantRecord:
    """Identification data from a plant: q, qd, qdd, tau (N, n) and the plant's truth (p,) in the regressor's layout."""

    q: FloatArray
    qd: FloatArray
    qdd: FloatArray
    tau: FloatArray
    truth: FloatArray
    tracking_rms: float


def record_tracking(
    robot: str, trajectory: FourierTrajectory, duration: float, rate: float, engine: str
) -> PlantRecord:
    """Track ``trajectory`` for ``duration`` [s] on the ``engine`` plant; samples at ``rate`` [Hz] (module doc).

    The record starts after one period of settling from rest on the trajectory's start.
    """
    config = load_robot_config(robot)
    regressor = config.build_regressor()
    model = regressor.robot
    data = model.create_data()
    theta = config.nominal_parameters(regressor)
    plant = make_plant(
        config,
        PlantConfig(rate_hz=PLANT_RATE_HZ, torque_noise_std=0.0, velocity_noise_std=0.0, engine=engine),
        q0=trajectory.evaluate(np.zeros(1))[0][0],
    )
    decimation = int(round(PLANT_RATE_HZ / rate))
    settle = int(round(PLANT_RATE_HZ / trajectory.base_frequency))
    steps = settle + int(round(duration * PLANT_RATE_HZ))
    t_all = np.arange(steps) / PLANT_RATE_HZ
    q_ref, qd_ref, qdd_ref = trajectory.evaluate(t_all)
    q_rec, qd_rec, tau_rec = [], [], []
    error = []
    for k in range(steps):
        m = plant.measure()
        if k >= settle and (k - settle) % decimation == 0:
            q_rec.append(m.q)
            qd_rec.append(m.qd)
            tau_rec.append(m.effort)
            error.append(q_ref[k] - m.q)
        qdd_command = qdd_ref[k] + KP * (q_ref[k] - m.q) + KD * (qd_ref[k] - m.qd)
        tau = inverse_dynamics(model, data, m.q, m.qd, qdd_command) + regressor.friction_torque(qd_ref[k], theta)
        plant.set_effort(tau)
        plant.step()
    t = np.arange(len(q_rec)) / rate
    q, qd, qdd = savgol_derivatives(t, np.asarray(q_rec), window_s=DERIVATIVE_WINDOW_S)
    return PlantRecord(
        q=q,
        qd=np.asarray(qd_rec),
        qdd=qdd,
        tau=np.asarray(tau_rec),
        truth=np.asarray(plant.truth, dtype=float),
        tracking_rms=float(np.sqrt(np.mean(np.square(error)))),
    )
