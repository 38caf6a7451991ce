"""An excitation trajectory tracked by a simulated robot and recorded through its sensors.

Where `motor_ident.sim.synthetic.excitation_record` computes exact torques from the estimator's
own model, `tracked_excitation_record` drives a plant of `motor_ident.sim.engines.make_plant` (the
``mujoco`` engine: a robot the estimator was not written against) along a Fourier excitation
with computed-torque feedback on the robot config's nominal model, and records what its sensors
measure: quantised positions, noisy velocities and joint torques. Accelerations are left to the
record's differentiation, as for data from a robot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from motor_ident.core.excitation.fourier import FourierTrajectory, random_fourier_trajectory
from motor_ident.errors import ConfigError
from motor_ident.io.data import JointRecord
from motor_ident.sim.engines import Plant, make_plant
from motor_ident.sim.plant import PlantConfig

if TYPE_CHECKING:
    from motor_ident.io.robot_config import RobotConfig


def tracked_excitation_record(
    config: RobotConfig,
    plant_config: PlantConfig,
    *,
    engine: str | None = None,
    duration: float = 30.0,
    trajectory: FourierTrajectory | None = None,
    velocity_amplitude: float | ArrayLike = 1.0,
    kp: float = 400.0,
    kd: float = 40.0,
    seed: int = 0,
) -> tuple[JointRecord, FourierTrajectory, Plant]:
    """Track an excitation on a simulated robot and record its sensors at the plant's rate.

    The command is ``tau = Y(q, qd, qdd_ref + kp (q_ref - q) + kd (qd_ref - qd)) theta_nominal``
    (the config's nominal model: URDF inertias, rotor inertias and friction), measured state in,
    saturated by the plant to its effort limits.

    Args:
        config: the robot config (the TRUE robot; the controller uses its nominal model too).
        plant_config: the plant's settings (rate, noise, ``mujoco_*`` effects).
        engine: ``pinocchio`` or ``mujoco`` (``plant_config.engine`` when None).
        duration: record length [s].
        trajectory: the motion; a random 5-harmonic Fourier series at 0.2 Hz around the middle of
            the joint limits when None.
        velocity_amplitude: bound on the random trajectory's joint speed [rad/s].
        kp, kd: feedback gains of the commanded acceleration [1/s^2], [1/s].
        seed: seeds the random trajectory (the plant's noise follows ``plant_config.seed``).

    Returns:
        The record (t, q, qd, tau = measured joint torque; qdd None), the trajectory and the plant
        (its `truth` is what identification should find).

    Raises:
        ConfigError: ``duration`` <= 0, or what `make_plant` raises.
    """
    if not duration > 0.0:
        raise ConfigError(f"duration = {duration!r}: expected > 0 seconds")
    regressor = config.build_regressor()
    theta = config.nominal_parameters(regressor)
    if trajectory is None:
        start = make_plant(config, plant_config, engine=engine).q  # the middle of the joint limits
        trajectory = random_fourier_trajectory(
            np.random.default_rng(seed),
            n=len(config.joints),
            base_frequency=0.2,
            velocity_amplitude=velocity_amplitude,
            q0=start,
        )
    q0 = trajectory.evaluate([0.0])[0][0]
    plant = make_plant(config, plant_config, engine=engine, q0=q0)
    steps = int(round(duration / plant.dt))
    n = len(config.joints)
    t, q, qd, tau = np.zeros(steps), np.zeros((steps, n)), np.zeros((steps, n)), np.zeros((steps, n))
    for k in range(steps):
        m = plant.measure()
        q_ref, qd_ref, qdd_ref = (x[0] for x in trajectory.evaluate([m.t]))
        a = qdd_ref + kp * (q_ref - m.q) + kd * (qd_ref - m.qd)
        plant.set_effort(regressor.predict(theta, m.q, m.qd, a)[0])
        plant.step()
        t[k], q[k], qd[k], tau[k] = m.t, m.q, m.qd, m.effort
    return JointRecord(t=t, joint_names=tuple(config.joints), q=q, tau=tau, qd=qd), trajectory, plant
