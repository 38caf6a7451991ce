"""``motor-ident record``: run a scenario's simulated robot under excitation and write a rosbag2.

The scenario runs in the ROS-free closed loop (`motor_ident.scenario.closed_loop`: the same plant,
online identifier and feedforward objects the nodes wrap, configured from the same parameter
file), so a recording is deterministic and needs no DDS. The bag holds what the robot and the
identifier would publish:

| topic                          | type                           | content                               |
|--------------------------------|--------------------------------|---------------------------------------|
| ``/joint_states``              | sensor_msgs/msg/JointState     | q, qd, effort = measured joint torque |
| ``/motor_states``              | sensor_msgs/msg/JointState     | rotor side, the config's motor names  |
| ``/effort_controller/commands``| std_msgs/msg/Float64MultiArray | commanded joint torques               |
| ``/identifier/gate_open``      | std_msgs/msg/Bool              | gate state, on change                 |
| ``/identifier/r2``             | std_msgs/msg/Float64MultiArray | window R^2 per joint, on each refit   |

Receive times are the simulated time, so ``motor-ident play`` replays it with the simulator's
clock. Each topic carries the QoS its node publishes with (`motor_ident.io.bags.qos`).

With ``--topics``, ``record`` records a running robot's live DDS topics instead
(`motor_ident.ros.recording.topic_recorder`): raw CDR with the topics' types and QoS, until ``--duration``
seconds have passed or Ctrl-C / SIGTERM, which leave a complete bag (exit status 0, as after a
simulated recording stopped early).
"""

from __future__ import annotations

import argparse
import signal
import threading
from dataclasses import dataclass
from pathlib import Path

from motor_ident.commands import arguments
from motor_ident.commands.common import write_json
from motor_ident.sim.mujoco_config import ENGINES


@dataclass(frozen=True)
class RecordSummary:
    """What `record_scenario` wrote: bag path, samples, simulated seconds, gate opening time, physics engine."""

    path: Path
    samples: int
    duration: float
    joints: tuple[str, ...]
    gate_opened_at_s: float | None
    engine: str


def record_scenario(
    scenario: str | Path,
    out: str | Path,
    *,
    duration: float,
    storage: str = "mcap",
    overrides: dict[str, dict[str, object]] | None = None,
    engine: str | None = None,
) -> RecordSummary:
    """Simulate ``scenario`` for ``duration`` seconds and write its topics to the bag ``out``.

    ``engine`` (``pinocchio`` or ``mujoco``) overrides the scenario's sim_robot ``engine``.

    Raises:
        ConfigError: the scenario or a value is invalid.
        BagError: ``out`` exists already.
    """
    from motor_ident.errors import ConfigError
    from motor_ident.io.bags.write import BagWriter
    from motor_ident.scenario.closed_loop import build_closed_loop

    if not duration > 0.0:
        raise ConfigError(f"--duration = {duration!r}: expected > 0 seconds")
    writer = BagWriter(out, storage=storage)  # refuses an existing path before the simulation starts
    overrides = {node: dict(values) for node, values in (overrides or {}).items()}
    if engine is not None:
        overrides.setdefault("sim_robot", {})["engine"] = engine
    loop = build_closed_loop(scenario, overrides)
    joints = tuple(loop.sim.joint_names)
    motors = list(loop.sim.transmission.motors)  # as sim_robot names them
    steps = int(round(duration / loop.sim.dt))
    opened: float | None = None
    gate: bool | None = None
    last_fit = None
    # Ctrl-C ends the recording early and keeps it, like ros2 bag record: the signal only sets a
    # flag checked between samples, so no message is ever half written.
    interrupted = threading.Event()
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, lambda *_: interrupted.set()) if in_main else None
    done = 0
    try:
        with writer as bag:
            while done < steps and not interrupted.is_set():
                done += 1
                m, _ = loop.step()
                bag.joint_state("/joint_states", m.t, joints, m.q, m.qd, m.effort)
                bag.joint_state("/motor_states", m.t, motors, m.motor_position, m.motor_velocity, m.motor_effort)
                bag.array("/effort_controller/commands", m.t, loop.command)
                core = loop.identifier
                if core.fit is not None and core.fit is not last_fit:
                    last_fit = core.fit
                    bag.array("/identifier/r2", m.t, core.fit.r2_uncentred)
                if core.gate_open != gate:
                    gate = core.gate_open
                    bag.boolean("/identifier/gate_open", m.t, gate)
                    if gate and opened is None:
                        opened = m.t
    finally:
        if in_main:
            signal.signal(signal.SIGINT, previous)
    engine_used = loop.scenario.nodes["sim_robot"].plant.engine
    return RecordSummary(Path(out), done, done * loop.sim.dt, joints, opened, engine_used)


