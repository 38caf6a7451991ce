"""Command-line options shared by the commands that read a recording: data spec, range, derivatives.

``identify`` and ``validate`` take the same options; a flag given on the command line wins over
the data spec's value.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from motor_ident.commands import arguments

if TYPE_CHECKING:  # commands import their work inside functions (motor-ident --help stays light)
    from motor_ident.commands.options import RecordingOptions
    from motor_ident.core.actuators.transmission import Transmission
    from motor_ident.io.data import JointRecord
    from motor_ident.io.data_spec import DataSpec
    from motor_ident.io.preprocess import Preparation
    from motor_ident.io.robot_config import RobotConfig


def is_bag(path: str | Path) -> bool:
    """True for a rosbag2 directory, a .mcap or a .db3 file."""
    path = Path(path)
    return path.is_dir() or path.suffix.lower() in (".mcap", ".db3")


def add_robot_argument(p: argparse.ArgumentParser) -> None:
    """``--robot``: a config name, a robot YAML or a plain URDF."""
    p.add_argument(
        "--robot",
        required=True,
        help="robot config name (e.g. valkyrie_arm), robot YAML path, or a plain URDF (every movable joint, "
        "Coulomb + viscous friction and a reflected rotor inertia per joint)",
    )


def load_robot(name_or_path: str) -> RobotConfig:
    """The robot config; a plain URDF prints how to write the YAML for more."""
    from motor_ident.io.robot_config import load_robot_config
    from motor_ident.io.urdf_robot import URDF_NOTE

    config = load_robot_config(name_or_path)
    if config.source is not None and config.source.suffix.lower() == ".urdf":
        print_wrapped("note", URDF_NOTE)
    return config


def add_data_arguments(p: argparse.ArgumentParser) -> None:
    """The options of a recording: spec, kept range, resampling, differentiation."""
    p.add_argument(
        "--spec",
        metavar="SPEC",
        help="data spec YAML: how to read a vendor CSV (columns by index or name, units, time column or rate, "
        "range to keep, differentiation); see motor_ident/io/data_spec.py and examples/arm_log/spec.yaml",
    )
    keep = p.add_mutually_exclusive_group()
    keep.add_argument(
        "--keep-time",
        metavar="START:STOP",
        help="keep only this time range, seconds from the first sample (e.g. 1.5:32.5; either end may be empty): "
        "drop the robot resting before and after the motion",
    )
    keep.add_argument("--keep-samples", metavar="FIRST:STOP", help="keep only these sample indices (STOP excluded)")
    p.add_argument(
        "--resample-hz",
        type=arguments.POSITIVE,
        help="resample onto a uniform grid at this rate. Without it, stamps whose steps differ from their median "
        "by more than 5%% are resampled at the median step. Positions are interpolated by cubic spline, every "
        "measurement (measured velocities, torques, currents, duty cycles, wrench) linearly, so a joint at rest "
        "keeps its exact zero velocity",
    )
    p.add_argument(
        "--resample",
        choices=["auto", "none"],
        help="auto (default): resample as --resample-hz says; none: keep the recorded stamps (derivatives by a "
        "Savitzky-Golay fit on the stamps themselves). Validation metrics are always computed on the recorded stamps",
    )
    p.add_argument(
        "--derivative",
        choices=["savgol", "butterworth"],
        help="how velocity and acceleration are computed from the positions (zero phase, no delay): savgol "
        "(Savitzky-Golay cubic, default) or butterworth (4th-order low-pass forward-backward, central differences)",
    )
    p.add_argument(
        "--savgol-window",
        type=arguments.POSITIVE,
        metavar="S",
        help="Savitzky-Golay window [s] (default 0.05: passes motions up to about 10 Hz, lengthened to hold 11 samples "
        "at low rates: 0.11 s at 100 Hz; longer smooths more)",
    )
    p.add_argument(
        "--cutoff-hz",
        type=arguments.POSITIVE,
        help="Butterworth cut-off [Hz] (default 10: above most excitation trajectories, below sensor noise)",
    )
    p.add_argument(
        "--filter-torque",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="pass the measured torque through the same zero-phase filter (default off: torque noise averages out "
        "in the least squares; turn it on when the torque carries content above the cut-off)",
    )


def preparation(args: RecordingOptions, spec: DataSpec | None) -> Preparation:
    """The spec's preparation with the command line's flags on top."""
    from motor_ident.core.estimation.signals import Differentiation
    from motor_ident.io.preprocess import KeepRange, Preparation

    base = spec.preparation if spec is not None else Preparation()
    how = base.differentiation
    changes: dict[str, object] = {}
    for flag, key in (("derivative", "method"), ("savgol_window", "window_s"), ("cutoff_hz", "cutoff_hz")):
        if getattr(args, flag, None) is not None:
            changes[key] = getattr(args, flag)
    if getattr(args, "filter_torque", None) is not None:
        changes["filter_torque"] = bool(args.filter_torque)
    how = Differentiation(**{**how.__dict__, **changes})  # type: ignore[arg-type]
    keep = base.keep
    if args.keep_time:
        keep = KeepRange.parse(args.keep_time, "s")
    elif args.keep_samples:
        keep = KeepRange.parse(args.keep_samples, "samples")
    rate = args.resample_hz if getattr(args, "resample_hz", None) is not None else base.resample_hz
    mode = getattr(args, "resample", None) or base.resample
    if getattr(args, "resample", None) == "none" and getattr(args, "resample_hz", None) is None:
        rate = None  # --resample none overrides a spec's rate
    return replace(base, keep=keep, resample_hz=rate, differentiation=how, resample=mode)


def load_spec_arg(args: RecordingOptions) -> DataSpec | None:
    """The data spec of ``--spec`` (None without it)."""
    from motor_ident.io.data_spec import load_spec

    return load_spec(args.spec) if args.spec else None


def read_file(path: str | Path, spec: DataSpec | None, transmission: Transmission | None = None) -> JointRecord:
    """A CSV / NPZ recording, through ``spec`` when given (a bag spec falls back to the plain reader);
    motor-side columns become joint columns through ``transmission``."""
    from motor_ident.io.data import load_record
    from motor_ident.io.data_spec import read_with_spec

    if spec is not None and spec.format == "csv":
        return read_with_spec(path, spec, transmission)
    return load_record(path)


def print_wrapped(prefix: str, text: str, width: int = 100) -> None:
    """Print ``prefix: text`` to stderr wrapped at ``width``, continuation lines indented."""
    import textwrap

    print(
        textwrap.fill(text, width=width, initial_indent=f"{prefix}: ", subsequent_indent=" " * (len(prefix) + 2)),
        file=sys.stderr,
    )


def spec_defaults(args: RecordingOptions, spec: DataSpec | None) -> RecordingOptions:
    """``args`` with the spec's bag topics and torque source where the command line left them unset."""
    if spec is None:
        return args
    if spec.topics and "joint_states" in spec.topics and args.joint_states_topic == "/joint_states":
        args = replace(args, joint_states_topic=spec.topics["joint_states"])
    if spec.torque_source is not None and args.torque_source is None:
        args = replace(args, torque_source=spec.torque_source)
    return args
