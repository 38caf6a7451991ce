"""The settings of each node, one frozen dataclass per node: every parameter with its default,
unit, range and whether it may change while the node runs (`motor_ident.schema`).

The nodes declare their ROS 2 parameters from these classes (`motor_ident.ros.runtime.parameters`), the
scenario loader validates scenario files against them (`motor_ident.scenario.loader`), and the
ROS-free closed loop and ``motor-ident identify --online`` build from them. Where a core config
already holds a node's settings it is inlined, so its fields are defined once, in the core.
docs/parameters.md is generated from here: ``python -m motor_ident.scenario.nodes > docs/parameters.md``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from motor_ident.core.actuators.torque_sources import TORQUE_SOURCES
from motor_ident.core.control.pwm import PwmFeedforwardConfig
from motor_ident.core.control.vrec import SIDES
from motor_ident.core.estimation.online import IdentifierConfig
from motor_ident.core.floating_base.online import FloatingOnlineConfig
from motor_ident.errors import ConfigError
from motor_ident.papers.xin.bench import XIN_MOTOR_KI, XIN_MOTOR_KP, xin_bench_parameters
from motor_ident.scenario.monitor import MonitorSettings
from motor_ident.schema import inline, markdown_table, setting
from motor_ident.sim.plant import PlantConfig
from motor_ident.sim.sensors import SimSensorSettings

# Robot config of a node whose parameters do not name one.
DEFAULT_ROBOT = "valkyrie_arm"


def _robot() -> Any:
    return setting(DEFAULT_ROBOT, "robot config: a name shipped in config/ or a YAML path")


def _diagnostics_period() -> Any:
    return setting(0.5, "period of /diagnostics", unit="s", low=0.0, high=3600.0, open=(True, False))


@dataclass(frozen=True)
class StampSettings:
    """How a node tells a new clock (bag loop, simulator reset) from a stray stamp."""

    clock_restart_samples: int = setting(
        10, "states in a row on a new clock before it is believed (bag loop, reset)", low=1
    )
    max_stamp_jump: float = setting(
        1.0, "a stamp more than this ahead of the last one is a jump", unit="s", low=0.0, open=(True, False)
    )


@dataclass(frozen=True)
class PairingSettings:
    """How an identifier pairs joint states with its other inputs by stamp (motor_states, wrenches, an IMU)."""

    align_tolerance: float = setting(
        0.0005, "largest stamp difference of a joint state and a sample paired with it", unit="s", low=0.0
    )
    secondary_timeout: float = setting(
        0.5,
        "a paired input silent this long (wall) while joint states arrive empties the estimator and closes the gate",
        unit="s",
        low=0.0,
        open=(True, False),
    )


@dataclass(frozen=True)
class RealtimeSettings:
    """How a node on the 1 kHz path claims its computer: real-time priority, locked memory, pinned
    CPUs (`motor_ident.ros.runtime.realtime`; what the computer needs: docs/performance.md)."""

    thread_priority: int = setting(
        0,
        "SCHED_FIFO priority of the node's threads (its 1 kHz loop and the middleware's that deliver "
        "to it); 0: normal scheduling",
        low=0,
        high=99,
    )
    lock_memory: bool = setting(False, "lock the process's memory in RAM (mlockall): no page faults in the loop")
    cpu_affinity: tuple[int, ...] = setting((-1,), "CPU ids the node's threads may run on ([-1] = any)", low=-1)


@dataclass(frozen=True)
class SimRobotSettings:
    """sim_robot: the simulated robot (rigid bodies, motor chains, sensors) publishing joint_states."""

    robot: str = _robot()
    plant: PlantConfig = inline(PlantConfig)
    lockstep: bool = setting(False, "step when the command answering the newest state arrives (faster than real time)")
    lockstep_timeout: float = setting(
        0.1,
        "lockstep: wall time without a command before stepping with the held one (> an SDP check); "
        "a command arriving later is held, not stepped on",
        unit="s",
        low=0.0,
        open=(True, False),
    )
    duration: float = setting(0.0, "stop stepping after this simulated time (0: never)", unit="s", low=0.0)
    publish_clock: bool = setting(True, "publish /clock with the simulated time")
    joint_state_order: tuple[str, ...] = setting(
        ("",), "joint order of published states ([''] = config order)", demo=True
    )
    sensors: SimSensorSettings = inline(SimSensorSettings)
    realtime: RealtimeSettings = inline(RealtimeSettings)
    diagnostics_period: float = _diagnostics_period()


@dataclass(frozen=True)
class IdentifierSettings:
    """identifier: sliding-window identification; its gate switches to the identified model once it predicts
    held-out torques clearly better than the nominal one (gate_criterion r2: the R^2 gate of Kolathaya et al. 2016)."""

    robot: str = _robot()
    core: IdentifierConfig = inline(IdentifierConfig)
    nominal_inertia_scale: float = setting(
        1.0, "scale of the URDF inertias in the nominal model", low=0.0, open=(True, False), demo=True
    )
    nominal_friction_scale: float = setting(
        1.0, "scale of the config's friction in the nominal model", low=0.0, demo=True
    )
    parameters_file: str = setting("", "YAML file for ~/save, reloaded at start ('' = none)")
    torque_source: str = setting(
        "",
        "where joint torque comes from ('' = the robot config's torque_source): joint_states.effort, "
        "motor_states.effort as currents or duty cycles, or the F/T wrench",
        choices=("", *TORQUE_SOURCES),
    )
    drive_gains_file: str = setting(
        "",
        "motor_current: drive gains from this parameter file's drive_gains block (identify --payload-data ... "
        "--out FILE writes it); '' = the robot config's",
    )
    motor_states_topic: str = setting("motor_states", "motor_current / motor_pwm: the drives' readings")
    wrench_topic: str = setting("ft_sensor/wrench", "ft_sensor: the sensor's WrenchStamped")
    pairing: PairingSettings = inline(PairingSettings)
    stamps: StampSettings = inline(StampSettings)
    diagnostics_period: float = _diagnostics_period()


@dataclass(frozen=True)
class FloatingIdentifierSettings:
    """floating_identifier: total mass and whole-body CoM of a robot on its feet, online (feet wrenches, base IMU)."""

    robot: str = setting("icub", "robot config with a floating_base section: a name shipped in config/ or a YAML path")
    core: FloatingOnlineConfig = inline(FloatingOnlineConfig)
    imu_topic: str = setting("imu/data", "the base IMU's sensor_msgs/Imu")
    wrench_topics: tuple[str, ...] = setting(
        ("",), "a WrenchStamped topic per contact, in the robot config's contact order ([''] = <contact>/wrench)"
    )
    pairing: PairingSettings = inline(PairingSettings)
    stamps: StampSettings = inline(StampSettings)
    diagnostics_period: float = _diagnostics_period()


@dataclass(frozen=True)
class FeedforwardSettings:
    """feedforward: computed-torque feedforward with the identifier's active model."""

    robot: str = _robot()
    kp: tuple[float, ...] = setting(
        (100.0,), "position gain of the commanded acceleration", unit="1/s^2", low=0.0, per_joint=True, live=True
    )
    kd: tuple[float, ...] = setting(
        (20.0,), "velocity gain of the commanded acceleration", unit="1/s", low=0.0, per_joint=True, live=True
    )
    effort_limit: tuple[float, ...] | None = setting(
        None, "|torque| limit (unset: the URDF's)", unit="N m", low=0.0, open=(True, False), per_joint=True, live=True
    )
    rate_limit: tuple[float, ...] = setting(
        (1e5,), "|d torque/dt| limit", unit="N m/s", low=0.0, per_joint=True, live=True
    )
    safe_mode: str = setting(
        "gravity", "output while state or reference are stale", choices=("zero", "gravity"), live=True
    )
    state_timeout: float = setting(
        0.1, "joint_states older than this (wall) are stale", unit="s", low=0.0, high=10.0, open=(True, False)
    )
    blend_rate: float = setting(
        50.0, "a model switch moves no joint torque faster", unit="N m/s", low=0.0, open=(True, False), live=True
    )
    parameters_topic: str = setting(
        "identifier/active_full_parameters",
        "model to use: full parameters (regressor order), or base ones completed with the nominal dependents",
    )
    output: str = setting(
        "forward_command",
        "forward_command: a torque per joint_states sample on effort_controller/commands; joint_trajectory: "
        "points with efforts for a joint_trajectory_controller (effort interface) on joint_trajectory",
        choices=("forward_command", "joint_trajectory"),
    )
    trajectory_rate: float = setting(50.0, "joint_trajectory: messages per second", unit="Hz", low=1.0, high=1000.0)
    trajectory_horizon: float = setting(
        0.2, "joint_trajectory: reference time covered by each message", unit="s", low=0.0, open=(True, False)
    )
    trajectory_spacing: float = setting(
        0.01, "joint_trajectory: time between points", unit="s", low=0.0, high=1.0, open=(True, False)
    )
    controller_joints: tuple[str, ...] = setting(
        ("",), "joint_trajectory: joint names in the controller's order ([''] = config order)"
    )
    stamps: StampSettings = inline(StampSettings)
    realtime: RealtimeSettings = inline(RealtimeSettings)
    diagnostics_period: float = _diagnostics_period()