def record_live(
    topics: list[str], out: str, *, duration: float | None, wait: float, storage: str, json_path: str | None
) -> int:
    """Record live DDS topics into a rosbag2 (``record --topics``)."""
    from motor_ident.ros.recording.topic_recorder import record_topics

    def started(recorded: list[str]) -> None:
        until = "Ctrl-C" if duration is None else f"{duration:g} s or Ctrl-C"
        print(f"recording {recorded} to {out} until {until}", flush=True)

    result = record_topics(topics, out, duration=duration, wait=wait, storage=storage, on_start=started)
    counts = ", ".join(f"{topic} {t.messages}" for topic, t in result.topics.items())
    missing = f"; never published: {result.missing}" if result.missing else ""
    missing += "".join(f"; left out {why}" for why in result.refused.values())
    print(
        f"recorded {result.messages} messages in {result.seconds:.1f} s ({counts}) to {result.path}, "
        f"stopped by {result.stopped_by}{missing}"
    )
    write_json(
        json_path,
        {
            "bag": str(result.path),
            "seconds": result.seconds,
            "stopped_by": result.stopped_by,
            "messages": {topic: t.messages for topic, t in result.topics.items()},
            "types": {topic: t.msgtype for topic, t in result.topics.items()},
            "missing": result.missing,
            "refused": result.refused,
            "cpu_seconds": result.cpu_seconds,
            "storage": storage,
        },
    )
    return 0


def cmd_record(args: argparse.Namespace) -> int:
    """Record a simulated run, or live topics (``--topics``), into a rosbag2."""
    if args.topics:  # --scenario, --engine without --topics, --wait with it: refused by option_checks
        return record_live(
            args.topics,
            args.out,
            duration=args.duration,
            wait=args.wait,
            storage=args.storage,
            json_path=args.json,
        )
    summary = record_scenario(
        args.scenario,
        args.out,
        duration=20.0 if args.duration is None else args.duration,
        storage=args.storage,
        engine=args.engine,
    )
    opened = "never" if summary.gate_opened_at_s is None else f"{summary.gate_opened_at_s:.3f} s"
    print(
        f"recorded {summary.samples} joint states ({summary.duration:g} s simulated on {summary.engine}, joints "
        f"{list(summary.joints)}) to {summary.path}; identifier gate opened: {opened}"
    )
    write_json(
        args.json,
        {
            "bag": str(summary.path),
            "samples": summary.samples,
            "duration_s": summary.duration,
            "joints": list(summary.joints),
            "gate_opened_at_s": summary.gate_opened_at_s,
            "storage": args.storage,
            "engine": summary.engine,
        },
    )
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``record`` to the command line."""
    p = sub.add_parser(
        "record", help="simulate a scenario under excitation, or record live topics (--topics), into a rosbag2 (MCAP)"
    )
    p.add_argument(
        "--scenario", default="valkyrie_arm", help="scenario name or parameter file to simulate (default valkyrie_arm)"
    )
    p.add_argument(
        "--topics",
        nargs="+",
        metavar="TOPIC",
        help="record these live DDS topics of a running robot instead of simulating (raw, with their types and QoS)",
    )
    p.add_argument("--out", required=True, help="bag directory to create (must not exist)")
    p.add_argument(
        "--duration",
        type=arguments.POSITIVE,
        help="simulated seconds (default 20); with --topics, wall seconds from the first message (default: Ctrl-C)",
    )
    p.add_argument(
        "--wait",
        type=arguments.NON_NEGATIVE,
        default=5.0,
        metavar="SEC",
        help="with --topics: give up when no topic has a publisher after SEC seconds (default 5)",
    )
    p.add_argument("--storage", choices=["mcap", "sqlite3"], default="mcap", help="rosbag2 storage (default mcap)")
    p.add_argument(
        "--engine",
        choices=ENGINES,
        help="physics of the simulated robot: pinocchio (the estimator's own model, exact) or mujoco "
        "(independent, with unmodelled effects); default: the scenario's sim_robot engine",
    )
    p.add_argument("--json", help="write a summary to this JSON file")
    p.set_defaults(func=cmd_record)
