"""The simulated robot: forward dynamics by pinocchio's ABA with friction, motors and sensors.

The plant integrates ``M(q) qdd + h(q, qd) = tau_actuator - tau_friction(qd)`` (M includes the
reflected rotor inertia rho^2 I_m) with semi-implicit Euler at ``rate_hz * substeps``. The
actuator torque is either the commanded joint torque or, for PWM commands, the motor model of
seed 000 (K_pwm* PWM + tau_0 - back-EMF), saturated to the URDF's effort limits.

Sensors: joint positions quantised to the encoder resolution plus noise, velocities with noise,
and the measured joint torque (``effort``) = the actuator torque plus noise, i.e. what a
current-based torque estimate of ros2_control reports. Motor-side encoders report the same
motion through the gear ratio. The true parameters stay available in `SimulatedRobot.truth`
for tests.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.model import forward_dynamics
from motor_ident.core.motor import MotorParameters, motor_torque
from motor_ident.core.regressor import Regressor
from motor_ident.errors import ConfigError

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class PlantConfig:
    """Simulation and sensor settings.

    Attributes:
        rate_hz: sample rate of the published measurements [Hz].
        substeps: integration steps per sample.
        torque_noise_std: std of the measured joint torque noise [N m].
        velocity_noise_std: std of the measured velocity noise [rad/s].
        encoder_counts_per_rev: joint encoder resolution (0 = no quantisation).
        seed: noise seed.
    """

    rate_hz: float = 1000.0
    substeps: int = 2
    torque_noise_std: float = 0.05
    velocity_noise_std: float = 0.002
    encoder_counts_per_rev: int = 2**18
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.rate_hz > 0.0:
            raise ConfigError(f"rate_hz = {self.rate_hz!r}: expected > 0")
        if self.substeps < 1:
            raise ConfigError(f"substeps = {self.substeps!r}: expected >= 1")
        for key in ("torque_noise_std", "velocity_noise_std"):
            if not getattr(self, key) >= 0.0:
                raise ConfigError(f"{key} = {getattr(self, key)!r}: expected >= 0")
        if self.encoder_counts_per_rev < 0:
            raise ConfigError(f"encoder_counts_per_rev = {self.encoder_counts_per_rev!r}: expected >= 0")


@dataclass(frozen=True)
class Measurement:
    """What the robot's sensors report at one instant (arrays of shape (n,))."""

    t: float
    q: FloatArray
    qd: FloatArray
    effort: FloatArray
    motor_position: FloatArray
    motor_velocity: FloatArray
    motor_effort: FloatArray


