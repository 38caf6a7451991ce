"""What the two simulated standing humanoids share: their settings, their run, masses, sensors, contact check.

Two plants simulate a humanoid standing on its feet (``HumanoidSimConfig.plant``):

- ``mujoco`` (`motor_ident.sim.humanoid`): MuJoCo reading the URDF, soles welded to the ground,
  joint servos tracking a balancing motion;
- ``rigid`` (`motor_ident.sim.rigid_humanoid`): pinocchio alone, the soles fixed exactly, the legs
  following the pelvis by the feet's constraint, the ground's wrench split between the feet.

Both perturb the URDF's link masses the same way (`perturbed_urdf`), read their sensors through
the same noise (`noisy_record`) and check the wrenches against real flat feet (`friction_check`);
nothing here imports MuJoCo or the estimator.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, fields, replace

import numpy as np
import pinocchio as pin
from numpy.typing import NDArray

from motor_ident.errors import ConfigError
from motor_ident.io.floating_record import FloatingBaseRecord
from motor_ident.io.robot_config import RobotConfig
from motor_ident.schema import check, setting
from motor_ident.sim.urdf_xml import lift_inertias, urdf_without_geometry

FloatArray = NDArray[np.float64]

PLANTS = ("mujoco", "rigid")
"""The standing-humanoid simulators (module docstring)."""


@dataclass(frozen=True)
class HumanoidSimConfig:
    """Settings of the simulated humanoid (module docstring; the MuJoCo ones in `motor_ident.sim.humanoid`)."""

    plant: str = setting(
        "mujoco",
        "simulator: mujoco (servos tracking the motion, soles welded) or rigid (pinocchio alone, soles fixed exactly)",
        choices=PLANTS,
    )
    duration: float = setting(20.0, "length of the recording", unit="s", low=1.0)
    rate_hz: float = setting(1000.0, "sample rate of every sensor", unit="Hz", low=50.0)
    substeps: int = setting(5, "MuJoCo steps per sample (more where a step would exceed 0.4 ms)", low=1, high=100)
    integrator: str = setting(
        "rk4",
        "MuJoCo integrator (implicit ones damp light links off their computed acceleration)",
        choices=("rk4", "euler", "implicitfast"),
    )
    weld_time_constant: float = setting(
        0.002, "stiffness of the feet's welds to the ground (MuJoCo solref)", unit="s", low=1e-4
    )
    seed: int = setting(0, "random seed (masses, excitation phases, noise)", low=0)
    mass_perturbation_low: float = setting(0.1, "smallest relative change of a link's mass", low=0.0, high=0.9)
    mass_perturbation_high: float = setting(0.3, "largest relative change of a link's mass", low=0.0, high=0.9)
    mass_seed: int = setting(0, "random seed of the mass perturbation (the same robot in every recording)", low=0)
    min_gyration_radius: float = setting(
        0.02, "links get at least a solid sphere's inertia of this radius (point masses of the URDF)", unit="m", low=0.0
    )
    leg_stiffness: float = setting(
        15.0,
        "leg servo stiffness per unit of the standing robot's gravity moment m g h (weight times CoM height "
        "above the soles): iCub ~2000 N m/rad, TALOS ~12000",
        unit="1/rad",
        low=0.0,
    )
    leg_damping_time: float = setting(0.02, "leg servo damping over stiffness, kd / kp", unit="s", low=0.0)
    servo_max_frequency: float = setting(
        15.0, "cap of each servo's bandwidth on its own link inertia M_jj (light links)", unit="Hz", low=0.1
    )
    sway: float = setting(0.015, "CoM sway amplitude, forward and sideways", unit="m", low=0.0, high=0.2)
    bob: float = setting(0.015, "pelvis height amplitude", unit="m", low=0.0, high=0.2)
    tilt: float = setting(0.08, "pelvis roll / pitch / yaw amplitude", unit="rad", low=0.0, high=0.5)
    swing: float = setting(0.5, "amplitude of the torso, arm and head joints", unit="rad", low=0.0, high=2.0)
    frequency: float = setting(0.3, "fundamental frequency of the excitation", unit="Hz", low=0.01, high=5.0)
    single_support_phases: int = setting(
        0,
        "single-support phases (alternating feet): CoM over one sole, the other foot lifted and swung",
        low=0,
        high=20,
    )
    single_support_s: float = setting(5.0, "duration of each single-support phase, shifts included", unit="s", low=2.0)
    step_height: float = setting(0.03, "how high the free foot is lifted", unit="m", low=0.0, high=0.2)
    force_loop_gain: float = setting(
        0.3, "legs' internal-force loop in double support: fraction corrected per sample (0: off)", low=0.0, high=1.0
    )
    cop_margin: float = setting(
        0.005,
        "the contact check counts a centre of pressure this far inside the sole's edge as held",
        unit="m",
        low=0.0,
    )
    encoder_noise: float = setting(2e-4, "joint encoder noise std", unit="rad", low=0.0)
    gyro_noise: float = setting(0.005, "gyro noise std", unit="rad/s", low=0.0)
    gyro_bias: float = setting(0.002, "gyro bias std (constant per run)", unit="rad/s", low=0.0)
    accelerometer_noise: float = setting(0.05, "accelerometer noise std", unit="m/s^2", low=0.0)
    accelerometer_bias: float = setting(0.05, "accelerometer bias std (constant per run)", unit="m/s^2", low=0.0)
    orientation_noise: float = setting(0.002, "IMU orientation noise std per axis", unit="rad", low=0.0)
    force_noise: float = setting(0.5, "F/T force noise std", unit="N", low=0.0)
    torque_noise: float = setting(0.02, "F/T torque noise std", unit="N m", low=0.0)
    joint_torque_noise: float = setting(0.05, "joint torque noise std", unit="N m", low=0.0)

    def __post_init__(self) -> None:
        check(self)
        if self.mass_perturbation_low > self.mass_perturbation_high:
            raise ConfigError(
                f"mass_perturbation_low = {self.mass_perturbation_low} > mass_perturbation_high = "
                f"{self.mass_perturbation_high}: expected low <= high"
            )
        if self.plant == "rigid" and self.single_support_phases:
            raise ConfigError(
                f"single_support_phases = {self.single_support_phases} with plant = 'rigid': the rigid plant keeps "
                "both feet on the ground (plant = 'mujoco' lifts them)"
            )


@dataclass(frozen=True, eq=False)
class HumanoidRun:
    """A simulated recording and what the estimator should find.

    Attributes:
        record: the sensor record.
        theta_true: true inertial parameters in `FloatingBaseModel` order (base first), (10 (n + 1),).
        base_position, base_quaternion: true base pose (N, 3), (N, 4) [qx, qy, qz, qw].
        friction: `friction_check` of the recorded wrenches (feet in contact only).
        contact: which feet are welded to the ground per sample (N, c).
        clean: the same record without sensor noise or biases, the true base position included:
            the states as they were, for telling the reconstruction's error from the parameters'.
    """

    record: FloatingBaseRecord
    theta_true: FloatArray
    base_position: FloatArray
    base_quaternion: FloatArray
    friction: dict[str, float]
    contact: NDArray[np.bool_]
    clean: FloatingBaseRecord


def perturbed_urdf(config: RobotConfig, sim: HumanoidSimConfig) -> str:
    """The URDF's XML without geometry, inertias lifted, masses scaled by the true factors."""
    root = ET.fromstring(urdf_without_geometry(str(config.urdf)))
    lift_inertias(root, sim.min_gyration_radius)
    rng = np.random.default_rng(sim.mass_seed)
    for link in root.iter("link"):
        inertial = link.find("inertial")
        if inertial is None:
            continue
        mass, inertia = inertial.find("mass"), inertial.find("inertia")
        if mass is None or inertia is None:
            continue
        factor = 1.0 + rng.choice([-1.0, 1.0]) * rng.uniform(sim.mass_perturbation_low, sim.mass_perturbation_high)
        mass.set("value", repr(float(float(mass.get("value", 0.0)) * factor)))
        for k in ("ixx", "ixy", "iyy", "ixz", "iyz", "izz"):
            inertia.set(k, repr(float(float(inertia.get(k, 0.0)) * factor)))
    return ET.tostring(root, encoding="unicode")


