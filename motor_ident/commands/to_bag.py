"""``motor-ident to-bag``: a CSV / NPZ recording, read through a data spec, as a rosbag2 for ``motor-ident play``.

The recording is read and prepared as ``identify`` reads it (data spec, robot config's joints,
kept range, derivatives), then written on its recorded stamps with the topics the identifier node
subscribes (`motor_ident.io.bags.from_record`), so ``motor-ident play BAG`` drives the node as the
robot would have. ``identify BAG --online --resample none`` replays the same samples offline.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from motor_ident.commands.common import write_json
from motor_ident.commands.data_options import add_data_arguments, add_robot_argument, is_bag, print_wrapped
from motor_ident.commands.options import RecordingOptions


def cmd_to_bag(args: argparse.Namespace) -> int:
    """Convert a recording into a rosbag2."""
    from motor_ident.commands.data_options import load_robot, load_spec_arg, preparation, spec_defaults
    from motor_ident.commands.torque_options import data_label, read_recording, source_kind
    from motor_ident.errors import DataError
    from motor_ident.io.bags.from_record import write_record_bag
    from motor_ident.io.bags.series import BagError
    from motor_ident.io.preprocess import prepare_record

    if is_bag(args.data):
        raise DataError(f"{args.data} is a rosbag2 already: play it with motor-ident play")
    if Path(args.out).exists():  # before reading: the writer refuses it too, but after the work
        raise BagError(f"{args.out} exists already: choose another --out or remove it")
    config = load_robot(args.robot)
    options = RecordingOptions.from_namespace(args)
    spec = load_spec_arg(options)
    options = spec_defaults(options, spec)
    kind = source_kind(options, config)
    recording = read_recording(args.data, options, config, spec)
    # on the recorded stamps: the derivatives computed as identify computes them, the measurements as recorded
    prepared = replace(preparation(options, spec), recorded_stamps=True)
    record, notes = prepare_record(recording.record, prepared, source=data_label(args.data, spec))
    for note in notes:
        print_wrapped("note", note)
    for warning in recording.warnings:
        print_wrapped("warning", warning)
    bag = write_record_bag(
        args.out, record, torque_source=kind, ft_frame=config.torque_source.ft_frame, storage=args.storage
    )
    velocity = "as recorded" if recording.record.qd is not None else "from the derivatives noted above"
    print(
        f"wrote {bag.samples} samples ({bag.duration:.4g} s on the recorded stamps, joints {list(record.joint_names)}, "
        f"torque source {kind}; velocities {velocity}) to {bag.path}: topics {', '.join(bag.topics)}"
    )
    write_json(
        args.json,
        {
            "bag": str(bag.path),
            "samples": bag.samples,
            "duration_s": bag.duration,
            "joints": list(record.joint_names),
            "torque_source": kind,
            "topics": list(bag.topics),
            "storage": args.storage,
            "notes": list(notes),
            "warnings": list(recording.warnings),
        },
    )
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``to-bag`` to the command line."""
    p = sub.add_parser(
        "to-bag",
        help="write a CSV / NPZ recording (read through a data spec) as a rosbag2 with joint_states and the "
        "torque source's topic, on its recorded stamps, for motor-ident play",
    )
    p.add_argument("data", help="recorded data: .csv or .npz (read through --spec when given)")
    add_robot_argument(p)
    p.add_argument("--out", required=True, help="bag directory to create (must not exist)")
    p.add_argument(
        "--torque-source",
        choices=["joint_effort", "motor_current", "motor_pwm", "ft_sensor"],
        help="which measurement goes into the bag (default: the data spec's, else the robot config's): "
        "joint_states.effort, /motor_states effort (currents or duty cycles), or /ft_sensor/wrench",
    )
    p.add_argument("--storage", choices=["mcap", "sqlite3"], default="mcap", help="rosbag2 storage (default mcap)")
    add_data_arguments(p)
    p.add_argument("--json", help="write a summary to this JSON file")
    p.set_defaults(func=cmd_to_bag)