class SimulatedRobot:
    """A robot to identify, with known true parameters.

    Args:
        regressor: the robot's regressor; its robot model holds the true inertias.
        friction_values: true friction parameters per joint (one array per joint).
        config: simulation settings.
        motors: per-joint motor parameters for PWM commands (None: torque commands only).
        q0: initial joint positions (n,) [rad]; mid-range of the limits when None.
    """

    def __init__(
        self,
        regressor: Regressor,
        friction_values: list[FloatArray],
        config: PlantConfig,
        *,
        motors: list[MotorParameters | None] | None = None,
        q0: ArrayLike | None = None,
    ) -> None:
        robot = regressor.robot
        self.robot = robot
        self.regressor = regressor
        self.config = config
        self.truth = regressor.parameters(friction=friction_values)
        self.motors = motors if motors is not None else [None] * robot.n
        self._data = robot.create_data()
        self._rng = np.random.default_rng(config.seed)
        limit = np.asarray(robot.model.effortLimit, dtype=float)[robot.v_index]
        self.effort_limit = np.where((limit > 0.0) & np.isfinite(limit), limit, np.inf)
        lower = robot.model.lowerPositionLimit[robot.q_index]
        upper = robot.model.upperPositionLimit[robot.q_index]
        finite = np.isfinite(lower) & np.isfinite(upper) & (upper > lower)
        self.q = np.where(finite, 0.5 * (lower + upper), 0.0) if q0 is None else np.asarray(q0, dtype=float).copy()
        if self.q.shape != (robot.n,):
            raise ConfigError(f"initial position has shape {self.q.shape}: expected ({robot.n},)")
        self.qd = np.zeros(robot.n)
        self.qdd = np.zeros(robot.n)
        self.t = 0.0
        self.tau_command = np.zeros(robot.n)
        self.pwm_command: FloatArray | None = None
        self.tau_actuator = np.zeros(robot.n)
        self.external_torque = np.zeros(robot.n)

    @property
    def dt(self) -> float:
        """Sample period [s]."""
        return 1.0 / self.config.rate_hz

    def reset(self, q0: ArrayLike | None = None) -> None:
        """Back to rest at ``q0`` (current position when None) and time 0."""
        if q0 is not None:
            self.q = np.asarray(q0, dtype=float).copy()
        self.qd[:] = 0.0
        self.qdd[:] = 0.0
        self.t = 0.0
        self.tau_command[:] = 0.0
        self.pwm_command = None

    def add_payload(self, mass: float, com: ArrayLike, *, joint: int = -1) -> None:
        """Rigidly attach a point mass [kg] at ``com`` (3,) [m] in the frame of ``joint``'s body.

        Models a payload picked up mid-run; `truth` follows.
        """
        import pinocchio as pin

        name = self.robot.joint_names[joint]
        model = self.robot.model.copy()
        jid = model.getJointId(name)
        model.inertias[jid] = model.inertias[jid] + pin.Inertia(
            float(mass), np.asarray(com, dtype=float), np.zeros((3, 3))
        )
        friction = [self.truth[s] for s in self.regressor.layout.friction]
        self.robot = self.robot.with_pinocchio_model(model)
        self.regressor = Regressor(
            self.robot, self.regressor.friction, reflected_inertia=self.regressor.has_reflected_inertia
        )
        self.truth = self.regressor.parameters(friction=friction)
        self._data = self.robot.create_data()

    def set_effort(self, tau: ArrayLike) -> None:
        """Command joint torques (n,) [N m]; non-finite entries are ignored (previous value kept)."""
        tau = np.asarray(tau, dtype=float)
        self.tau_command = np.where(np.isfinite(tau), tau, self.tau_command)
        self.pwm_command = None

    def set_pwm(self, duty: ArrayLike) -> None:
        """Command motor duty cycles (n,) in [-1, 1]; needs motor parameters for every joint."""
        if any(m is None for m in self.motors):
            raise ConfigError(
                "PWM commands need motor parameters (robot.joint_parameters.<joint>.motor) for every joint"
            )
        duty = np.asarray(duty, dtype=float)
        self.pwm_command = np.clip(np.where(np.isfinite(duty), duty, 0.0), -1.0, 1.0)

    def friction_torque(self, qd: ArrayLike) -> FloatArray:
        """True friction torque at joint velocities ``qd`` (n,) [N m]."""
        return self.regressor.friction_torque(qd, self.truth)

    def _actuator_torque(self) -> FloatArray:
        if self.pwm_command is None:
            tau = self.tau_command
        else:
            tau = np.array(
                [motor_torque(d, v, m) for d, v, m in zip(self.pwm_command, self.qd, self.motors)]  # type: ignore[arg-type]
            )
        return np.clip(tau, -self.effort_limit, self.effort_limit)

    def step(self) -> None:
        """Advance one sample period."""
        h = self.dt / self.config.substeps
        self.tau_actuator = self._actuator_torque()
        for _ in range(self.config.substeps):
            net = self.tau_actuator + self.external_torque - self.friction_torque(self.qd)
            self.qdd = forward_dynamics(self.robot, self._data, self.q, self.qd, net)
            self.qd = self.qd + h * self.qdd
            self.q = self.q + h * self.qd
        self.t += self.dt

    def measure(self) -> Measurement:
        """Sensor readings of the current state."""
        cfg, rng, n = self.config, self._rng, self.robot.n
        q = self.q
        if cfg.encoder_counts_per_rev:
            resolution = 2.0 * np.pi / cfg.encoder_counts_per_rev
            q = np.round(q / resolution) * resolution
        qd = self.qd + cfg.velocity_noise_std * rng.standard_normal(n)
        effort = self.tau_actuator + cfg.torque_noise_std * rng.standard_normal(n)
        ratio = self.robot.gear_ratio
        return Measurement(
            t=self.t,
            q=q,
            qd=qd,
            effort=effort,
            motor_position=self.q * ratio,
            motor_velocity=qd * ratio,
            motor_effort=effort / ratio,
        )