def sines(t: FloatArray, frequency: float, harmonics: FloatArray, phases: FloatArray) -> FloatArray:
    """Sum of unit sines at ``frequency * harmonics`` (k,), normalised to peak <= 1, shape (N,)."""
    wave = np.sin(2.0 * np.pi * frequency * np.outer(t, harmonics) + phases).sum(axis=1)
    return wave / harmonics.size


def ramp(t: FloatArray, rise: float = 1.0) -> FloatArray:
    """Smooth 0 -> 1 over ``rise`` seconds (C2 smootherstep), shape (N,)."""
    x = np.clip(t / rise, 0.0, 1.0)
    return x**3 * (10.0 - 15.0 * x + 6.0 * x**2)


def signal_buffers(N: int, n: int, c: int) -> dict[str, FloatArray]:
    """Empty arrays of what a plant computes per sample, for `standing_run`: joint positions and
    torques, wrenches in the sensor and sole frames, IMU quaternion [qx, qy, qz, qw], gyro,
    accelerometer, base position and quaternion."""
    shapes = {
        "q": (N, n),
        "tau": (N, n),
        "wrench": (N, c, 6),
        "sole_wrench": (N, c, 6),
        "quat": (N, 4),
        "gyro": (N, 3),
        "acc": (N, 3),
        "base_p": (N, 3),
        "base_q": (N, 4),
    }
    return {name: np.empty(shape) for name, shape in shapes.items()}


