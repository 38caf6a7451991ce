"""What a simulated robot's drives and sensors read: motor currents, PWM duty cycles, an F/T wrench.

The true joint torques go backwards through the same conversion motor_ident uses forwards
(`motor_ident.core.actuators.torque_sources.TorqueConverter`), with the simulator's TRUE constants:
drive gains a few percent off the robot config's nominal ones (so identification has something to
find), noise and a constant offset per channel. The F/T wrench is
`motor_ident.core.rigid_body.ft_sensor.sensor_wrench` on the true links plus noise and offset.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.actuators.torque_sources import TorqueConverter
from motor_ident.core.rigid_body.ft_sensor import ForceTorqueSensor, sensor_wrench
from motor_ident.core.rigid_body.model import RobotModel
from motor_ident.errors import ConfigError
from motor_ident.schema import check, inline, setting

if TYPE_CHECKING:
    from motor_ident.io.robot_config import RobotConfig

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class SensorNoise:
    """Noise and offsets of the simulated drive and F/T readings (white, per channel)."""

    current_std: float = setting(0.01, "motor current noise", unit="A", low=0.0)
    current_offset: float = setting(0.0, "constant motor current offset, every motor", unit="A")
    pwm_std: float = setting(0.001, "duty-cycle noise", unit="-", low=0.0)
    force_std: float = setting(0.5, "F/T force noise per axis", unit="N", low=0.0)
    moment_std: float = setting(0.02, "F/T moment noise per axis", unit="N m", low=0.0)
    force_offset: float = setting(0.0, "F/T force offset, every axis", unit="N")
    gain_error: float = setting(0.05, "largest relative error of the nominal drive gains", unit="-", low=0.0, high=0.5)

    def __post_init__(self) -> None:
        check(self)


def true_drive_gains(nominal: ArrayLike, seed: int, *, largest_error: float = 0.05) -> FloatArray:
    """Drive gains of the simulated motors: each nominal gain off by 40-100 % of ``largest_error``, random sign.

    Deterministic in ``seed`` (and independent of anything else the seed drives), so a loaded and an
    unloaded run with the same seed share the same true gains.
    """
    nominal = np.asarray(nominal, dtype=float)
    rng = np.random.default_rng((int(seed), 7919))
    size = rng.uniform(0.4, 1.0, nominal.shape) * largest_error
    sign = rng.choice([-1.0, 1.0], nominal.shape)
    out: FloatArray = nominal * (1.0 + sign * size)
    return out


def true_converter(nominal: TorqueConverter, seed: int, noise: SensorNoise) -> TorqueConverter:
    """The simulator's converter: ``nominal``'s drive gains replaced by `true_drive_gains` (other kinds unchanged)."""
    if nominal.kind != "motor_current":
        return nominal
    return nominal.with_drive_gains(true_drive_gains(nominal.drive_gains, seed, largest_error=noise.gain_error))


def motor_readings(
    converter: TorqueConverter,
    tau_joint: ArrayLike,
    qd: ArrayLike,
    noise: SensorNoise,
    rng: np.random.Generator,
) -> FloatArray:
    """Currents [A] or duty cycles [-] the drives read for joint torques (N, n) at velocities (N, n), shape (N, m)."""
    clean = converter.motor_measurement(tau_joint=tau_joint, qd=qd)
    if converter.kind == "motor_current":
        return clean + noise.current_offset + noise.current_std * rng.standard_normal(clean.shape)
    return clean + noise.pwm_std * rng.standard_normal(clean.shape)


def wrench_readings(
    robot: RobotModel,
    q: ArrayLike,
    qd: ArrayLike,
    qdd: ArrayLike,
    sensor: ForceTorqueSensor,
    noise: SensorNoise,
    rng: np.random.Generator,
) -> FloatArray:
    """F/T readings [fx, fy, fz, tx, ty, tz] along N samples, shape (N, 6) [N, N m].

    Args:
        robot: the true links (rotor inertia is on the motor side and ignored here).
        q, qd, qdd: joint positions, velocities, accelerations, shape (N, n).
        sensor: where the sensor is.
        noise: its noise and offset.
        rng: noise source.
    """
    q, qd, qdd = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (q, qd, qdd))
    if q.shape[1] != robot.n:
        raise ConfigError(f"q has shape {q.shape}: expected (N, {robot.n})")
    links = robot.with_rotor_inertia(np.zeros(robot.n))
    data = links.create_data()
    clean = np.array([sensor_wrench(links, data, q[k], qd[k], qdd[k], sensor) for k in range(q.shape[0])])
    std = np.array([noise.force_std] * 3 + [noise.moment_std] * 3)
    offset = np.array([noise.force_offset] * 3 + [0.0] * 3)
    out: FloatArray = clean.reshape(-1, 6) + offset + std * rng.standard_normal((q.shape[0], 6))
    return out


MOTOR_EFFORTS = ("torque", "motor_current", "motor_pwm")
"""What the simulator's ``motor_states.effort`` carries: rotor torque [N m], current [A] or duty [-]."""


