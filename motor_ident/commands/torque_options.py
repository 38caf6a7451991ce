"""Reading a recording and its torque source, for ``identify`` and ``validate`` alike.

`read_recording` reads DATA, ``--payload-data`` and ``--validate-on`` (bag or CSV / NPZ);
`apply_torque_source` turns the measurement into joint torque, the one conversion of
identification and validation. ``--torque-source`` overrides the data spec's and the robot
config's ``torque_source.kind``. With ``motor_current``, ``--payload-data FILE --payload-mass KG``
identifies the drive gains jointly with the base parameters
(`motor_ident.core.estimation.drive_gains`) and writes them with their std into the parameter
file; ``--gains FILE`` uses the gains such a file holds (``validate`` reads those of the parameter
file it validates); else the robot config's gains are used, and a config without gains is refused
(the scale of currents is not identifiable).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from motor_ident.commands import arguments

if TYPE_CHECKING:  # commands import their work inside functions (motor-ident --help stays light)
    from numpy.typing import NDArray

    from motor_ident.commands.options import RecordingOptions
    from motor_ident.core.actuators.torque_sources import TorqueConverter
    from motor_ident.core.estimation.drive_gains import DriveGainFit
    from motor_ident.core.rigid_body.regressor import Regressor
    from motor_ident.io.bags.series import BagData
    from motor_ident.io.data import JointRecord
    from motor_ident.io.robot_config import RobotConfig

    FloatArray = NDArray[np.float64]


def add_torque_arguments(p: argparse.ArgumentParser, *, payload: bool = True) -> None:
    """``--torque-source``, ``--gains``, the bag topics, and (``payload``) ``--payload-data/-mass/-frame``."""
    p.add_argument(
        "--torque-source",
        metavar="joint_effort|motor_current|motor_pwm|ft_sensor",
        help="where the joint torque comes from (default: the data spec's, else the robot config's torque_source): "
        "joint_states.effort, motor currents [A] x drive gains, PWM duty cycles through the motor model, or a "
        "6-axis F/T sensor's wrench",
    )
    p.add_argument(
        "--gains",
        metavar="FILE",
        help="motor_current: the drive gains of this parameter file (its drive_gains block, which identify "
        "--payload-data ... --out FILE writes) instead of the robot config's",
    )
    if payload:
        p.add_argument(
            "--payload-data",
            metavar="FILE",
            help="motor_current: a second recording of the same kind of motion carrying a payload of known mass "
            "(read like DATA): the drive gains are identified with the base parameters and written with their "
            "std into --out and --json",
        )
        p.add_argument(
            "--payload-mass", type=arguments.POSITIVE, metavar="KG", help="mass of the payload of --payload-data [kg]"
        )
        p.add_argument(
            "--payload-frame",
            default="",
            metavar="FRAME",
            help="URDF frame the payload is attached to (default: the last joint's link)",
        )
    p.add_argument(
        "--joint-states-topic",
        default="/joint_states",
        help="bags: topic of the joint states (sensor_msgs/JointState; effort = joint torque)",
    )
    p.add_argument(
        "--motor-states-topic",
        default="/motor_states",
        help="bags: motor states (sensor_msgs/JointState; effort = current [A] or duty cycle)",
    )
    p.add_argument(
        "--wrench-topic", default="/ft_sensor/wrench", help="bags: the F/T sensor (geometry_msgs/WrenchStamped)"
    )


def source_kind(args: RecordingOptions, config: RobotConfig) -> str:
    """The torque source of this run: ``--torque-source`` or the config's."""
    return str(getattr(args, "torque_source", None) or config.torque_source.kind)


def bag_topic_names(args: RecordingOptions, config: RobotConfig) -> dict[str, str]:
    """``motor_states`` and ``wrench`` topics to read from a bag ('' = skip), for `BagTopics`."""
    kind = source_kind(args, config)
    return {
        "motor_states": args.motor_states_topic if kind in ("motor_current", "motor_pwm") else "",
        "wrench": args.wrench_topic if kind == "ft_sensor" else "",
    }


