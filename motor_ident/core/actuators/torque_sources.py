"""Joint torques from where the robot measures them: joint sensors, motor currents, PWM or a 6-axis F/T sensor.

One conversion serves the identifier node, ``motor-ident identify`` (bags, CSV, NPZ), ``synth`` and
the simulator's sensor models. The kinds (`TORQUE_SOURCES`):

- ``joint_effort``: ``joint_states.effort`` is the joint torque [N m] (joint torque sensors).
- ``motor_current``: motor currents ``i`` [A], one per motor in the order of the robot config's
  transmission, times a drive gain ``k`` per motor [N m/A]. A gain on the ``motor`` side is the
  rotor's torque constant, multiplied by the gear ratio rho to reach the gearbox output; on the
  ``joint`` side it already includes the gear. Gearbox-output torques reach the joints through the
  coupling: ``tau_motor = k_out i``, ``tau_joint = T^-T tau_motor`` (`Transmission.joint_torque`).
- ``motor_pwm``: duty cycles [-] through each motor's model (Guedelha et al. 2021, eq. 18 and 32):
  ``tau_motor = K_pwm* PWM + tau_0 - back_emf qd_motor`` (`motor_ident.core.actuators.motor`), then
  ``T^-T`` as above. Motor-chain friction and rotor inertia are left in the result: the regressor's
  friction and reflected-inertia columns model them.
- ``ft_sensor``: the wrench of a 6-axis F/T sensor [N, N m] minus the inertial and gravity terms
  of the links between each joint and the sensor
  (`motor_ident.core.rigid_body.ft_sensor.joint_torques_from_wrench`): link-side torques of the
  joints proximal to the sensor; NaN for the others.

Rejected: a separate torque conversion per consumer (node, command, simulator) — the gear, the
coupling and the side of the gains are easy to get subtly different in each.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.actuators.motor import MotorParameters, duty_for_torque, motor_torque
from motor_ident.core.actuators.transmission import Transmission
from motor_ident.core.rigid_body.ft_sensor import ForceTorqueSensor, joint_torques_from_wrench
from motor_ident.core.rigid_body.model import RobotModel
from motor_ident.errors import ConfigError, DataError

FloatArray = NDArray[np.float64]

TORQUE_SOURCES = ("joint_effort", "motor_current", "motor_pwm", "ft_sensor")
"""Where joint torques come from (see the module docstring)."""

GAIN_SIDES = ("joint", "motor")
"""Side of a drive gain: ``joint`` = gearbox output (includes rho), ``motor`` = rotor (times rho)."""

WRENCH_AXES = ("fx", "fy", "fz", "tx", "ty", "tz")
"""Order of a wrench's components: force [N] then moment [N m], sensor frame."""

UNITS = {"joint_effort": "N m", "motor_current": "A", "motor_pwm": "duty [-]", "ft_sensor": "N, N m"}
"""Unit of the raw measurement of each source, for /diagnostics and reports."""