def standing_run(
    config: RobotConfig,
    sim: HumanoidSimConfig,
    t: FloatArray,
    out: dict[str, FloatArray],
    contact: NDArray[np.bool_],
    theta_true: FloatArray,
) -> HumanoidRun:
    """The run of a plant's computed signals ``out`` (`signal_buffers`): the sensors' record, the clean one and the
    contact check of the sole wrenches."""
    fb = config.floating_base
    assert fb is not None  # the plants refuse a config without one
    record, clean = sensor_records(config, sim, t, out, contact)
    return HumanoidRun(
        record=record,
        theta_true=theta_true,
        base_position=out["base_p"],
        base_quaternion=out["base_q"],
        friction=friction_check(
            out["sole_wrench"], fb.friction_coefficient, fb.foot_size, contact=contact, margin=sim.cop_margin
        ),
        contact=contact,
        clean=clean,
    )


def sensor_records(
    config: RobotConfig,
    sim: HumanoidSimConfig,
    t: FloatArray,
    out: dict[str, FloatArray],
    contact: NDArray[np.bool_],
) -> tuple[FloatingBaseRecord, FloatingBaseRecord]:
    """The sensors' record of the simulated signals ``out`` (`noisy_record`, noise drawn from ``seed + 1``) and the
    clean one (no noise or bias, the true base position ``out["base_p"]`` included)."""
    quiet = replace(sim, **{f.name: 0.0 for f in fields(sim) if f.name.endswith(("_noise", "_bias"))})  # type: ignore[arg-type]
    record = noisy_record(config, sim, np.random.default_rng(sim.seed + 1), t, out, contact)
    clean = noisy_record(config, quiet, np.random.default_rng(0), t, out, contact)
    return record, replace(clean, base_position=out["base_p"])