def bag_joint_record(bag: BagData, args: RecordingOptions, config: RobotConfig) -> JointRecord:
    """The bag's joint states with the measurement the torque source needs."""
    from motor_ident.io.torque_record import bag_record

    kind = source_kind(args, config)
    return bag.joint_record(config.joints) if kind == "joint_effort" else bag_record(bag, config.joints, kind)


@dataclass
class Recording:
    """A recording as read, joints selected, before any preparation.

    Attributes:
        record: the samples on their recorded stamps, with the measurement the torque source needs.
        warnings: what the reader had to skip or repair (damaged bags).
        bag: the bag it came from (None for CSV / NPZ).
    """

    record: JointRecord
    warnings: tuple[str, ...] = ()
    bag: BagData | None = None


def data_label(path: str, spec: Any) -> str:
    """How errors name a recording: its path, and the data spec it is read through (None: none)."""
    return path if spec is None else f"{path} (through {spec.label})"


def read_recording(
    path: str,
    args: RecordingOptions,
    config: RobotConfig,
    spec: Any,
    *,
    progress: Callable[[float], None] | None = None,
) -> Recording:
    """A rosbag2 bag (the torque source's topics) or a CSV / NPZ file (through ``spec``), joints selected.

    Every command reads DATA, ``--payload-data`` and ``--validate-on`` through this one function.
    """
    from motor_ident.commands.data_options import is_bag, read_file
    from motor_ident.errors import DataError
    from motor_ident.io.bags.read import read_bag
    from motor_ident.io.bags.series import BagTopics
    from motor_ident.io.torque_record import motor_columns

    if not is_bag(path):
        record = read_file(path, spec, config.build_transmission())
        extra = [k for k, name in enumerate(record.joint_names) if name not in config.joints]
        ignored = ignored_joints({record.joint_names[k]: _range(record.q[:, k]) for k in extra}, config.joints)
        kind = source_kind(args, config)
        try:  # the joints and motors the robot config names: the file is named while it is known
            record = record.select(config.joints)
            if kind in ("motor_current", "motor_pwm"):
                motors = config.build_transmission().motors
                motor_columns(record, "current" if kind == "motor_current" else "pwm", motors)
        except DataError as exc:
            raise DataError(f"{data_label(path, spec)}: {exc}") from None
        refuse_positions_in_other_units(record, config, data_label(path, spec))
        return Recording(record, ignored)
    topics = BagTopics(joint_states=args.joint_states_topic, commands="", **bag_topic_names(args, config))
    bag = read_bag(path, joints=config.joints, topics=topics, progress=progress)
    record = bag_joint_record(bag, args, config)
    if record.t.size < 3:  # fewer than differentiation needs: say what was dropped
        dropped = f" ({'; '.join(bag.warnings)})" if bag.warnings else ""
        raise DataError(f"{path}: {record.t.size} usable joint states, fewer than the 3 differentiation needs{dropped}")
    refuse_positions_in_other_units(record, config, path)
    return Recording(record, (*ignored_joints(bag.other_joints, config.joints), *bag.warnings), bag)


def refuse_positions_in_other_units(record: JointRecord, config: RobotConfig, label: str) -> None:
    """`check_positions_in_reach` on the robot's URDF, the error starting with ``label``.

    Raises:
        DataError: positions far outside the URDF's limits (degrees, encoder counts).
    """
    from motor_ident.core.rigid_body.model import check_positions_in_reach
    from motor_ident.errors import DataError

    try:
        check_positions_in_reach(config.build_model(), record.q)
    except DataError as exc:
        raise DataError(f"{label}: {exc}") from None


def _range(q: FloatArray) -> float:
    """How far a position column moves (NaN when it is not finite throughout)."""
    return float(np.ptp(q)) if np.all(np.isfinite(q)) else float("nan")


def ignored_joints(others: Mapping[str, float], joints: Sequence[str]) -> tuple[str, ...]:
    """A warning naming the recording's joints that the robot config does not identify (none: empty).

    Args:
        others: those joints, each with the range its position covers [rad] (NaN: unknown).
        joints: the robot config's joints.
    """
    if not others:
        return ()
    moves = [f"{name} (moves over {ptp:.3g} rad)" if np.isfinite(ptp) else name for name, ptp in others.items()]
    return (
        f"the recording's positions of {', '.join(moves)} are ignored: not among the robot config's joints "
        f"{list(joints)}; the fit holds those joints at their neutral position (name them in robot.joints to "
        "identify them)",
    )


