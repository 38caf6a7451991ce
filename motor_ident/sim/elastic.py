"""Elastic-joint simulators: Xin et al.'s single-joint test bench and the 6-DoF ``elastic_arm6``.

Both keep motor and link as separate bodies joined by a spring-damper (Xin et al. 2020, eq. 1), read the
motor side with a motor encoder (counts per motor revolution, through the gear ratio N) and the
link side with a link encoder, and may add a cogging torque ripple on the motor side::

    tau_ripple = A sin(cycles_per_motor_rev * N * theta_m + phase)      (link-side referred)

`ElasticJointBench`: the linear two-inertia model is discretised exactly (matrix exponential,
torque held over each substep); the ripple enters as an input held over the substep.

`ElasticArm`: link dynamics from pinocchio (`forward_dynamics` on a model WITHOUT rotor armature:
the rotors are on the motor side of the springs), one motor inertia per joint, integrated by
semi-implicit Euler with substeps. The measured joint torque ``effort`` is the motor torque (the
current times the torque constant, as on an arm without torque sensors, Liu et al. 2023), and the
harmonic drive loses a load-dependent friction torque ``mu |tau_j| tanh(v_m / v_s)`` on the motor
side (efficiency below 1 that grows with the transmitted torque, Xin et al. 2020, section 2, Liu et al. 2023
refs. 28-29) — the part a rigid-body + velocity-friction model cannot explain and the
double-encoder residual model of Liu et al. 2023 is meant to catch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import scipy.linalg
from numpy.typing import ArrayLike, NDArray

from motor_ident.core.elastic.two_inertia import TwoInertiaParameters
from motor_ident.core.rigid_body.model import RobotModel, forward_dynamics, inverse_dynamics
from motor_ident.errors import ConfigError
from motor_ident.papers.xin.bench import XIN_GEAR_RATIO, XIN_RATE_HZ
from motor_ident.schema import read_yaml

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class EncoderConfig:
    """Encoders and ripple of an elastic joint.

    Attributes:
        motor_counts_per_rev: motor encoder counts per MOTOR revolution (0: no quantisation).
        link_counts_per_rev: link encoder counts per link revolution (0: no quantisation).
        ripple_amplitude: cogging torque amplitude, link-side referred [N m] (0: none).
        ripple_cycles_per_rev: ripple periods per motor revolution [-].
    """

    motor_counts_per_rev: int = 2**17
    link_counts_per_rev: int = 2**20
    ripple_amplitude: float = 0.0
    ripple_cycles_per_rev: float = 6.0

    def __post_init__(self) -> None:
        for key in ("motor_counts_per_rev", "link_counts_per_rev"):
            if getattr(self, key) < 0:
                raise ConfigError(f"{key} = {getattr(self, key)!r}: expected an integer >= 0")
        if not (np.isfinite(self.ripple_amplitude) and self.ripple_amplitude >= 0.0):
            raise ConfigError(f"ripple_amplitude = {self.ripple_amplitude!r}: expected a finite number >= 0")
        if not self.ripple_cycles_per_rev > 0.0:
            raise ConfigError(f"ripple_cycles_per_rev = {self.ripple_cycles_per_rev!r}: expected > 0")


def quantise(x: ArrayLike, counts_per_rev: float) -> FloatArray:
    """Angle(s) [rad] rounded to an encoder of ``counts_per_rev`` (0: unchanged)."""
    x = np.asarray(x, dtype=float)
    if counts_per_rev <= 0:
        return x
    step = 2.0 * np.pi / counts_per_rev
    return np.round(x / step) * step


def ripple_torque(theta_motor_link: ArrayLike, gear_ratio: float, encoders: EncoderConfig) -> FloatArray:
    """Cogging torque at link-side referred motor angle(s) [rad] -> [N m] (link-side referred)."""
    theta = np.asarray(theta_motor_link, dtype=float)
    return encoders.ripple_amplitude * np.sin(encoders.ripple_cycles_per_rev * gear_ratio * theta)


@dataclass(frozen=True)
class BenchMeasurement:
    """Sensor readings of one joint (link-side referred, motor angle = motor encoder / N).

    Attributes: t [s]; motor_position, link_position [rad]; motor_velocity, link_velocity
    [rad/s] (backward differences of the quantised encoders, as a drive computes them).
    """

    t: float
    motor_position: float
    link_position: float
    motor_velocity: float
    link_velocity: float


class ElasticJointBench:
    """Single two-inertia joint (Xin et al. 2020 test bench), exact discretisation.

    Args:
        params: the joint (link-side referred).
        gear_ratio: N [-].
        encoders: encoders and ripple.
        rate_hz: sample rate [Hz].
        substeps: integration steps per sample (the ripple is held over each).
    """

    def __init__(
        self,
        params: TwoInertiaParameters,
        *,
        gear_ratio: float = XIN_GEAR_RATIO,
        encoders: EncoderConfig | None = None,
        rate_hz: float = XIN_RATE_HZ,
        substeps: int = 4,
    ) -> None:
        if not rate_hz > 0.0 or substeps < 1 or not gear_ratio > 0.0:
            raise ConfigError(f"rate_hz {rate_hz!r}, substeps {substeps!r}, gear_ratio {gear_ratio!r}: invalid")
        self.params = params
        self.gear_ratio = float(gear_ratio)
        self.encoders = encoders or EncoderConfig()
        self.rate_hz = float(rate_hz)
        self.substeps = int(substeps)
        jm, jl, k = params.motor_inertia, params.load_inertia, params.stiffness
        bm, bl, d = params.motor_damping, params.load_damping, params.damping
        # state x = [theta_m, v_m, theta_l, v_l]
        a = np.array(
            [
                [0.0, 1.0, 0.0, 0.0],
                [-k / jm, -(bm + d) / jm, k / jm, d / jm],
                [0.0, 0.0, 0.0, 1.0],
                [k / jl, d / jl, -k / jl, -(bl + d) / jl],
            ]
        )
        b = np.array([[0.0, 0.0], [1.0 / jm, 0.0], [0.0, 0.0], [0.0, 1.0 / jl]])  # motor torque, load torque
        h = 1.0 / (self.rate_hz * self.substeps)
        big = np.zeros((6, 6))
        big[:4, :4], big[:4, 4:] = a * h, b * h
        e = scipy.linalg.expm(big)
        self._ad, self._bd = e[:4, :4], e[:4, 4:]
        self.x = np.zeros(4)
        self.t = 0.0
        self._last = (0.0, 0.0)

    @property
    def dt(self) -> float:
        """Sample period [s]."""
        return 1.0 / self.rate_hz

    def reset(self) -> None:
        """Back to rest at zero angles and time 0."""
        self.x[:] = 0.0
        self.t = 0.0
        self._last = (0.0, 0.0)

    def step(self, tau_motor: float, tau_load: float = 0.0) -> None:
        """Advance one sample with motor torque [N m, link side] and an external load torque [N m]."""
        tau = float(tau_motor) if np.isfinite(tau_motor) else 0.0
        for _ in range(self.substeps):
            ripple = float(ripple_torque(self.x[0], self.gear_ratio, self.encoders))
            self.x = self._ad @ self.x + self._bd @ np.array([tau + ripple, tau_load])
        self.t += self.dt

    def measure(self) -> BenchMeasurement:
        """Encoder readings; velocities are backward differences of the quantised angles."""
        enc = self.encoders
        theta_m = float(quantise(self.x[0] * self.gear_ratio, enc.motor_counts_per_rev)) / self.gear_ratio
        theta_l = float(quantise(self.x[2], enc.link_counts_per_rev))
        v_m = (theta_m - self._last[0]) * self.rate_hz
        v_l = (theta_l - self._last[1]) * self.rate_hz
        self._last = (theta_m, theta_l)
        return BenchMeasurement(self.t, theta_m, theta_l, v_m, v_l)


def simulate_open_loop(bench: ElasticJointBench, tau_motor: ArrayLike) -> tuple[FloatArray, FloatArray]:
    """Drive the bench with a torque sequence (N,) [N m]; returns measured v_m and v_l (N,) [rad/s]."""
    tau = np.asarray(tau_motor, dtype=float)
    v_m, v_l = np.zeros(tau.size), np.zeros(tau.size)
    bench.measure()  # initialise the difference
    for k, u in enumerate(tau):
        bench.step(u)
        m = bench.measure()
        v_m[k], v_l[k] = m.motor_velocity, m.link_velocity
    return v_m, v_l


@dataclass(frozen=True)
class ElasticJointParameters:
    """Per-joint elasticity of an arm joint (the robot config's optional ``elastic:`` block).

    Attributes:
        stiffness: K [N m/rad] (link side).
        damping: D [N m s/rad] (link side).
        motor_inertia: rotor inertia on the MOTOR side [kg m^2] (seen from the link as N^2 I).
        motor_damping: rotor viscous damping on the MOTOR side [N m s/rad] (N^2 b from the link).
        load_friction: mu, load-dependent transmission friction coefficient [-] (sim only).
    """

    stiffness: float
    damping: float = 0.0
    motor_inertia: float = 0.0
    motor_damping: float = 0.0
    load_friction: float = 0.0

    def __post_init__(self) -> None:
        if not (np.isfinite(self.stiffness) and self.stiffness > 0.0):
            raise ConfigError(f"elastic.stiffness = {self.stiffness!r}: expected a finite number > 0")
        for key in ("damping", "motor_inertia", "motor_damping", "load_friction"):
            value = getattr(self, key)
            if not (np.isfinite(value) and value >= 0.0):
                raise ConfigError(f"elastic.{key} = {value!r}: expected a finite number >= 0")


@dataclass(frozen=True)
class ArmMeasurement:
    """Sensor readings of the elastic arm (arrays (n,), link-side referred motor angles)."""

    t: float
    q: FloatArray
    qd: FloatArray
    motor_position: FloatArray
    motor_velocity: FloatArray
    effort: FloatArray


class ElasticArm:
    """An n-joint arm with elastic joints: pinocchio link dynamics, one motor per joint.

    Args:
        robot: rigid link model (its rotor inertias are ignored: the motors sit behind the springs).
        elastic: per-joint elasticity (n,).
        link_friction: callable v (n,) -> link-side friction torque (n,) [N m], or None.
        encoders: encoders (quantisation) shared by the joints.
        rate_hz, substeps: sample rate [Hz] and integration steps per sample.
        torque_noise_std: std of the measured motor torque [N m].
        velocity_smoothing: v_s of the load-dependent friction's tanh sign [rad/s].
    """

    def __init__(
        self,
        robot: RobotModel,
        elastic: list[ElasticJointParameters],
        *,
        link_friction: Callable[[FloatArray], ArrayLike] | None = None,
        encoders: EncoderConfig | None = None,
        rate_hz: float = 500.0,
        substeps: int = 8,
        torque_noise_std: float = 0.0,
        velocity_smoothing: float = 0.01,
        seed: int = 0,
        q0: ArrayLike | None = None,
    ) -> None:
        if len(elastic) != robot.n:
            raise ConfigError(f"elastic parameters for {len(elastic)} joints: expected {robot.n}")
        self.robot = robot.with_rotor_inertia(np.zeros(robot.n))
        self.elastic = list(elastic)
        n = robot.n
        ratio = robot.gear_ratio
        self.k = np.array([e.stiffness for e in elastic])
        self.d = np.array([e.damping for e in elastic])
        self.jm = ratio**2 * np.array([e.motor_inertia for e in elastic])
        self.bm = ratio**2 * np.array([e.motor_damping for e in elastic])
        self.mu = np.array([e.load_friction for e in elastic])
        if np.any(self.jm <= 0.0):
            raise ConfigError("every elastic joint needs elastic.motor_inertia > 0")
        self.link_friction = link_friction
        self.encoders = encoders or EncoderConfig()
        self.rate_hz, self.substeps = float(rate_hz), int(substeps)
        self.torque_noise_std = float(torque_noise_std)
        self.velocity_smoothing = float(velocity_smoothing)
        self._rng = np.random.default_rng(seed)
        self._data = self.robot.create_data()
        self.q = np.zeros(n) if q0 is None else np.asarray(q0, dtype=float).copy()
        self.qd = np.zeros(n)
        self.theta_m = self.q.copy()
        self.v_m = np.zeros(n)
        self.t = 0.0
        self.tau_motor = np.zeros(n)
        self.settle()

    @property
    def n(self) -> int:
        """Number of joints."""
        return self.robot.n

    @property
    def dt(self) -> float:
        """Sample period [s]."""
        return 1.0 / self.rate_hz

    def joint_torque(self) -> FloatArray:
        """Spring-damper torque tau_j = K delta + D delta_dot (n,) [N m]."""
        return self.k * (self.theta_m - self.q) + self.d * (self.v_m - self.qd)

    def settle(self) -> None:
        """Wind the springs up to hold the current pose against gravity (motor at rest)."""
        zeros = np.zeros(self.n)
        gravity = inverse_dynamics(self.robot, self._data, self.q, zeros, zeros)
        self.theta_m = self.q + gravity / self.k
        self.v_m[:] = 0.0
        self.qd[:] = 0.0
        self.tau_motor = gravity.copy()

    def _link_friction(self, v: FloatArray) -> FloatArray:
        if self.link_friction is None:
            return np.zeros_like(v)
        return np.asarray(self.link_friction(v), dtype=float)

    def transmission_loss(self, tau_j: FloatArray, v_m: FloatArray) -> FloatArray:
        """Load-dependent harmonic-drive friction mu |tau_j| tanh(v_m / v_s) (n,) [N m]."""
        return self.mu * np.abs(tau_j) * np.tanh(v_m / self.velocity_smoothing)

    def step(self, tau_motor: ArrayLike) -> None:
        """Advance one sample with motor torques (n,) [N m, link-side referred]."""
        tau = np.asarray(tau_motor, dtype=float)
        self.tau_motor = np.where(np.isfinite(tau), tau, self.tau_motor)
        h = self.dt / self.substeps
        ratio = self.robot.gear_ratio
        for _ in range(self.substeps):
            tau_j = self.joint_torque()
            ripple = ripple_torque(self.theta_m * ratio, 1.0, self.encoders)
            a_m = (
                self.tau_motor + ripple - tau_j - self.bm * self.v_m - self.transmission_loss(tau_j, self.v_m)
            ) / self.jm
            a_l = forward_dynamics(self.robot, self._data, self.q, self.qd, tau_j - self._link_friction(self.qd))
            self.v_m = self.v_m + h * a_m
            self.qd = self.qd + h * a_l
            self.theta_m = self.theta_m + h * self.v_m
            self.q = self.q + h * self.qd
        self.t += self.dt

    def measure(self) -> ArmMeasurement:
        """Quantised encoders (velocities exact plus nothing: derive them offline) and motor torque."""
        ratio = self.robot.gear_ratio
        enc = self.encoders
        theta_m = quantise(self.theta_m * ratio, enc.motor_counts_per_rev) / ratio
        q = quantise(self.q, enc.link_counts_per_rev)
        effort = self.tau_motor + self.torque_noise_std * self._rng.standard_normal(self.n)
        return ArmMeasurement(self.t, q, self.qd.copy(), theta_m, self.v_m.copy(), effort)


@dataclass(frozen=True)
class LoopRecord:
    """Samples of a closed velocity loop on the bench (each (N,)).

    Attributes: t [s]; torque [N m]; motor_velocity, link_velocity: true (unquantised) link-side
    referred velocities [rad/s]; rigid_velocity: the controller's v_r [rad/s].
    """

    t: FloatArray
    torque: FloatArray
    motor_velocity: FloatArray
    link_velocity: FloatArray
    rigid_velocity: FloatArray


def run_velocity_loop(bench: ElasticJointBench, controller: object, velocity_reference: ArrayLike) -> LoopRecord:
    """Run a velocity controller (``update(v_d, v_m, v_l) -> tau``, e.g. `VrecController`) on the bench.

    The controller sees the encoder-differenced velocities of `ElasticJointBench.measure`; the
    record keeps the true velocities for evaluation.
    """
    v_d = np.asarray(velocity_reference, dtype=float)
    N = v_d.size
    out = {key: np.zeros(N) for key in ("torque", "motor_velocity", "link_velocity", "rigid_velocity")}
    t = np.zeros(N)
    m = bench.measure()
    for k in range(N):
        tau = controller.update(v_d[k], m.motor_velocity, m.link_velocity)  # type: ignore[attr-defined]
        bench.step(tau)
        m = bench.measure()
        t[k] = bench.t
        out["torque"][k] = tau
        out["motor_velocity"][k] = bench.x[1]
        out["link_velocity"][k] = bench.x[3]
        out["rigid_velocity"][k] = getattr(controller, "rigid_velocity", np.nan)
    return LoopRecord(t=t, **out)


def load_elastic_joints(path: str | Path, joints: tuple[str, ...]) -> list[ElasticJointParameters]:
    """Read the top-level ``elastic_joints:`` block of a robot config YAML, in ``joints`` order.

    Kept beside (not inside) the ``robot:`` block so the shared robot-config loader stays
    unchanged; see config/elastic_arm6.yaml for the keys and units.

    Raises:
        ConfigError: the block is missing, a joint is missing, or a value is wrong.
    """
    path = Path(path)
    doc = read_yaml(path)
    block = doc.get("elastic_joints") if isinstance(doc, dict) else None
    if not isinstance(block, dict):
        raise ConfigError(f"{path}: elastic_joints = {block!r}: expected a mapping by joint name")
    allowed = {f.name for f in fields(ElasticJointParameters)}
    out = []
    for name in joints:
        raw = block.get(name)
        if not isinstance(raw, dict):
            raise ConfigError(f"{path}: elastic_joints.{name} = {raw!r}: expected a mapping with {sorted(allowed)}")
        unknown = set(raw) - allowed
        if unknown:
            raise ConfigError(
                f"{path}: elastic_joints.{name}: unknown keys {sorted(unknown)}; allowed {sorted(allowed)}"
            )
        try:
            out.append(ElasticJointParameters(**{k: float(v) for k, v in raw.items()}))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{path}: elastic_joints.{name}: {exc}") from None
    return out
