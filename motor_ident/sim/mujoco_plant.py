"""The independent plant: a robot simulated by MuJoCo, with effects the estimator does not model.

`MujocoRobot` has the interface of `motor_ident.sim.plant.SimulatedRobot` for joint torque
commands (``effort``): `set_effort`, `step`, `measure`, `reset`, `add_payload`, `dt`, `t`, `q`,
`truth`. Its physics shares no code with the estimator: MuJoCo compiles the robot config's URDF
(`motor_ident.sim.mujoco_model`: inertias, armature rho^2 I_m, viscous damping, constraint-based
dry friction, effort limits, hard position stops) and integrates it with its own integrator at
``substeps`` steps per sample.

Effects outside the estimator's model, on by default, each with its setting to turn it off:

- the dry friction is MuJoCo's ``frictionloss``, a constraint: a joint sticks at rest until the
  other torques exceed the dry level, where the estimator fits a smooth ``tanh`` sign
  (`motor_ident.sim.mujoco_model` lists which configured friction parameters it keeps);
- a quadratic friction ``d qd |qd|`` on every joint (``mujoco_quadratic_friction``, 0 = off);
- the command is applied ``mujoco_command_delay_samples`` samples late (0 = at the next step);
- the measured position is quantised to ``encoder_counts_per_rev`` (0 = ideal; the pinocchio plant
  shares this setting);
- the hard stops at the URDF's position limits, when the motion reaches them.

Sensors as in `SimulatedRobot`: velocity with Gaussian noise, the measured joint torque = the
actuator torque MuJoCo applied (after the delay and the effort limits) plus Gaussian noise, and
the rotor signals through the config's transmission. `truth` is the parameter vector the
estimator should find (`motor_ident.sim.mujoco_model.parameters_in_estimator_terms`: URDF
inertias read back from MuJoCo's model, armature, friction where the shapes coincide).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

import mujoco
import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.errors import ConfigError
from motor_ident.sim.mujoco_model import build_spec, joint_friction, parameters_in_estimator_terms
from motor_ident.sim.plant import Measurement, PlantConfig

if TYPE_CHECKING:
    from motor_ident.io.robot_config import RobotConfig

FloatArray = NDArray[np.float64]


def mujoco_refusal(config: RobotConfig, plant_config: PlantConfig) -> str | None:
    """Why MuJoCo cannot simulate this robot with these plant settings, or None when it can.

    It takes joint torques only (no PWM motor chains) and symmetric dry + viscous friction only.
    """
    if plant_config.command_interface != "effort":
        return (
            f"engine = 'mujoco' takes joint torques only (command_interface = 'effort'), not "
            f"{plant_config.command_interface!r}: its motor chains are simulated by engine = 'pinocchio'"
        )
    for name, drive in zip(config.joints, config.joint_parameters, strict=True):
        try:
            joint_friction(name, drive)
        except ConfigError as exc:
            return str(exc)
    return None


class MujocoRobot:
    """A robot config simulated by MuJoCo, commanded in joint torques (module docstring).

    Args:
        config: the robot config (URDF, joints, drives, friction).
        plant_config: rates, substeps, sensor noise and the ``mujoco_*`` settings.
        q0: initial joint positions (n,) [rad]; mid-range of the limits when None.

    Raises:
        ConfigError: ``command_interface = 'pwm'`` (the motor chains are not simulated here), a
            friction model without a MuJoCo counterpart, or ``q0`` of the wrong shape.
        ModelError: MuJoCo cannot read the URDF.
    """

    def __init__(self, config: RobotConfig, plant_config: PlantConfig, *, q0: ArrayLike | None = None) -> None:
        refusal = mujoco_refusal(config, plant_config)
        if refusal is not None:
            raise ConfigError(refusal)
        self.config = plant_config
        self.robot_config = config
        self.joint_names = tuple(config.joints)
        self.transmission = config.build_transmission()
        self.spec = build_spec(config, plant_config)
        self.model = self.spec.compile()
        self.data = mujoco.MjData(self.model)
        joint_ids = [self.model.joint(name).id for name in self.joint_names]
        self._qpos = np.asarray([self.model.jnt_qposadr[j] for j in joint_ids], dtype=np.int64)
        self._dof = np.asarray([self.model.jnt_dofadr[j] for j in joint_ids], dtype=np.int64)
        self._ctrl = np.asarray([self.model.actuator(f"{name}_motor").id for name in self.joint_names], dtype=np.int64)
        n = len(self.joint_names)
        limit = np.asarray(self.model.jnt_actfrcrange[joint_ids, 1], dtype=float)
        limited = np.asarray(self.model.jnt_actfrclimited[joint_ids], dtype=bool)
        self.effort_limit = np.where(limited & (limit > 0.0), limit, np.inf)
        """|torque| limit per joint, the URDF's effort limits (inf where none) [N m]."""
        lower, upper = self.model.jnt_range[joint_ids].T
        limited_range = np.asarray(self.model.jnt_limited[joint_ids], dtype=bool) & (upper > lower)
        start = np.where(limited_range, 0.5 * (lower + upper), 0.0) if q0 is None else np.asarray(q0, dtype=float)
        if start.shape != (n,):
            raise ConfigError(f"initial position has shape {start.shape}: expected ({n},)")
        self.truth = parameters_in_estimator_terms(self.model, config)
        """The parameters the estimator should find, the regressor's layout (module docstring), shape (p,)."""
        self._rng = np.random.default_rng(plant_config.seed)
        self.tau_command = np.zeros(n)
        self.tau_actuator = np.zeros(n)
        """Joint torque MuJoCo applied over the last sample (delayed, clamped) (n,) [N m]."""
        self.external_torque = np.zeros(n)
        """Joint torque of the environment (n,) [N m], applied as MuJoCo's ``qfrc_applied``."""
        self._delayed: deque[FloatArray] = deque(maxlen=plant_config.mujoco.mujoco_command_delay_samples + 1)
        self.t = 0.0
        self.reset(start)

    @property
    def dt(self) -> float:
        """Sample period [s]."""
        return 1.0 / self.config.rate_hz

    @property
    def q(self) -> FloatArray:
        """True joint positions (n,) [rad]."""
        q: FloatArray = self.data.qpos[self._qpos].copy()
        return q

    @property
    def qd(self) -> FloatArray:
        """True joint velocities (n,) [rad/s]."""
        qd: FloatArray = self.data.qvel[self._dof].copy()
        return qd

    def reset(self, q0: ArrayLike | None = None) -> None:
        """Back to rest at ``q0`` (current position when None) and time 0, no command pending."""
        q = self.q if q0 is None else np.asarray(q0, dtype=float).copy()
        mujoco.mj_resetData(self.model, self.data)
        self.data.qpos[self._qpos] = q
        mujoco.mj_forward(self.model, self.data)
        self.t = 0.0
        self.tau_command[:] = 0.0
        self.tau_actuator[:] = 0.0
        self._delayed.clear()

    def add_payload(self, mass: float, com: ArrayLike, *, joint: int = -1) -> None:
        """Rigidly attach a point mass [kg] at ``com`` (3,) [m] in the frame of ``joint``'s body.

        A new MuJoCo body, welded to the joint's body; the state carries over and `truth` follows.
        """
        jid = self.model.joint(self.joint_names[joint]).id
        parent = self.spec.body(self.model.body(self.model.jnt_bodyid[jid]).name)
        count = sum(1 for b in self.spec.bodies if b.name.startswith("payload_"))
        parent.add_body(
            name=f"payload_{count}",
            pos=np.asarray(com, dtype=float),
            ipos=np.zeros(3),
            mass=float(mass),
            inertia=[0.0, 0.0, 0.0],
            explicitinertial=True,
        )
        self.model, self.data = self.spec.recompile(self.model, self.data)
        self.truth = parameters_in_estimator_terms(self.model, self.robot_config)

    def set_effort(self, tau: ArrayLike) -> None:
        """Command joint torques (n,) [N m]; non-finite entries are ignored (previous value kept)."""
        tau = np.asarray(tau, dtype=float)
        self.tau_command = np.where(np.isfinite(tau), tau, self.tau_command)

    def set_pwm(self, duty: ArrayLike) -> None:
        """Refused: this plant takes joint torques.

        Raises:
            ConfigError: always.
        """
        raise ConfigError("the mujoco engine takes joint torques (command_interface = 'effort')")

    def step(self) -> None:
        """Advance one sample period: the delayed command, clamped to the effort limits, over ``substeps`` steps."""
        self._delayed.append(self.tau_command.copy())
        applied = self._delayed[0] if len(self._delayed) == self._delayed.maxlen else np.zeros_like(self.tau_command)
        self.data.ctrl[self._ctrl] = applied
        self.data.qfrc_applied[self._dof] = self.external_torque
        mujoco.mj_step(self.model, self.data, nstep=self.config.substeps)
        self.tau_actuator = self.data.qfrc_actuator[self._dof].copy()
        self.t += self.dt

    def measure(self) -> Measurement:
        """Sensor readings of the current state."""
        cfg, rng, n = self.config, self._rng, len(self.joint_names)
        q_true = self.q
        q = q_true
        if cfg.encoder_counts_per_rev:
            resolution = 2.0 * np.pi / cfg.encoder_counts_per_rev
            q = np.round(q_true / resolution) * resolution
        qd = self.qd + cfg.velocity_noise_std * rng.standard_normal(n)
        effort = self.tau_actuator + cfg.torque_noise_std * rng.standard_normal(n)
        tr = self.transmission
        return Measurement(
            t=self.t,
            q=q,
            qd=qd,
            effort=effort,
            motor_position=tr.rotor_velocity(tr.motor_position(q_true)),
            motor_velocity=tr.rotor_velocity(tr.motor_velocity(qd)),
            motor_effort=tr.rotor_torque(tr.motor_torque(effort)),
        )
