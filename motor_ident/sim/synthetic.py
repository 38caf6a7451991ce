"""Synthetic identification data: an exciting trajectory played through inverse dynamics.

The torques are exact (regressor times the true parameters, which equals RNEA plus friction)
with Gaussian noise added, so the truth is known to the last digit. For closed-loop forward
simulation with sensors and controllers, see `motor_ident.sim.plant`. `source_record` measures the
same motion as a robot with another torque source would (motor currents, PWM, an F/T wrench;
`motor_ident.sim.sensors`), optionally carrying a point payload.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.estimation.drive_gains import payload_attachment, with_point_payload
from motor_ident.core.excitation.fourier import FourierTrajectory, random_fourier_trajectory
from motor_ident.core.rigid_body.regressor import Regressor
from motor_ident.errors import ConfigError
from motor_ident.io.data import JointRecord
from motor_ident.io.robot_config import RobotConfig
from motor_ident.sim.sensors import SensorNoise, motor_readings, true_converter, wrench_readings

FloatArray = NDArray[np.float64]
MAX_SAMPLES = 10_000_000
"""Most samples of one synthetic record (7 joints: about 2 GB of arrays)."""


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

    Raises:
        ConfigError: ``duration`` x ``rate_hz`` is fewer than 2 or more than `MAX_SAMPLES` samples.
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
    n_samples = round(duration * rate_hz) if np.isfinite(duration * rate_hz) else -1
    if not 2 <= n_samples <= MAX_SAMPLES:
        raise ConfigError(
            f"duration {duration:g} s at {rate_hz:g} Hz: expected 2 to {MAX_SAMPLES:,} samples, not "
            f"{'infinitely many' if n_samples < 0 else n_samples}"
        )
    t = np.arange(n_samples) / rate_hz
    q, qd, qdd = trajectory.evaluate(t)
    tau = regressor.predict(theta_true, q, qd, qdd)
    sigma = np.broadcast_to(np.asarray(noise_std, dtype=float), (robot.n,))
    tau = tau + rng.standard_normal(tau.shape) * sigma
    return JointRecord(t=t, joint_names=robot.joint_names, q=q, qd=qd, qdd=qdd, tau=tau), trajectory


@dataclass(frozen=True, eq=False)
class SourceRecord:
    """A synthetic record as a robot measuring torque with one source would log it.

    Attributes:
        record: q, qd, qdd exact; ``tau`` (noisy) for ``joint_effort``, else all NaN with the raw
            measurement (``current`` / ``pwm`` with ``motor_names``, or ``wrench``).
        theta_true: full parameters of the simulated robot, payload included (p,).
        true_drive_gains: ``motor_current``: the simulated motors' joint-side gains (m,) [N m/A].
        nominal_drive_gains: the robot config's joint-side gains (m,) [N m/A] (1 when not configured).
    """

    record: JointRecord
    theta_true: FloatArray
    true_drive_gains: FloatArray | None
    nominal_drive_gains: FloatArray | None


def source_record(
    config: RobotConfig,
    kind: str | None = None,
    *,
    payload_mass: float = 0.0,
    payload_frame: str = "",
    duration: float = 30.0,
    rate_hz: float = 200.0,
    noise_std: float = 0.05,
    seed: int = 0,
    sensor_noise: SensorNoise | None = None,
) -> SourceRecord:
    """An excitation of ``config``'s nominal robot (plus a point payload) measured by torque source ``kind``.

    The trajectory and the true drive gains depend on ``seed`` only, so a run with and one without
    payload share them; the measurement noise also depends on the payload mass.

    Args:
        config: the robot; its nominal parameters are the truth.
        kind: torque source (`motor_ident.core.actuators.torque_sources.TORQUE_SOURCES`); the config's when None.
        payload_mass: point mass at ``payload_frame`` [kg] (0 = none).
        payload_frame: URDF frame of the payload ('' = the last joint's frame).
        duration, rate_hz, seed: as `excitation_record`.
        noise_std: joint torque noise of ``joint_effort`` [N m].
        sensor_noise: noise of the raw measurements (defaults of `SensorNoise`).

    Raises:
        ConfigError: the source needs a constant the config lacks, or the payload frame is unknown.
    """
    noise = SensorNoise() if sensor_noise is None else sensor_noise
    regressor = config.build_regressor()
    robot = regressor.robot
    converter = config.torque_converter(kind, robot)
    theta = config.nominal_parameters(regressor)
    if payload_mass > 0.0:
        joint, position = payload_attachment(robot, payload_frame)
        theta = with_point_payload(regressor, theta, payload_mass, joint, position)
    raw = converter.kind != "joint_effort"
    record, _ = excitation_record(
        regressor, theta, duration=duration, rate_hz=rate_hz, noise_std=0.0 if raw else noise_std, seed=seed
    )
    if not raw:
        return SourceRecord(record, theta, None, None)
    assert record.qd is not None and record.qdd is not None
    rng = np.random.default_rng((int(seed), 2, int(round(1e6 * payload_mass))))
    truth = true_converter(converter, seed, noise)
    fields: dict[str, object] = {"tau": np.full(record.q.shape, np.nan)}
    if converter.kind == "ft_sensor":
        assert converter.sensor is not None
        links = robot.with_inertial_parameters(theta[regressor.layout.inertial])
        fields["wrench"] = wrench_readings(links, record.q, record.qd, record.qdd, converter.sensor, noise, rng)
    else:
        fields["motor_names"] = converter.transmission.motors
        fields["current" if converter.kind == "motor_current" else "pwm"] = motor_readings(
            truth, record.tau, record.qd, noise, rng
        )
    gains = converter.kind == "motor_current"
    return SourceRecord(
        replace(record, **fields),  # type: ignore[arg-type]
        theta,
        truth.drive_gains if gains else None,
        converter.drive_gains if gains else None,
    )