@dataclass(frozen=True)
class ExcitationSettings:
    """excitation: the reference trajectory, ramped in from the first measured state."""

    robot: str = _robot()
    trajectory_file: str = setting(
        "",
        "optimised trajectory from motor-ident excite: a path, or relative to motor_ident's share directory "
        "(examples/...); '' = random",
    )
    seed: int = setting(3, "seed of the random Fourier coefficients")
    harmonics: int = setting(5, "harmonics of the Fourier series", low=1, high=50)
    base_frequency: float = setting(0.2, "fundamental frequency", unit="Hz", low=0.0, high=100.0, open=(True, False))
    velocity_amplitude: float = setting(1.2, "bound on each joint's speed", unit="rad/s", low=0.0, open=(True, False))
    horizon: float = setting(0.5, "trajectory per message", unit="s", low=0.0, high=60.0, open=(True, False))
    spacing: float = setting(0.01, "time between trajectory points", unit="s", low=0.0, open=(True, False))
    publish_period: float = setting(0.1, "time between messages", unit="s", low=0.0, high=60.0, open=(True, False))
    ramp_time: float = setting(2.0, "blend-in time from rest", unit="s", low=0.0, high=600.0, open=(True, False))
    output_topic: str = setting("feedforward/reference", "where to publish the trajectory")