def balancing_excitation(
    sim: HumanoidSimConfig,
    posture: FloatArray,
    lower: FloatArray,
    upper: FloatArray,
    swinging: NDArray[np.int64],
    grid_s: float,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Both plants' balancing motion on a time grid (``duration`` + 0.5 s every ``grid_s``), ramped in over 1 s.

    Returns:
        t (T,) [s]; the CoM sway x, y and pelvis height, roll, pitch, yaw offsets (T, 6) [m, rad]
        (``sway``, ``bob``, ``tilt``); joint positions (T, n) [rad]: the ``swinging`` ones (indices
        into ``posture``) swing by ``swing`` within 85 % of their room to the limits, the others
        keep ``posture``. Sums of three sines from ``frequency`` (`sines`), phases drawn from ``seed``.
    """
    rng = np.random.default_rng(sim.seed)
    t = np.arange(0.0, sim.duration + 0.5, grid_s)
    w = ramp(t)
    harmonics = np.array([1.0, 1.7, 2.9])
    axes = np.stack([w * sines(t, sim.frequency, harmonics, rng.uniform(0, 2 * np.pi, 3)) for _ in range(6)], axis=1)
    axes *= np.array([sim.sway, sim.sway, sim.bob, sim.tilt, sim.tilt, sim.tilt])
    joints = np.tile(posture, (t.size, 1))
    for j in swinging:
        room = 0.85 * min(posture[j] - lower[j], upper[j] - posture[j])
        amp = min(sim.swing, max(room, 0.0))
        joints[:, j] = posture[j] + amp * w * sines(
            t, sim.frequency, harmonics * rng.uniform(0.8, 1.6), rng.uniform(0, 2 * np.pi, 3)
        )
    return t, axes, joints


def noisy_record(
    config: RobotConfig,
    sim: HumanoidSimConfig,
    rng: np.random.Generator,
    t: FloatArray,
    out: dict[str, FloatArray],
    contact: NDArray[np.bool_],
) -> FloatingBaseRecord:
    """The sensors' view of the simulated signals: noise, constant biases, orientation jitter."""
    assert config.floating_base is not None
    N = t.size
    jitter = rng.normal(0.0, sim.orientation_noise, (N, 3))
    quat = np.array(
        [(pin.Quaternion(np.asarray(qk)) * pin.Quaternion(pin.exp3(e))).coeffs() for qk, e in zip(out["quat"], jitter)]
    )
    wrench_std = np.array([sim.force_noise] * 3 + [sim.torque_noise] * 3)
    return FloatingBaseRecord(
        t=t,
        joint_names=tuple(config.joints),
        q=out["q"] + rng.normal(0.0, sim.encoder_noise, out["q"].shape),
        tau=out["tau"] + rng.normal(0.0, sim.joint_torque_noise, out["tau"].shape),
        contact_names=tuple(c.name for c in config.floating_base.contacts),
        wrench=out["wrench"] + rng.normal(0.0, 1.0, out["wrench"].shape) * wrench_std,
        imu_quaternion=quat,
        imu_gyro=out["gyro"] + rng.normal(0.0, sim.gyro_bias, 3) + rng.normal(0.0, sim.gyro_noise, (N, 3)),
        imu_accelerometer=out["acc"]
        + rng.normal(0.0, sim.accelerometer_bias, 3)
        + rng.normal(0.0, sim.accelerometer_noise, (N, 3)),
        contact=contact.astype(float),
    )


def friction_check(
    sole_wrench: FloatArray,
    friction_coefficient: float,
    foot_size: tuple[float, float] | None,
    *,
    contact: NDArray[np.bool_] | None = None,
    margin: float = 0.0,
) -> dict[str, float]:
    """Would real feet have held these wrenches? From wrenches at the soles (N, c, 6) (z up).

    Only feet in ``contact`` (N, c) (all when None) count; a sample holds when every foot in
    contact does. Returns the smallest normal force [N], the largest tangential / normal ratio,
    the fraction of samples inside the friction cone, and (with ``foot_size``) the fraction with
    the centre of pressure (CoP) at least ``margin`` [m] inside the sole rectangle, the fraction
    where both hold (``holdable``), the same not counting feet that carry under 5 % of the load
    (``holdable_loaded``), plus the largest |CoP| along x and y [m].
    """
    f, tau = sole_wrench[..., :3], sole_wrench[..., 3:]
    on = np.ones(f.shape[:2], dtype=bool) if contact is None else np.asarray(contact, dtype=bool)
    normal = f[..., 2]
    ratio = np.linalg.norm(f[..., :2], axis=-1) / np.maximum(normal, 1e-9)
    inside = ~on | ((normal > 0.0) & (ratio <= friction_coefficient))
    report = {
        "min_normal_force": float(normal[on].min()),
        "max_tangential_ratio": float(ratio[on].max()),
        "inside_friction_cone": float(np.all(inside, axis=1).mean()),
    }
    cop = np.stack([-tau[..., 1], tau[..., 0]], axis=-1) / np.maximum(normal, 1e-9)[..., None]
    report["max_cop_x"], report["max_cop_y"] = (float(x) for x in np.abs(cop[on]).max(axis=0))
    if foot_size is not None:
        half = np.array(foot_size) / 2 - margin
        within = ~on | np.all(np.abs(cop) <= half, axis=-1)
        report["cop_inside_sole"] = float(np.all(within, axis=1).mean())
        report["holdable"] = float(np.all(inside & within, axis=1).mean())
        # a foot on the ground carrying under 5 % of the load (just before release, just after touchdown):
        # its CoP is ill-defined, and a real foot would rest on an edge without consequence; pulling still fails
        light = on & (normal >= 0.0) & (normal < 0.05 * np.sum(np.where(on, normal, 0.0), axis=1, keepdims=True))
        report["holdable_loaded"] = float(np.all((inside & within) | light, axis=1).mean())
        report["cop_margin"] = margin
    return report
