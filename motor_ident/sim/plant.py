"""The simulated robot: pinocchio rigid-body dynamics with friction, motors and sensors.

Two actuations (`PlantConfig.command_interface`), as a robot's ros2_control command interfaces:

- ``effort``: joint torque commands. The plant integrates ``M(q) qdd + h(q, qd) = tau_actuator -
  tau_friction(qd)`` (pinocchio's ABA; M includes the reflected rotor inertia rho^2 I_m as
  armature), the actuator torque being the command saturated to the URDF's effort limits. The
  measured joint torque (``effort``) is that actuator torque: what a current-based torque
  estimate reports (friction and rotor inertia are in it).
- ``pwm``: motor duty cycles, one per motor of the robot config's transmission (Guedelha et
  al. 2021). Each motor chain ``k`` (`motor_ident.sim.motor_chain.MotorChain`, at its gearbox
  output) delivers ``tau_drive_k = K_pwm* PWM_k + tau_0 - back_emf qd_motor_k`` minus its
  friction and rotor inertia, and the transmission passes what is left to the joints:

      tau_joint = T^-T (tau_drive - tau_friction_motor(qd_motor) - D qdd_motor),   qd_motor = T^-1 qd

  so ``(D + T' M(q) T) qdd_motor = tau_drive - tau_friction_motor - T' (h(q, qd) + tau_friction(qd))``,
  integrated by `motor_ident.sim.motor_chain.ChainSolver` (linear damping implicit, harmonic-drive
  stiction) with M(q) by CRBA. The measured joint torque is ``tau_joint``, the link-side torque
  of joint torque sensors or F/T-based estimates (iCub): motor friction and rotor inertia are
  *not* in it, as on the robot the paper identifies.

Sensors: joint positions quantised to the encoder resolution, velocities with noise, the measured
joint torque plus noise; motor encoders at the rotors (``rho T^-1 q`` and ``rho T^-1 qd``, motor
order of the transmission) and the motor torque at the rotor (``T' effort / rho`` with effort
commands; ``tau_drive / rho`` plus noise, what the drive's current gives, with PWM). The true
parameters stay available in `SimulatedRobot.truth` for tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.actuators.transmission import Transmission, build_transmission
from motor_ident.core.rigid_body.model import forward_dynamics, inverse_dynamics
from motor_ident.core.rigid_body.regressor import Regressor
from motor_ident.errors import ConfigError
from motor_ident.schema import check, inline, setting
from motor_ident.sim.motor_chain import ChainSolver, MotorChain, joint_inertia, motor_chains
from motor_ident.sim.mujoco_config import ENGINES, MujocoConfig

if TYPE_CHECKING:
    from motor_ident.io.robot_config import RobotConfig

FloatArray = NDArray[np.float64]

COMMAND_INTERFACES = ("effort", "pwm")
"""`PlantConfig.command_interface` values: joint torques, or motor duty cycles."""


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
        command_interface: ``effort`` (joint torques) or ``pwm`` (motor duty cycles through the
            motor chains and the transmission); see the module docstring.
        stick_velocity: ``pwm``: a motor chain slower than this may stick [rad/s].
        engine: ``pinocchio`` (this module: the estimator's own rigid-body model, exact recovery) or
            ``mujoco`` (`motor_ident.sim.mujoco_plant`: an independent engine with unmodelled effects).
        mujoco: settings of the ``mujoco`` engine only.
    """

    rate_hz: float = setting(1000.0, "simulation and publish rate", unit="Hz", low=0.0, high=1e5, open=(True, False))
    substeps: int = setting(2, "integration steps per published sample", low=1, high=1000)
    torque_noise_std: float = setting(0.05, "measured joint torque noise std", unit="N m", low=0.0)
    velocity_noise_std: float = setting(0.002, "measured velocity noise std", unit="rad/s", low=0.0)
    encoder_counts_per_rev: int = setting(2**18, "joint encoder resolution (0: ideal)", unit="counts/rev", low=0)
    seed: int = setting(0, "noise seed")
    command_interface: str = setting(
        "effort",
        "what the robot takes: effort (joint torques on effort_controller/commands) or pwm (duty cycles)",
        choices=COMMAND_INTERFACES,
    )
    stick_velocity: float = setting(1e-4, "pwm: a motor chain slower than this may stick", unit="rad/s", low=0.0)
    engine: str = setting(
        "pinocchio", "physics: pinocchio (exact, the estimator's model) or mujoco (independent)", choices=ENGINES
    )
    mujoco: MujocoConfig = inline(MujocoConfig)

    def __post_init__(self) -> None:
        check(self)