@dataclass(frozen=True)
class DecouplerSettings:
    """decoupler: joint space <-> motor space through the robot's transmission (Guedelha et al. 2021)."""

    robot: str = _robot()
    motor_states_at_rotor: bool = setting(False, "motor_states are rotor encoders (divide by the gear ratio)")
    joint_commands_topic: str = setting("~/joint_commands", "joint torque commands to convert to motor torques")
    realtime: RealtimeSettings = inline(RealtimeSettings)
    diagnostics_period: float = _diagnostics_period()


COMMAND_SPACES = ("joint", "motor")
"""pwm_feedforward's ``command_space`` values: desired joint torques (joint order) or motor torques (motor order)."""


@dataclass(frozen=True)
class PwmFeedforwardSettings:
    """pwm_feedforward: desired torques -> motor duty cycles (Guedelha et al. 2021)."""

    robot: str = _robot()
    core: PwmFeedforwardConfig = inline(PwmFeedforwardConfig)
    state_timeout: float = setting(
        0.1,
        "joint_states stamped longer ago than this on the node's clock are stale",
        unit="s",
        low=0.0,
        high=10.0,
        open=(True, False),
        live=True,
    )
    command_topic: str = setting("effort_controller/commands", "desired torques to convert")
    command_space: str = setting(
        "joint",
        "command_topic holds joint torques (joint order) or motor torques (motor order)",
        choices=COMMAND_SPACES,
    )
    reference_topic: str = setting(
        "",
        "trajectory whose velocity and acceleration drive the friction, back-EMF and rotor inertia terms "
        "('' = measured velocity, no rotor inertia term)",
    )
    realtime: RealtimeSettings = inline(RealtimeSettings)
    diagnostics_period: float = _diagnostics_period()


_XIN = xin_bench_parameters()  # Xin et al. 2020, Table 1 (J_m for the 21 Hz resonance): the elastic nodes' defaults


def _joints() -> Any:
    return setting(("joint1",), "link joint names, in command order")


def _motor_names() -> Any:
    return setting(("",), "motor names of motor_states, joint order ([''] = the joint names)")


def motor_names_of(motor_names: tuple[str, ...], joints: tuple[str, ...]) -> tuple[str, ...]:
    """The motor names a ``motor_names`` setting gives (``('',)``: the joint names), one per joint.

    Raises:
        ConfigError: no joints, or not one motor name per joint.
    """
    names = joints if motor_names == ("",) else motor_names
    if not joints or len(names) != len(joints):
        raise ConfigError(f"parameter motor_names = {list(names)}: expected one name per joint of {list(joints)}")
    return names


def _per_joint_positive(default: float, description: str, unit: str = "") -> Any:
    return setting((default,), description, unit=unit, low=0.0, open=(True, False), per_joint=True)