def configured_gains(args: RecordingOptions, config: RobotConfig, parameters: Any = None) -> tuple[RobotConfig, Any]:
    """The robot config with the drive gains of this run, and those gains (a `DriveGains`) when not the config's.

    ``--gains FILE`` wins; else the ``drive_gains`` block of ``parameters`` (a `ParameterSet`:
    ``validate``'s parameter file); else the robot config's own (None returned). Only for
    ``motor_current``.

    Raises:
        ConfigError: the file has no gains, or gains for other motors; ``--gains`` with another torque source.
    """
    from motor_ident.errors import ConfigError
    from motor_ident.io.params import drive_gains_of, load_drive_gains

    if source_kind(args, config) != "motor_current":
        if getattr(args, "gains", None):
            raise ConfigError(
                f"--gains {args.gains}: drive gains convert motor currents; the torque source is "
                f"{source_kind(args, config)!r} (--torque-source motor_current reads the currents)"
            )
        return config, None
    gains = None
    if args.gains:
        gains = load_drive_gains(args.gains)
    elif parameters is not None:
        gains = drive_gains_of(parameters, str(getattr(args, "params", "") or "the parameter file"))
    return (config, None) if gains is None else (config.with_drive_gains(gains), gains)


@dataclass
class TorqueOutcome:
    """What the torque source did to a record: the converted record, the converter, the drive gains when identified.

    Attributes:
        notes: what was used (the drive gains and where from), for the user.
    """

    record: JointRecord
    kind: str
    converter: TorqueConverter
    notes: tuple[str, ...] = ()
    fit: DriveGainFit | None = None
    json: dict[str, Any] = field(default_factory=dict)
    parameter_extra: dict[str, Any] = field(default_factory=dict)


def apply_torque_source(
    args: RecordingOptions,
    config: RobotConfig,
    regressor: Regressor,
    record: JointRecord,
    read_prepared: Callable[[str], JointRecord] | None = None,
    *,
    gains: Any = None,
) -> TorqueOutcome:
    """Joint torques of ``record`` (prepared: qd, qdd set) from its torque source; drive gains from a payload run.

    The one conversion of ``identify`` (DATA), ``identify --validate-on`` and ``validate``.

    Args:
        args: the command line (``--torque-source``, ``--payload-*``).
        config: the robot, with the drive gains of this run (`configured_gains`).
        regressor: its full regressor.
        record: the prepared recording.
        read_prepared: reads and prepares another recording like ``record`` (the payload run).
        gains: the `DriveGains` `configured_gains` put into ``config`` (None: the config's own).

    Raises:
        ConfigError: payload options without currents, a mass without data or the reverse.
        EstimationError: currents with unknown gains and no payload run (the scale is not identifiable).
    """
    from motor_ident.commands.common import floats
    from motor_ident.commands.data_options import print_wrapped
    from motor_ident.core.actuators.torque_sources import UNITS, configured_side_gains
    from motor_ident.core.estimation.drive_gains import SCALE_NOT_IDENTIFIABLE
    from motor_ident.errors import ConfigError, EstimationError
    from motor_ident.io.params import DriveGains
    from motor_ident.io.torque_record import with_joint_torque

    kind = source_kind(args, config)
    converter = config.torque_converter(kind, regressor.robot)
    motors = converter.transmission.motors
    payload_data, payload_mass = getattr(args, "payload_data", None), getattr(args, "payload_mass", None)
    if (payload_data is None) != (payload_mass is None):
        raise ConfigError("--payload-data and --payload-mass go together: the recording with the payload and its mass")
    if payload_data is not None and kind != "motor_current":
        raise ConfigError(
            f"--payload-data identifies drive gains of motor currents: torque source is {kind!r}; "
            "add --torque-source motor_current"
        )
    out = TorqueOutcome(
        record=record, kind=kind, converter=converter, json={"torque_source": kind, "torque_source_unit": UNITS[kind]}
    )
    side = config.torque_source.gain_side
    std = None
    if kind == "motor_current" and payload_data is None:
        if not config.torque_source.gains_configured:
            raise EstimationError(SCALE_NOT_IDENTIFIABLE)
        origin = gains.origin if gains is not None else f"the robot config {config.source or config.name}"
        out.notes = (f"drive gains [N m/A, {side} side] from {origin}",)
        out.json["drive_gains_from"] = origin
        if gains is not None and gains.std:
            std = np.array([gains.std.get(m, np.nan) for m in motors])
        values = np.asarray(config.torque_source.drive_gains, dtype=float)
    elif kind == "motor_current":
        assert read_prepared is not None
        converter, out.fit = _identify_gains(args, config, regressor, record, read_prepared(str(payload_data)))
        out.converter = converter
        values = configured_side_gains(out.fit.gains, config.torque_source, converter.transmission)
        std = configured_side_gains(out.fit.gains_std, config.torque_source, converter.transmission)
        out.json.update(
            {
                "drive_gains_from": "payload run",
                "drive_gains_determined": [d.determined for d in out.fit.determination],
                "drive_gain_notes": [d.reason for d in out.fit.determination],
                "payload_mass": float(payload_mass),  # type: ignore[arg-type]
                "payload_data": str(payload_data),
            }
        )
        print(
            f"drive gains [N m/A, {side} side] from the payload run ({payload_mass:g} kg), "
            "std from the sandwich covariance (residual correlation included):"
        )
        for name, g, s, how in zip(motors, values, std, out.fit.determination):
            print(f"  {name:<24}{g:12.6g} +- {s:.3g}" + ("" if how.determined else "   POORLY DETERMINED"))
        for name, how in zip(motors, out.fit.determination):
            if not how.determined:
                print_wrapped("warning", f"drive gain of {name}: {how.reason}")
    if kind == "motor_current":
        out.json.update(
            {
                "drive_gains": floats(values),
                "drive_gains_std": None if std is None else floats(std),
                "drive_gain_side": side,
                "drive_gain_motors": list(motors),
            }
        )
        block = DriveGains(
            values=dict(zip(motors, floats(values))),
            side=side,
            std={} if std is None else dict(zip(motors, floats(std))),
        )
        out.parameter_extra = {"drive_gains": block.block()}
    out.record = with_joint_torque(record, out.converter)
    return out