@dataclass(frozen=True)
class TorqueSource:
    """Which measurement becomes joint torque, and its constants (the robot config's ``torque_source:``).

    Attributes:
        kind: one of `TORQUE_SOURCES`.
        drive_gains: ``motor_current``: nominal gain per motor [N m/A], motor order of the
            transmission; empty = 1 N m/A per motor at the joint side (unknown gains, to identify).
        gain_side: side of ``drive_gains``, one of `GAIN_SIDES`.
        ft_frame: ``ft_sensor``: URDF frame of the sensor ('' = ``ft_joint``'s frame).
        ft_joint: ``ft_sensor``: joint whose link carries the sensor ('' = the frame's parent joint).
    """

    kind: str = "joint_effort"
    drive_gains: tuple[float, ...] = ()
    gain_side: str = "joint"
    ft_frame: str = ""
    ft_joint: str = ""

    def __post_init__(self) -> None:
        if self.kind not in TORQUE_SOURCES:
            raise ConfigError(f"torque_source.kind = {self.kind!r}: expected one of {list(TORQUE_SOURCES)}")
        if self.gain_side not in GAIN_SIDES:
            raise ConfigError(f"torque_source.gain_side = {self.gain_side!r}: expected one of {list(GAIN_SIDES)}")
        gains = tuple(float(g) for g in self.drive_gains)
        if not all(np.isfinite(g) and g != 0.0 for g in gains):
            raise ConfigError(f"torque_source.drive_gains = {list(gains)}: expected finite non-zero gains [N m/A]")
        object.__setattr__(self, "drive_gains", gains)
        if self.kind == "ft_sensor" and not (self.ft_frame or self.ft_joint):
            raise ConfigError("torque_source.kind = 'ft_sensor' needs ft_frame (a URDF frame) or ft_joint")

    @property
    def gains_configured(self) -> bool:
        """True when the config gives the drive gains (else they are unknown)."""
        return bool(self.drive_gains)


@dataclass(frozen=True, eq=False)
class TorqueConverter:
    """Measurements -> joint torques for one robot (build it with `torque_converter`).

    Attributes:
        source: the torque source.
        transmission: joints, motors, gear ratios and coupling T.
        drive_gains: ``motor_current``: gain per motor at the gearbox output (joint side) [N m/A], shape (m,).
        motors: ``motor_pwm``: the motor model of every motor, transmission motor order.
        robot: ``ft_sensor``: the link model between joints and sensor.
        sensor: ``ft_sensor``: the sensor.
    """

    source: TorqueSource
    transmission: Transmission
    drive_gains: FloatArray = field(default_factory=lambda: np.zeros(0))
    motors: tuple[MotorParameters, ...] = ()
    robot: RobotModel | None = None
    sensor: ForceTorqueSensor | None = None

    @property
    def kind(self) -> str:
        """The source's kind."""
        return self.source.kind

    @property
    def needs(self) -> str:
        """The measurement the source reads: ``tau``, ``current``, ``pwm`` or ``wrench``."""
        return {"joint_effort": "tau", "motor_current": "current", "motor_pwm": "pwm", "ft_sensor": "wrench"}[self.kind]

    def with_drive_gains(self, gains_joint_side: ArrayLike) -> TorqueConverter:
        """The same converter with other joint-side drive gains (m,) [N m/A] (identified ones)."""
        gains = np.asarray(gains_joint_side, dtype=float).reshape(-1)
        _check_width(gains[None, :], len(self.transmission.motors), "drive gains")
        return TorqueConverter(self.source, self.transmission, gains, self.motors, self.robot, self.sensor)

    def joint_torque(
        self,
        *,
        q: ArrayLike,
        qd: ArrayLike,
        qdd: ArrayLike | None = None,
        tau: ArrayLike | None = None,
        current: ArrayLike | None = None,
        pwm: ArrayLike | None = None,
        wrench: ArrayLike | None = None,
    ) -> FloatArray:
        """Joint torques of N samples, shape (N, n) [N m] (NaN where ``ft_sensor`` cannot observe a joint).

        Args:
            q, qd, qdd: joint positions, velocities, accelerations, shape (N, n) [rad, rad/s, rad/s^2]
                (``qdd`` only for ``ft_sensor``).
            tau: ``joint_effort``: measured joint torques (N, n) [N m].
            current: ``motor_current``: currents (N, m) [A], transmission motor order.
            pwm: ``motor_pwm``: duty cycles (N, m) [-], transmission motor order.
            wrench: ``ft_sensor``: sensor wrench [fx, fy, fz, tx, ty, tz] (N, 6) [N, N m], sensor frame.

        Raises:
            DataError: the measurement the source needs is missing, has the wrong width or is not finite.
        """
        n = len(self.transmission.joints)
        q2 = np.atleast_2d(np.asarray(q, dtype=float))
        qd2 = np.atleast_2d(np.asarray(qd, dtype=float))
        raw = {"tau": tau, "current": current, "pwm": pwm, "wrench": wrench}[self.needs]
        if raw is None:
            raise DataError(
                f"torque source {self.kind!r} needs the {self.needs} measurement "
                f"({UNITS[self.kind]}); the data has none"
            )
        x = np.atleast_2d(np.asarray(raw, dtype=float))
        if self.kind == "joint_effort":
            return _check_width(x, n, "joint torques")
        if self.kind == "motor_current":
            x = _check_width(x, len(self.transmission.motors), "motor currents")
            return self.transmission.joint_torque(x * self.drive_gains)
        if self.kind == "motor_pwm":
            x = _check_width(x, len(self.transmission.motors), "duty cycles")
            qd_motor = self.transmission.motor_velocity(qd2)
            tau_motor = np.column_stack([motor_torque(x[:, k], qd_motor[:, k], m) for k, m in enumerate(self.motors)])
            return self.transmission.joint_torque(tau_motor)
        x = _check_width(x, 6, "wrench components")
        if qdd is None:
            raise DataError("torque source 'ft_sensor' needs joint accelerations qdd")
        qdd2 = np.atleast_2d(np.asarray(qdd, dtype=float))
        assert self.robot is not None and self.sensor is not None
        data = self.robot.create_data()
        return np.array(
            [
                joint_torques_from_wrench(self.robot, data, q2[k], qd2[k], qdd2[k], x[k], self.sensor)
                for k in range(x.shape[0])
            ]
        ).reshape(x.shape[0], n)

    def motor_measurement(self, *, tau_joint: ArrayLike, qd: ArrayLike) -> FloatArray:
        """Inverse of `joint_torque` for the motor sources: what the drives read, shape (N, m).

        ``motor_current``: currents [A] ``(T' tau_joint) / k``; ``motor_pwm``: duty cycles [-] from
        `motor_ident.core.actuators.motor.duty_for_torque` (saturated at each motor's limit).

        Raises:
            ConfigError: the source is not a motor source.
        """
        tau_motor = self.transmission.motor_torque(np.atleast_2d(np.asarray(tau_joint, dtype=float)))
        if self.kind == "motor_current":
            out: FloatArray = tau_motor / self.drive_gains
            return out
        if self.kind == "motor_pwm":
            qd_motor = self.transmission.motor_velocity(np.atleast_2d(np.asarray(qd, dtype=float)))
            return np.column_stack(
                [duty_for_torque(tau_motor[:, k], qd_motor[:, k], m) for k, m in enumerate(self.motors)]
            )
        raise ConfigError(f"torque source {self.kind!r} has no motor measurement: expected motor_current or motor_pwm")


