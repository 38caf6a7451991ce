"""Simulated 6-axis F/T sensor readings along a motion, and the joint torques iCub estimates from them.

`motor_ident.core.rigid_body.ft_sensor.sensor_wrench` on the true model gives the noise-free reading; the
sensor adds white noise per axis (force and moment). The estimate is
`motor_ident.core.rigid_body.ft_sensor.joint_torques_from_wrench` on the (possibly different) estimation
model, so both the sensor noise and a wrong link model show in the joint torques, as on the robot.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.rigid_body.ft_sensor import ForceTorqueSensor, joint_torques_from_wrench, sensor_wrench
from motor_ident.core.rigid_body.model import RobotModel
from motor_ident.errors import ConfigError

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class FtEstimates:
    """Per sample: the sensor reading and the estimated link-side joint torques (NaN where unobservable).

    Attributes:
        wrench: measured wrench [f; m] in the sensor frame, shape (N, 6) [N, N m].
        tau_joint: estimated joint torques, shape (N, n) [N m].
    """

    wrench: FloatArray
    tau_joint: FloatArray


def simulate_ft_estimates(
    robot: RobotModel,
    q: ArrayLike,
    qd: ArrayLike,
    qdd: ArrayLike,
    sensor: ForceTorqueSensor,
    *,
    force_noise_std: float = 0.5,
    moment_noise_std: float = 0.02,
    rng: np.random.Generator,
    external: dict[str, ArrayLike] | None = None,
    estimation_model: RobotModel | None = None,
) -> FtEstimates:
    """Noisy F/T readings along samples (N, n) of a motion and the joint torques estimated from them.

    Args:
        robot: true model (without rotor inertia: the sensor sees the links only).
        q, qd, qdd: joint positions, velocities, accelerations, shape (N, n).
        sensor: where the sensor is.
        force_noise_std: noise per force axis [N] (iCub's sensors: about 0.5 N).
        moment_noise_std: noise per moment axis [N m].
        rng: noise source.
        external: constant wrench on a distal link (joint name -> (6,)), e.g. a foot contact.
        estimation_model: model used to estimate (the true one when None).
    """
    if not (force_noise_std >= 0.0 and moment_noise_std >= 0.0):
        raise ConfigError(f"noise std = ({force_noise_std!r}, {moment_noise_std!r}): expected >= 0")
    q, qd, qdd = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (q, qd, qdd))
    model = estimation_model or robot
    data_true, data_est = robot.create_data(), model.create_data()
    noise = np.array([force_noise_std] * 3 + [moment_noise_std] * 3)
    wrench = np.empty((q.shape[0], 6))
    tau = np.empty_like(q)
    for k in range(q.shape[0]):
        wrench[k] = sensor_wrench(robot, data_true, q[k], qd[k], qdd[k], sensor, external)
        wrench[k] += noise * rng.standard_normal(6)
        tau[k] = joint_torques_from_wrench(model, data_est, q[k], qd[k], qdd[k], wrench[k], sensor)
    return FtEstimates(wrench=wrench, tau_joint=tau)
