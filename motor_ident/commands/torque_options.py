"""``identify``'s torque-source options: which measurement becomes joint torque, and drive gains from a payload run.

``--torque-source`` overrides the robot config's ``torque_source.kind``. With ``motor_current``,
``--payload-data FILE --payload-mass KG`` identifies the drive gains jointly with the base
parameters (`motor_ident.core.estimation.drive_gains`); without a payload run the config's gains
are used, and a config without gains is refused (the scale of currents is not identifiable).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from motor_ident.commands import arguments

if TYPE_CHECKING:  # commands import their work inside functions (motor-ident --help stays light)
    from motor_ident.core.estimation.drive_gains import DriveGainFit
    from motor_ident.core.rigid_body.regressor import Regressor
    from motor_ident.io.bags.series import BagData
    from motor_ident.io.data import JointRecord
    from motor_ident.io.robot_config import RobotConfig


def add_torque_arguments(p: argparse.ArgumentParser) -> None:
    """``--torque-source``, ``--payload-data``, ``--payload-mass``, ``--payload-frame`` and the bag topics they read."""
    p.add_argument(
        "--torque-source",
        metavar="joint_effort|motor_current|motor_pwm|ft_sensor",
        help="where the joint torque comes from (default: the robot config's torque_source): joint_states.effort, "
        "motor currents [A] x drive gains, PWM duty cycles through the motor model, or a 6-axis F/T sensor's wrench",
    )
    p.add_argument(
        "--payload-data",
        metavar="FILE",
        help="motor_current: a second recording of the same kind of motion carrying a payload of known mass "
        "(read like DATA): the drive gains are identified with the base parameters",
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
        "--motor-states-topic",
        default="/motor_states",
        help="bags: motor states (sensor_msgs/JointState; effort = current [A] or duty cycle)",
    )
    p.add_argument(
        "--wrench-topic", default="/ft_sensor/wrench", help="bags: the F/T sensor (geometry_msgs/WrenchStamped)"
    )


def source_kind(args: argparse.Namespace, config: RobotConfig) -> str:
    """The torque source of this run: ``--torque-source`` or the config's."""
    return str(getattr(args, "torque_source", None) or config.torque_source.kind)


def bag_topic_names(args: argparse.Namespace, config: RobotConfig) -> dict[str, str]:
    """``motor_states`` and ``wrench`` topics to read from a bag ('' = skip), for `BagTopics`."""
    kind = source_kind(args, config)
    return {
        "motor_states": args.motor_states_topic if kind in ("motor_current", "motor_pwm") else "",
        "wrench": args.wrench_topic if kind == "ft_sensor" else "",
    }


def bag_joint_record(bag: BagData, args: argparse.Namespace, config: RobotConfig) -> JointRecord:
    """The bag's joint states with the measurement the torque source needs."""
    from motor_ident.io.torque_record import bag_record

    kind = source_kind(args, config)
    return bag.joint_record(config.joints) if kind == "joint_effort" else bag_record(bag, config.joints, kind)


@dataclass
class TorqueOutcome:
    """What the torque source did to a record: the converted record, and the drive gains when identified."""

    record: JointRecord
    kind: str
    notes: tuple[str, ...] = ()
    fit: DriveGainFit | None = None
    json: dict[str, Any] = field(default_factory=dict)
    parameter_extra: dict[str, Any] = field(default_factory=dict)


def apply_torque_source(
    args: argparse.Namespace,
    config: RobotConfig,
    regressor: Regressor,
    record: JointRecord,
    read_prepared: Callable[[str], JointRecord],
) -> TorqueOutcome:
    """Joint torques of ``record`` (prepared: qd, qdd set) from its torque source; drive gains from a payload run.

    Args:
        args: the command line (``--torque-source``, ``--payload-*``).
        config: the robot.
        regressor: its full regressor.
        record: the prepared recording.
        read_prepared: reads and prepares another recording like ``record`` (the payload run).

    Raises:
        ConfigError: payload options without currents, a mass without data or the reverse.
        EstimationError: currents with unknown gains and no payload run (the scale is not identifiable).
    """
    from motor_ident.commands.common import floats
    from motor_ident.commands.data_options import print_wrapped
    from motor_ident.core.actuators.torque_sources import UNITS, configured_side_gains
    from motor_ident.core.estimation.drive_gains import SCALE_NOT_IDENTIFIABLE
    from motor_ident.errors import ConfigError, EstimationError
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
    out = TorqueOutcome(record=record, kind=kind, json={"torque_source": kind, "torque_source_unit": UNITS[kind]})
    if kind == "motor_current" and payload_data is None:
        if not config.torque_source.gains_configured:
            raise EstimationError(SCALE_NOT_IDENTIFIABLE)
        out.notes = (
            "drive gains: the robot config's nominal values (not identified; --payload-data FILE --payload-mass KG "
            "identifies them)",
        )
    elif kind == "motor_current":
        converter, out.fit = _identify_gains(args, config, regressor, record, read_prepared(str(payload_data)))
        side = config.torque_source.gain_side
        transmission = converter.transmission
        gains = configured_side_gains(out.fit.gains, config.torque_source, transmission)
        std = configured_side_gains(out.fit.gains_std, config.torque_source, transmission)
        out.json.update(
            {
                "drive_gains": floats(gains),
                "drive_gains_std": floats(std),
                "drive_gain_side": side,
                "drive_gain_motors": list(motors),
                "drive_gains_determined": [d.determined for d in out.fit.determination],
                "drive_gain_notes": [d.reason for d in out.fit.determination],
                "payload_mass": float(payload_mass),  # type: ignore[arg-type]
                "payload_data": str(payload_data),
            }
        )
        out.parameter_extra = {
            "drive_gains": {
                "side": side,
                "unit": "N m/A",
                "values": dict(zip(motors, floats(gains))),
                "std": dict(zip(motors, floats(std))),
            }
        }
        print(
            f"drive gains [N m/A, {side} side] from the payload run ({payload_mass:g} kg), "
            "std from the sandwich covariance (residual correlation included):"
        )
        for name, g, s, how in zip(motors, gains, std, out.fit.determination):
            print(f"  {name:<24}{g:12.6g} +- {s:.3g}" + ("" if how.determined else "   POORLY DETERMINED"))
        for name, how in zip(motors, out.fit.determination):
            if not how.determined:
                print_wrapped("warning", f"drive gain of {name}: {how.reason}")
    out.record = with_joint_torque(record, converter)
    return out


def _identify_gains(
    args: argparse.Namespace, config: RobotConfig, regressor: Regressor, unloaded: JointRecord, loaded: JointRecord
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


def payload_reader(args: argparse.Namespace, config: RobotConfig, spec: Any) -> Callable[[str], JointRecord]:
    """Reads and prepares the payload recording like DATA (bag or CSV / NPZ, ``--spec``, range, derivatives)."""

    def read(path: str) -> JointRecord:
        from motor_ident.commands.data_options import preparation, read_file
        from motor_ident.commands.identify import is_bag
        from motor_ident.io.bags.read import read_bag
        from motor_ident.io.bags.series import BagTopics
        from motor_ident.io.preprocess import prepare_record

        if is_bag(path):
            topics = BagTopics(joint_states=args.joint_states_topic, commands="", **bag_topic_names(args, config))
            record = bag_joint_record(read_bag(path, joints=config.joints, topics=topics), args, config)
        else:
            record = read_file(path, spec).select(config.joints)
        return prepare_record(record, preparation(args, spec))[0]

    return read