def joint_side_gains(source: TorqueSource, transmission: Transmission) -> FloatArray:
    """The source's drive gains at the gearbox outputs, shape (m,) [N m/A] (1 each when not configured).

    Raises:
        ConfigError: the config gives a number of gains other than the number of motors.
    """
    m = len(transmission.motors)
    if not source.drive_gains:
        return np.ones(m)
    if len(source.drive_gains) != m:
        raise ConfigError(
            f"torque_source.drive_gains has {len(source.drive_gains)} values: expected one per motor "
            f"{list(transmission.motors)}"
        )
    gains = np.asarray(source.drive_gains, dtype=float)
    return gains * transmission.gear_ratio if source.gain_side == "motor" else gains


def configured_side_gains(gains_joint_side: ArrayLike, source: TorqueSource, transmission: Transmission) -> FloatArray:
    """Joint-side gains (m,) [N m/A] expressed on the side the config uses (divided by rho for ``motor``)."""
    gains = np.asarray(gains_joint_side, dtype=float)
    out: FloatArray = gains / transmission.gear_ratio if source.gain_side == "motor" else gains
    return out


def torque_converter(
    source: TorqueSource,
    transmission: Transmission,
    *,
    motors: Sequence[MotorParameters | None] = (),
    robot: RobotModel | None = None,
) -> TorqueConverter:
    """The `TorqueConverter` of a source for a robot.

    Args:
        source: the torque source.
        transmission: the robot's transmission (joints, motors, T, rho).
        motors: ``motor_pwm``: motor model per motor, transmission motor order.
        robot: ``ft_sensor``: the robot model; the sensor frame is looked up in it.

    Raises:
        ConfigError: a constant the source needs is missing (the message names the config key).
    """
    gains = joint_side_gains(source, transmission) if source.kind == "motor_current" else np.zeros(0)
    chosen: tuple[MotorParameters, ...] = ()
    if source.kind == "motor_pwm":
        missing = [name for name, m in zip(transmission.motors, motors) if m is None]
        if len(motors) != len(transmission.motors) or missing:
            raise ConfigError(
                f"torque source 'motor_pwm' needs a 'motor:' block (k_pwm, tau_0, back_emf) for every motor; "
                f"missing for {missing or list(transmission.motors)}"
            )
        chosen = tuple(m for m in motors if m is not None)
    sensor = None
    if source.kind == "ft_sensor":
        if robot is None:
            raise ConfigError("torque source 'ft_sensor' needs the robot model")
        sensor = ft_sensor_of(source, robot)
    return TorqueConverter(source, transmission, gains, chosen, robot, sensor)