@dataclass(frozen=True)
class Measurement:
    """What the robot's sensors report at one instant, arrays of shape (n,).

    Attributes:
        t: time [s].
        q, qd, effort: joint positions [rad] (quantised), velocities [rad/s], torques [N m].
        motor_position, motor_velocity: rotor encoders, ``rho T^-1 q`` [rad] (not quantised) and
            ``rho T^-1 qd`` [rad/s], motor order of `SimulatedRobot.transmission`.
        motor_effort: motor torque at the rotor [N m] (see the module docstring).
    """

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
        friction_values: true joint-side friction parameters per joint (one array per joint).
        config: simulation settings.
        transmission: joints, motors and T of the motor encoders (and of the motor chains); one
            motor per joint with the model's gear ratios when None.
        chains: true motor chains, motor order of ``transmission``; needed for ``pwm``, where
            they carry the rotor inertias (the model's armature is then set to 0 and `truth`
            describes the link side).
        q0: initial joint positions (n,) [rad]; mid-range of the limits when None.

    Raises:
        ConfigError: ``pwm`` without chains, or chains / transmission not matching the joints.
    """

    def __init__(
        self,
        regressor: Regressor,
        friction_values: list[FloatArray],
        config: PlantConfig,
        *,
        transmission: Transmission | None = None,
        chains: tuple[MotorChain, ...] | None = None,
        q0: ArrayLike | None = None,
    ) -> None:
        robot = regressor.robot
        self.pwm_mode = config.command_interface == "pwm"
        if self.pwm_mode:
            if chains is None:
                raise ConfigError(
                    "command_interface = 'pwm' needs every motor's 'motor:' block and 'friction_values' in the "
                    "robot config"
                )
            robot = robot.with_rotor_inertia(np.zeros(robot.n))  # the rotors are in the motor chains
            regressor = Regressor(
                robot,
                regressor.friction,
                reflected_inertia=regressor.has_reflected_inertia,
                motor_drives=regressor.motor_drives,
            )
        self.transmission = transmission or build_transmission(robot.joint_names, gear_ratio=robot.gear_ratio)
        if self.transmission.joints != robot.joint_names:
            raise ConfigError(
                f"transmission joints {list(self.transmission.joints)}: expected the robot's {list(robot.joint_names)}"
            )
        if chains is not None and tuple(c.name for c in chains) != self.transmission.motors:
            raise ConfigError(
                f"motor chains {[c.name for c in chains]}: expected one per motor {list(self.transmission.motors)}"
            )
        self.chains = chains
        self._solver = ChainSolver(chains, config.stick_velocity) if chains is not None else None
        self.robot = robot
        self.regressor = regressor
        self.config = config
        self.truth = regressor.parameters(friction=friction_values)
        self._joint_friction = any(np.any(np.asarray(f) != 0.0) for f in friction_values)
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
        self.pwm_command = np.zeros(robot.n)
        self.tau_actuator = np.zeros(robot.n)
        self.tau_drive = np.zeros(robot.n)
        """``pwm``: torque of each motor at its gearbox output, ``K_pwm* PWM + tau_0 - back-EMF`` (m,) [N m]."""
        self.external_torque = np.zeros(robot.n)

    @property
    def dt(self) -> float:
        """Sample period [s]."""
        return 1.0 / self.config.rate_hz

    @property
    def joint_names(self) -> tuple[str, ...]:
        """The robot's joints, the order of every array."""
        return tuple(self.robot.joint_names)

    def reset(self, q0: ArrayLike | None = None) -> None:
        """Back to rest at ``q0`` (current position when None) and time 0."""
        if q0 is not None:
            self.q = np.asarray(q0, dtype=float).copy()
        self.qd[:] = 0.0
        self.qdd[:] = 0.0
        self.t = 0.0
        self.tau_command[:] = 0.0
        self.pwm_command[:] = 0.0

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
            self.robot,
            self.regressor.friction,
            reflected_inertia=self.regressor.has_reflected_inertia,
            motor_drives=self.regressor.motor_drives,
        )
        self.truth = self.regressor.parameters(friction=friction, motors=self.truth[self.regressor.layout.motor_block])
        self._data = self.robot.create_data()

    def set_effort(self, tau: ArrayLike) -> None:
        """Command joint torques (n,) [N m]; non-finite entries are ignored (previous value kept).

        Raises:
            ConfigError: this robot takes PWM commands.
        """
        if self.pwm_mode:
            raise ConfigError("this simulated robot takes motor duty cycles (command_interface = 'pwm')")
        tau = np.asarray(tau, dtype=float)
        self.tau_command = np.where(np.isfinite(tau), tau, self.tau_command)

    def set_pwm(self, duty: ArrayLike) -> None:
        """Command motor duty cycles (m,), motor order of `transmission`, saturated to each motor's limit.

        A non-finite duty becomes 0.

        Raises:
            ConfigError: this robot takes joint torques, or ``duty`` has the wrong shape.
        """
        if self._solver is None or not self.pwm_mode:
            raise ConfigError("this simulated robot takes joint torques (command_interface = 'effort')")
        duty = np.asarray(duty, dtype=float)
        if duty.shape != (self.robot.n,):
            raise ConfigError(
                f"duty cycles have shape {duty.shape}: expected ({self.robot.n},) for the motors "
                f"{list(self.transmission.motors)}"
            )
        self.pwm_command = self._solver.clip_duty(duty)

    def friction_torque(self, qd: ArrayLike) -> FloatArray:
        """True friction torque at joint velocities ``qd`` (n,) [N m]."""
        return self.regressor.friction_torque(qd, self.truth)

    def step(self) -> None:
        """Advance one sample period."""
        h = self.dt / self.config.substeps
        if self.pwm_mode:
            self._step_motors(h)
        else:
            self.tau_actuator = np.clip(self.tau_command, -self.effort_limit, self.effort_limit)
            for _ in range(self.config.substeps):
                net = self.tau_actuator + self.external_torque - self.friction_torque(self.qd)
                self.qdd = forward_dynamics(self.robot, self._data, self.q, self.qd, net)
                self.qd = self.qd + h * self.qdd
                self.q = self.q + h * self.qd
        self.t += self.dt

    def _step_motors(self, h: float) -> None:
        """``pwm``: the motor chains drive the links through T (module docstring), substeps of ``h`` [s]."""
        solver = self._solver
        assert solver is not None
        T, T_inv = self.transmission.T, self.transmission.T_inv
        tau_rest = solver.torque_at_rest(self.pwm_command)
        inertia = np.diag(solver.reflected_inertia) + h * np.diag(solver.linear_damping)
        free = np.zeros(self.robot.n, dtype=bool)
        zeros = np.zeros(self.robot.n)
        for _ in range(self.config.substeps):
            v = T_inv @ self.qd
            M = joint_inertia(self.robot, self._data, self.q)
            # what the links take from the transmission besides M qdd: Coriolis, gravity, joint friction
            load = inverse_dynamics(self.robot, self._data, self.q, self.qd, zeros) - self.external_torque
            if self._joint_friction:
                load = load + self.friction_torque(self.qd)
            A = inertia + T.T @ M @ T
            b = tau_rest - solver.back_emf * v - T.T @ load
            a, _, _ = solver.accelerations(A, b, v, h, free)
            self.qdd = T @ a
            self.tau_actuator = M @ self.qdd + load
            self.tau_drive = tau_rest - solver.back_emf * (v + h * a)
            self.qd = self.qd + h * self.qdd
            self.q = self.q + h * self.qd

    def measure(self) -> Measurement:
        """Sensor readings of the current state."""
        cfg, rng, n = self.config, self._rng, self.robot.n
        q = self.q
        if cfg.encoder_counts_per_rev:
            resolution = 2.0 * np.pi / cfg.encoder_counts_per_rev
            q = np.round(q / resolution) * resolution
        qd = self.qd + cfg.velocity_noise_std * rng.standard_normal(n)
        effort = self.tau_actuator + cfg.torque_noise_std * rng.standard_normal(n)
        tr = self.transmission
        if self.pwm_mode:
            tau_motor = self.tau_drive + cfg.torque_noise_std * rng.standard_normal(n)
        else:
            tau_motor = tr.motor_torque(effort)
        return Measurement(
            t=self.t,
            q=q,
            qd=qd,
            effort=effort,
            motor_position=tr.rotor_velocity(tr.motor_position(self.q)),
            motor_velocity=tr.rotor_velocity(tr.motor_velocity(qd)),
            motor_effort=tr.rotor_torque(tau_motor),
        )


def simulated_robot(config: RobotConfig, plant_config: PlantConfig, *, q0: ArrayLike | None = None) -> SimulatedRobot:
    """The `SimulatedRobot` of a robot config: URDF inertias, joint friction, transmission, motor chains for ``pwm``.

    Raises:
        ConfigError: ``pwm`` and a motor without its ``motor:`` block or ``friction_values``.
    """
    chains = motor_chains(config)[1] if plant_config.command_interface == "pwm" else None
    return SimulatedRobot(
        config.build_regressor(),
        config.nominal_friction(),
        plant_config,
        transmission=config.build_transmission(),
        chains=chains,
        q0=q0,
    )
