"""ROS-free actuator simulation: motors + harmonic drives driving joints through a coupling (Guedelha et al. 2021).

State: the gearbox-output positions and velocities of the ``m`` motors (``q_motor``, ``qd_motor``);
the joints follow rigidly, ``q_joint = T q_motor``. Each motor chain follows
`motor_ident.sim.motor_chain` (Guedelha et al. eq. 13-18, harmonic-drive stiction, brakes); the links
add

    M_link qdd_joint = tau_joint + tau_external

with ``M_link`` the link inertia at the joints (constant, from the URDF at its neutral pose; gravity
is taken as compensated, as the paper's torque estimates are). Eliminating ``tau_joint`` gives
``(D + T' M_link T) qdd_motor = tau_pwm - tau_friction + T' tau_external``. The measured joint
torque is ``tau_joint = M_link qdd_joint - tau_external``.

Integration: fixed step ``1 / (rate_hz substeps)``, semi-implicit Euler (velocity first), with the
linear damping (viscous friction, back-EMF, external actuator damping) taken implicitly so that
the large K_v of Table 1 (up to 76 N m s/rad) stays stable at a 1 ms step; the chains' step is
`motor_ident.sim.motor_chain.ChainSolver`.

External actuator (sec. 4.1.1): a stiff PD in joint space tracking a reference, back-driving the
joints whatever the PWM. Sensors at ``rate_hz`` (100 Hz, as in the paper): joint encoders
(quantised + noise), joint velocity, joint acceleration (as from inertial sensors) and motor
velocity (high-resolution motor encoder divided by rho, Note 3.1), joint torque with noise, and
the applied PWM.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.actuators.transmission import Transmission
from motor_ident.errors import ConfigError
from motor_ident.sim.motor_chain import ChainSolver, MotorChain, joint_inertia, motor_chains

if TYPE_CHECKING:
    from motor_ident.io.robot_config import RobotConfig

FloatArray = NDArray[np.float64]
Reference = Callable[[FloatArray], tuple[FloatArray, FloatArray]]
"""``reference(t)``: times (K,) [s] -> joint positions and velocities (K, n) [rad, rad/s]."""
PwmSchedule = Callable[[FloatArray], FloatArray]
"""``pwm(t)``: times (K,) [s] -> duty cycles (K, m), open loop."""
PwmController = Callable[[float, FloatArray], FloatArray]
"""``controller(t, qd_motor_measured)`` -> duty cycles (m,), called at every sample (zero-order hold)."""


@dataclass(frozen=True, eq=False)
class ActuatorPlant:
    """Motors, transmission and links of the simulated actuators.

    Attributes:
        transmission: joints, motors and T.
        chains: true drive data, motor order.
        link_inertia: link inertia at the joints, shape (n, n) [kg m^2].
    """

    transmission: Transmission
    chains: tuple[MotorChain, ...]
    link_inertia: FloatArray

    def __post_init__(self) -> None:
        n = self.transmission.n
        if len(self.chains) != n or tuple(c.name for c in self.chains) != self.transmission.motors:
            raise ConfigError(
                f"chains {[c.name for c in self.chains]}: expected one per motor {list(self.transmission.motors)}"
            )
        M = np.asarray(self.link_inertia, dtype=float)
        if M.shape != (n, n) or not np.all(np.isfinite(M)):
            raise ConfigError(f"link_inertia has shape {M.shape}: expected ({n}, {n}) finite")
        object.__setattr__(self, "link_inertia", M)

    @property
    def reflected_inertia(self) -> FloatArray:
        """D per motor, shape (m,) [kg m^2]."""
        return np.array([c.reflected_inertia for c in self.chains])


@dataclass(frozen=True)
class ActuatorSimConfig:
    """Integration, external actuator and sensor settings.

    Attributes:
        rate_hz: sample rate of the records [Hz] (Guedelha et al.: 100 Hz).
        substeps: integration steps per sample.
        stick_velocity: below this a chain may stick [rad/s].
        external_stiffness: external actuator PD stiffness per joint [N m/rad].
        external_damping: external actuator PD damping per joint [N m s/rad].
        torque_noise_std: joint torque measurement noise [N m] (F/T-based estimates on iCub).
        joint_velocity_noise_std: joint velocity noise [rad/s].
        motor_velocity_noise_std: gearbox-output velocity noise from the motor encoder [rad/s].
        acceleration_noise_std: joint / motor acceleration noise [rad/s^2].
        encoder_counts_per_rev: joint encoder resolution (0 = none).
        seed: noise seed.
    """

    rate_hz: float = 100.0
    substeps: int = 5
    stick_velocity: float = 1e-4
    external_stiffness: float = 3000.0
    external_damping: float = 60.0
    torque_noise_std: float = 0.05
    joint_velocity_noise_std: float = 2e-3
    motor_velocity_noise_std: float = 2e-4
    acceleration_noise_std: float = 0.05
    encoder_counts_per_rev: int = 2**14
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.rate_hz > 0.0:
            raise ConfigError(f"rate_hz = {self.rate_hz!r}: expected > 0")
        if self.substeps < 1:
            raise ConfigError(f"substeps = {self.substeps!r}: expected >= 1")
        for key in (
            "stick_velocity",
            "external_stiffness",
            "external_damping",
            "torque_noise_std",
            "joint_velocity_noise_std",
            "motor_velocity_noise_std",
            "acceleration_noise_std",
        ):
            if not getattr(self, key) >= 0.0:
                raise ConfigError(f"{key} = {getattr(self, key)!r}: expected >= 0")


@dataclass(frozen=True, eq=False)
class ActuatorRecord:
    """Samples at ``rate_hz``; measured values with noise, ``true_*`` without.

    Shapes: N samples, n joints, m = n motors. Units rad, rad/s, rad/s^2, N m, duty fraction.
    """

    joints: tuple[str, ...]
    motors: tuple[str, ...]
    t: FloatArray
    q_joint: FloatArray
    qd_joint: FloatArray
    qdd_joint: FloatArray
    qd_motor: FloatArray
    qdd_motor: FloatArray
    tau_joint: FloatArray
    pwm: FloatArray
    true_qd_motor: FloatArray
    true_tau_joint: FloatArray
    true_friction: FloatArray
    stuck: NDArray[np.bool_] = field(repr=False)


def plant_from_config(config: RobotConfig) -> ActuatorPlant:
    """`ActuatorPlant` of a `motor_ident.io.robot_config.RobotConfig` (its motors' friction and motor blocks).

    Raises:
        ConfigError: a motor has no ``motor:`` block or no ``friction_values``.
    """
    transmission, chains = motor_chains(config)
    robot = config.build_model().with_rotor_inertia(np.zeros(len(transmission.joints)))
    M = joint_inertia(robot, robot.create_data(), np.zeros(robot.n))  # at q = 0, where `simulate` starts
    return ActuatorPlant(transmission=transmission, chains=chains, link_inertia=M)


def simulate(
    plant: ActuatorPlant,
    *,
    duration: float,
    reference: Reference | None = None,
    pwm: PwmSchedule | None = None,
    controller: PwmController | None = None,
    locked: Sequence[str] = (),
    config: ActuatorSimConfig = ActuatorSimConfig(),
) -> ActuatorRecord:
    """Simulate the actuators for ``duration`` seconds from rest at q = 0.

    Args:
        plant: motors, transmission and links.
        duration: simulated time [s].
        reference: external actuator reference; None = no external actuator.
        pwm: open-loop duty schedule (K, m); None = 0 (unless ``controller``).
        controller: closed-loop duty from the measured motor velocities, called at ``rate_hz``.
        locked: motors held by a brake at their start position.
        config: integration and sensors.

    Returns:
        The record at ``rate_hz``.
    """
    if pwm is not None and controller is not None:
        raise ConfigError("simulate: give pwm or controller, not both")
    tr = plant.transmission
    n = tr.n
    unknown = [m for m in locked if m not in tr.motors]
    if unknown:
        raise ConfigError(f"locked = {list(locked)}: {unknown} are not motors {list(tr.motors)}")
    is_locked = np.array([m in locked for m in tr.motors])
    rng = np.random.default_rng(config.seed)
    n_samples = int(round(duration * config.rate_hz))
    sub = config.substeps
    h = 1.0 / (config.rate_hz * sub)
    T = tr.T
    M = plant.link_inertia
    D = plant.reflected_inertia
    solver = ChainSolver(plant.chains, config.stick_velocity)
    back_emf = solver.back_emf
    zeros = np.zeros(n)
    kp = config.external_stiffness if reference is not None else 0.0
    kd = config.external_damping if reference is not None else 0.0
    A = np.diag(D) + T.T @ M @ T + h * (np.diag(solver.linear_damping) + kd * T.T @ T)
    A_inv = cast(FloatArray, np.linalg.inv(A))

    t_fine: FloatArray = np.arange(n_samples * sub, dtype=np.float64) * h
    if reference is not None:
        q_ref, qd_ref = (np.asarray(x, dtype=float) for x in reference(t_fine))
        if q_ref.shape != (t_fine.size, n) or qd_ref.shape != (t_fine.size, n):
            raise ConfigError(f"reference returned shapes {q_ref.shape}, {qd_ref.shape}: expected ({t_fine.size}, {n})")
    duty_schedule = None
    if pwm is not None:
        duty_schedule = np.asarray(pwm(t_fine[::sub]), dtype=float)
        if duty_schedule.shape != (n_samples, n):
            raise ConfigError(f"pwm returned shape {duty_schedule.shape}: expected ({n_samples}, {n})")

    q = np.zeros(n)
    v = np.zeros(n)
    a = np.zeros(n)
    out = {
        key: np.zeros((n_samples, n))
        for key in ("q_joint", "qd_joint", "qdd_joint", "qd_motor", "qdd_motor", "tau_joint", "pwm", "friction")
    }
    stuck_out = np.zeros((n_samples, n), dtype=bool)
    measured_qd_motor = np.zeros(n)
    duty = np.zeros(n)
    friction = np.zeros(n)
    tau_joint = np.zeros(n)
    stuck = np.zeros(n, dtype=bool)
    for i in range(n_samples):
        if duty_schedule is not None:
            duty = duty_schedule[i]
        elif controller is not None:
            duty = np.asarray(controller(i / config.rate_hz, measured_qd_motor.copy()), dtype=float)
        duty = solver.clip_duty(duty)
        # motor torque at rest for this duty (held over the sample); back-EMF added per step below
        tau_pwm_rest = solver.torque_at_rest(duty)
        for s in range(sub):
            k_fine = i * sub + s
            if reference is not None:
                tau_ext = kp * (q_ref[k_fine] - T @ q) + kd * (qd_ref[k_fine] - T @ v)
                b = tau_pwm_rest - back_emf * v + T.T @ tau_ext
            else:
                tau_ext = zeros
                b = tau_pwm_rest - back_emf * v
            # linear damping is implicit: A holds h (viscous + back-EMF + T' kd T), b the explicit parts
            a, stuck, friction = solver.accelerations(A, b, v, h, is_locked, A_inv=A_inv)
            v = v + h * a
            q = q + h * v
        a_joint = T @ a
        tau_joint = M @ a_joint - (tau_ext - kd * h * a_joint)
        out["q_joint"][i] = T @ q
        out["qd_joint"][i] = T @ v
        out["qdd_joint"][i] = T @ a
        out["qd_motor"][i] = v
        out["qdd_motor"][i] = a
        out["tau_joint"][i] = tau_joint
        out["pwm"][i] = duty
        # friction at the end-of-step velocity (its linear part is integrated implicitly)
        out["friction"][i] = np.where(stuck, friction, friction + h * solver.viscous * a)
        stuck_out[i] = stuck
        measured_qd_motor = v + config.motor_velocity_noise_std * rng.standard_normal(n)

    shape = (n_samples, n)
    q_meas = out["q_joint"] + 0.0
    if config.encoder_counts_per_rev > 0:
        step = 2.0 * np.pi / config.encoder_counts_per_rev
        q_meas = np.round(q_meas / step) * step
    return ActuatorRecord(
        joints=tr.joints,
        motors=tr.motors,
        t=np.arange(n_samples) / config.rate_hz,
        q_joint=q_meas,
        qd_joint=out["qd_joint"] + config.joint_velocity_noise_std * rng.standard_normal(shape),
        qdd_joint=out["qdd_joint"] + config.acceleration_noise_std * rng.standard_normal(shape),
        qd_motor=out["qd_motor"] + config.motor_velocity_noise_std * rng.standard_normal(shape),
        qdd_motor=out["qdd_motor"] + config.acceleration_noise_std * rng.standard_normal(shape),
        tau_joint=out["tau_joint"] + config.torque_noise_std * rng.standard_normal(shape),
        pwm=out["pwm"],
        true_qd_motor=out["qd_motor"],
        true_tau_joint=out["tau_joint"],
        true_friction=out["friction"],
        stuck=stuck_out,
    )


def oscillation(
    direction: ArrayLike,
    *,
    v_max: float,
    v_min: float = 0.0,
    period: float = 4.0,
    envelope_period: float = 20.0,
) -> Reference:
    """Reference moving along ``direction`` (n,) with a velocity amplitude swept in [v_min, v_max].

    ``s(t) = -V(t) cos(w t) / w`` with ``V(t) = v_min + (v_max - v_min) (1 - cos(2 pi t / envelope_period)) / 2``
    and ``w = 2 pi / period``; the joint reference is ``direction * s`` and its exact derivative.
    Every velocity from 0 to the current amplitude is crossed twice per period, so the friction is
    seen over the whole range, densely near rest (the Stribeck region).
    """
    u = np.asarray(direction, dtype=float)
    w = 2.0 * np.pi / period
    we = 2.0 * np.pi / envelope_period

    def reference(t: FloatArray) -> tuple[FloatArray, FloatArray]:
        V = v_min + (v_max - v_min) * 0.5 * (1.0 - np.cos(we * t))
        dV = (v_max - v_min) * 0.5 * we * np.sin(we * t)
        s = -V * np.cos(w * t) / w
        ds = V * np.sin(w * t) - dV * np.cos(w * t) / w
        return np.outer(s, u), np.outer(ds, u)

    return reference


def random_pwm(
    n_motors: int,
    *,
    amplitude: float,
    active: Sequence[bool] | None = None,
    frequencies: tuple[float, float] = (0.2, 2.0),
    components: int = 6,
    seed: int = 0,
) -> PwmSchedule:
    """Open-loop duty: per active motor a sum of sines at random frequencies in ``frequencies`` [Hz],
    scaled so its peak is ``amplitude`` (fraction of full duty); inactive motors get 0."""
    rng = np.random.default_rng(seed)
    mask = np.ones(n_motors, dtype=bool) if active is None else np.asarray(active, dtype=bool)
    f = rng.uniform(*frequencies, size=(components, n_motors))
    phase = rng.uniform(0.0, 2.0 * np.pi, size=(components, n_motors))

    def schedule(t: FloatArray) -> FloatArray:
        x = np.sum(np.sin(2.0 * np.pi * f[None] * t[:, None, None] + phase[None]), axis=1)
        peak = np.max(np.abs(x), axis=0)
        return amplitude * mask * x / np.where(peak > 0.0, peak, 1.0)

    return schedule