def ft_sensor_of(source: TorqueSource, robot: RobotModel) -> ForceTorqueSensor:
    """The `ForceTorqueSensor` a source names: its URDF frame (placement from the URDF) or a joint's frame.

    Raises:
        ConfigError: the frame is not in the URDF or hangs below a joint that is not identified.
    """
    if not source.ft_frame:
        return ForceTorqueSensor(source.ft_joint)
    model = robot.model
    if not model.existFrame(source.ft_frame):
        names = [f.name for f in model.frames if "ft" in f.name.lower() or "sensor" in f.name.lower()]
        raise ConfigError(
            f"torque_source.ft_frame = {source.ft_frame!r} is not a frame of the URDF"
            + (f"; frames that look like sensors: {names}" if names else "")
        )
    frame = model.frames[model.getFrameId(source.ft_frame)]
    joint = str(model.names[frame.parentJoint])
    if source.ft_joint and source.ft_joint != joint:
        raise ConfigError(
            f"torque_source.ft_frame {source.ft_frame!r} hangs below joint {joint!r}, not ft_joint {source.ft_joint!r}"
        )
    if joint not in robot.joint_names:
        raise ConfigError(
            f"torque_source.ft_frame {source.ft_frame!r} hangs below joint {joint!r}, which is not in robot.joints"
        )
    return ForceTorqueSensor(joint, pin.SE3(frame.placement))


def observable_joints(converter: TorqueConverter) -> NDArray[np.bool_]:
    """Which joints the source gives a torque for, shape (n,): all but, for ``ft_sensor``, the non-proximal ones."""
    n = len(converter.transmission.joints)
    if converter.kind != "ft_sensor":
        return np.ones(n, dtype=bool)
    assert converter.robot is not None
    zeros = np.zeros((1, n))
    tau = converter.joint_torque(q=zeros, qd=zeros, qdd=zeros, wrench=np.zeros((1, 6)))
    observable: NDArray[np.bool_] = np.isfinite(tau[0])
    return observable


def _check_width(x: FloatArray, width: int, what: str) -> FloatArray:
    if x.ndim != 2 or x.shape[1] != width:
        raise DataError(f"{what} have shape {x.shape}: expected (N, {width})")
    if not np.all(np.isfinite(x)):
        rows = np.flatnonzero(~np.all(np.isfinite(x), axis=1))
        raise DataError(f"{what} hold NaN or Inf in {rows.size} samples (first at index {rows[0]})")
    return x
