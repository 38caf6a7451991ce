"""Synthetic identification data: an exciting trajectory played through inverse dynamics.

The torques are exact (regressor times the true parameters, which equals RNEA plus friction)
with Gaussian noise added, so the truth is known to the last digit. For closed-loop forward
simulation with sensors and controllers, see `motor_ident.sim.plant`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from motor_ident.core.excitation.fourier import FourierTrajectory, random_fourier_trajectory
from motor_ident.core.rigid_body.regressor import Regressor
from motor_ident.io.data import JointRecord


def excitation_record(
    regressor: Regressor,
    theta_true: ArrayLike,
    *,
    duration: float = 30.0,
    rate_hz: float = 200.0,
    noise_std: float | ArrayLike = 0.05,
    trajectory: FourierTrajectory | None = None,
    velocity_amplitude: float = 1.5,
    seed: int = 0,
) -> tuple[JointRecord, FourierTrajectory]:
    """Sample an excitation of the robot and its noisy joint torques.

    Args:
        regressor: the robot's full regressor.
        theta_true: the true full parameters (p,).
        duration: record length [s]; rate_hz: sample rate [Hz].
        noise_std: torque noise standard deviation, scalar or per joint [N m].
        trajectory: the motion; a random 5-harmonic Fourier series at 0.2 Hz when None, centred
            in the joint limits.
        velocity_amplitude: bound on the random trajectory's joint speed [rad/s].
        seed: seeds the trajectory and the noise.

    Returns:
        The record (q, qd, qdd exact; tau noisy) and the trajectory played.
    """
    rng = np.random.default_rng(seed)
    robot = regressor.robot
    if trajectory is None:
        lower = robot.model.lowerPositionLimit[robot.q_index]
        upper = robot.model.upperPositionLimit[robot.q_index]
        finite = np.isfinite(lower) & np.isfinite(upper) & (upper > lower)
        centre = np.where(finite, 0.5 * (lower + upper), 0.0)
        trajectory = random_fourier_trajectory(
            rng, n=robot.n, base_frequency=0.2, velocity_amplitude=velocity_amplitude, q0=centre
        )
    t = np.arange(int(round(duration * rate_hz))) / rate_hz
    q, qd, qdd = trajectory.evaluate(t)
    tau = regressor.predict(theta_true, q, qd, qdd)
    sigma = np.broadcast_to(np.asarray(noise_std, dtype=float), (robot.n,))
    tau = tau + rng.standard_normal(tau.shape) * sigma
    return JointRecord(t=t, joint_names=robot.joint_names, q=q, qd=qd, qdd=qdd, tau=tau), trajectory