def _identify_gains(
    args: RecordingOptions, config: RobotConfig, regressor: Regressor, unloaded: JointRecord, loaded: JointRecord
) -> tuple[Any, DriveGainFit]:
    """Drive gains from the unloaded and the loaded recording; the converter with them."""
    from motor_ident.core.estimation.drive_gains import CurrentRun, identify_drive_gains, payload_attachment
    from motor_ident.core.estimation.identification import structural_base_parameters
    from motor_ident.io.torque_record import motor_columns

    converter = config.torque_converter("motor_current", regressor.robot)
    motors = converter.transmission.motors
    runs = []
    for name, record in (("DATA", unloaded), ("--payload-data", loaded)):
        record = record.select(config.joints).with_derivatives()
        current = motor_columns(record, "current", motors)
        if current is None:
            from motor_ident.errors import DataError

            raise DataError(f"{name} holds no motor currents (current.<motor> columns or motor_states.effort)")
        assert record.qd is not None and record.qdd is not None
        runs.append(CurrentRun(record.q, record.qd, record.qdd, current))
    joint, _ = payload_attachment(regressor.robot, args.payload_frame)
    assert args.payload_mass is not None  # apply_torque_source refuses --payload-data without it
    fit = identify_drive_gains(
        regressor,
        structural_base_parameters(regressor),
        converter.transmission,
        runs[0],
        runs[1],
        payload_mass=float(args.payload_mass),
        payload_joint=joint,
    )
    return converter.with_drive_gains(fit.gains), fit


def payload_reader(args: RecordingOptions, config: RobotConfig, spec: Any) -> Callable[[str], JointRecord]:
    """Reads and prepares the payload recording like DATA (bag or CSV / NPZ, ``--spec``, range, derivatives)."""

    def read(path: str) -> JointRecord:
        from motor_ident.commands.data_options import preparation
        from motor_ident.io.preprocess import prepare_record

        recording = read_recording(path, args, config, spec)
        return prepare_record(recording.record, preparation(args, spec), source=data_label(path, spec))[0]

    return read