@dataclass(frozen=True)
class SimSensorSettings:
    """The simulated robot's drive and F/T readings (``sim_robot`` parameters)."""

    motor_effort: str = setting(
        "torque",
        "what motor_states.effort carries: torque (at the rotor), motor_current (A, true drive gains a few % off "
        "the config's) or motor_pwm (duty through the motor model)",
        choices=MOTOR_EFFORTS,
    )
    publish_wrench: bool = setting(False, "publish ft_sensor/wrench of the robot config's F/T sensor")
    sensor_seed: int = setting(0, "seed of the true drive gains and of the reading noise")
    noise: SensorNoise = inline(SensorNoise)

    def __post_init__(self) -> None:
        check(self)


class SimSensors:
    """Readings of one simulated robot, sample by sample (state: the noise generator).

    Args:
        config: the robot; its ``torque_source`` gives the nominal drive gains and the F/T sensor.
        settings: what to read and with which noise.

    Raises:
        ConfigError: ``motor_pwm`` without every motor's ``motor:`` block.
    """

    def __init__(self, config: RobotConfig, settings: SimSensorSettings) -> None:
        self.settings = settings
        self._rng = np.random.default_rng((settings.sensor_seed, 3))
        kind = settings.motor_effort
        self.motor_converter = (
            None
            if kind == "torque"
            else true_converter(config.torque_converter(kind), settings.sensor_seed, settings.noise)
        )
        self.ft = config.torque_converter("ft_sensor") if settings.publish_wrench else None
        self.transmission = config.build_transmission()

    @property
    def true_drive_gains(self) -> FloatArray | None:
        """Joint-side gains of the simulated drives (m,) [N m/A], for ``motor_current``."""
        c = self.motor_converter
        return None if c is None or c.kind != "motor_current" else c.drive_gains

    def motor_effort(self, tau_joint: ArrayLike, qd: ArrayLike, rotor_torque: ArrayLike) -> FloatArray:
        """``motor_states.effort`` (m,): ``rotor_torque`` [N m] as given, or current / duty of ``tau_joint`` (n,)."""
        if self.motor_converter is None:
            return np.asarray(rotor_torque, dtype=float)
        reading = motor_readings(self.motor_converter, tau_joint, qd, self.settings.noise, self._rng)
        out: FloatArray = reading[0]
        return out

    def wrench(self, q: ArrayLike, qd: ArrayLike, qdd: ArrayLike) -> FloatArray:
        """F/T reading [fx, fy, fz, tx, ty, tz] (6,) [N, N m] at the state (n,) each."""
        ft = self.ft
        if ft is None or ft.robot is None or ft.sensor is None:
            raise ConfigError("publish_wrench is off: no F/T sensor is simulated")
        out: FloatArray = wrench_readings(ft.robot, q, qd, qdd, ft.sensor, self.settings.noise, self._rng)[0]
        return out