@dataclass(frozen=True)
class VrecControllerSettings:
    """vrec_controller: velocity loop with vibration and ripple elimination per joint (Xin et al. 2020)."""

    joints: tuple[str, ...] = _joints()
    motor_names: tuple[str, ...] = _motor_names()
    side: str = setting("motor", "velocity feedback: motor (K > 0) or link (K < 0)", choices=SIDES)
    rate_hz: float = setting(
        1000.0, "rate of motor_states, the loop's sample rate", unit="Hz", low=0.0, open=(True, False)
    )
    stale_timeout: float = setting(
        0.05, "joint_states older than this are stale: no command", unit="s", low=0.0, open=(True, False)
    )
    motor_states_at_rotor: bool = setting(False, "motor_states are rotor encoders (divide by gear_ratio)")
    gear_ratio: tuple[float, ...] = _per_joint_positive(1.0, "gear ratio N (with motor_states_at_rotor)")
    motor_inertia: tuple[float, ...] = _per_joint_positive(_XIN.motor_inertia, "J_m, link-side referred", "kg m^2")
    load_inertia: tuple[float, ...] = _per_joint_positive(_XIN.load_inertia, "J_l", "kg m^2")
    stiffness: tuple[float, ...] = _per_joint_positive(_XIN.stiffness, "joint stiffness K", "N m/rad")
    motor_damping: tuple[float, ...] = setting(
        (_XIN.motor_damping,), "B_m, link-side referred", unit="N m s/rad", low=0.0, per_joint=True
    )
    load_damping: tuple[float, ...] = setting((_XIN.load_damping,), "B_l", unit="N m s/rad", low=0.0, per_joint=True)
    damping: tuple[float, ...] = setting((_XIN.damping,), "joint damping D", unit="N m s/rad", low=0.0, per_joint=True)
    kp: tuple[float, ...] = setting(
        (XIN_MOTOR_KP,),
        "PI proportional gain (Xin et al. 2020: 480 motor side, 168 link side)",
        unit="N m s/rad",
        low=0.0,
        per_joint=True,
    )
    ki: tuple[float, ...] = setting(
        (XIN_MOTOR_KI,),
        "PI integral gain (Xin et al. 2020: 2400 motor side, 1200 link side)",
        unit="N m/rad",
        low=0.0,
        per_joint=True,
    )
    damping_ratio: tuple[float, ...] = _per_joint_positive(
        0.707, "xi of the closed-loop resonant poles K is designed for"
    )
    gain: tuple[float, ...] = setting(
        (float("nan"),), "ripple elimination gain K; NaN: design it from damping_ratio", per_joint=True
    )
    torque_limit: tuple[float, ...] = _per_joint_positive(272.0, "|motor torque| bound, link-side referred", "N m")
    realtime: RealtimeSettings = inline(RealtimeSettings)
    diagnostics_period: float = _diagnostics_period()


@dataclass(frozen=True)
class ElasticSimSettings:
    """elastic_sim: Xin et al.'s two-inertia test bench joints with dual encoders (Xin et al. 2020)."""

    joints: tuple[str, ...] = _joints()
    motor_names: tuple[str, ...] = _motor_names()
    rate_hz: float = setting(1000.0, "physics and state rate", unit="Hz", low=0.0, high=1e5, open=(True, False))
    lockstep: bool = setting(False, "step once per command answering the newest state instead of on a wall timer")
    lockstep_timeout: float = setting(
        0.1,
        "lockstep: wall time without a command before stepping with the held one; a command arriving "
        "later is held, not stepped on",
        unit="s",
        low=0.0,
        open=(True, False),
    )
    duration: float = setting(0.0, "stop stepping after this simulated time (0: never)", unit="s", low=0.0)
    load_scale: float = setting(
        1.0, "load inertia J_l multiplier (Xin et al. 2020: 0.5 .. 1.5)", low=0.0, open=(True, False), demo=True
    )
    ripple_amplitude: float = setting(5.0, "cogging torque amplitude, link side", unit="N m", low=0.0)
    realtime: RealtimeSettings = inline(RealtimeSettings)
    diagnostics_period: float = _diagnostics_period()


NODE_SETTINGS: dict[str, type] = {
    "sim_robot": SimRobotSettings,
    "identifier": IdentifierSettings,
    "floating_identifier": FloatingIdentifierSettings,
    "feedforward": FeedforwardSettings,
    "excitation": ExcitationSettings,
    "decoupler": DecouplerSettings,
    "pwm_feedforward": PwmFeedforwardSettings,
    "vrec_controller": VrecControllerSettings,
    "elastic_sim": ElasticSimSettings,
    "monitor": MonitorSettings,
}


def parameters_markdown() -> str:
    """docs/parameters.md: the settings of every node in `NODE_SETTINGS`."""
    parts = [
        "# Node parameters\n",
        "Generated from motor_ident/scenario/nodes.py: `python -m motor_ident.scenario.nodes > docs/parameters.md`.\n"
        "A scenario file (config/scenarios/) sets only what differs from these defaults. Lists marked "
        "'1 or one per joint' take one value for every joint or one per joint. `restart` parameters are "
        "read-only while the node runs (on the managed nodes, docs/nodes.md: set while unconfigured, applied at "
        "the next configure); the others can be set live (`ros2 param set`), and a value out of "
        "range is refused with the reason. (demo): a knob of the demonstrations, not of a robot.\n",
    ]
    for node, cls in NODE_SETTINGS.items():
        summary = (cls.__doc__ or "").strip().splitlines()[0]
        parts.append(f"## {node}\n\n{summary}\n\n{markdown_table(cls)}")
    return "\n".join(parts)


if __name__ == "__main__":
    sys.stdout.write(parameters_markdown())
