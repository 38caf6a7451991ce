"""``motor-ident fleet``: a fleet's recordings identified on Dask, stored, and watched for drift.

- ``fleet simulate``: N robots x M days of recordings with known variation and injected drifts.
- ``fleet identify``: every recording into the parameter store, in parallel on Dask distributed
  (a LocalCluster here, or ``--scheduler`` for an existing cluster); resumable.
- ``fleet report``: drift alarms and fleet outliers (JSON) and the parameters over time (HTML).
- ``fleet bench``: throughput with 1 and 2 local workers and on a TCP cluster of processes.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

from motor_ident.commands import arguments
from motor_ident.commands.common import write_json
from motor_ident.commands.interrupt import interrupts_held_from_children


def cmd_simulate(args: argparse.Namespace) -> int:
    """Write a simulated fleet's recordings and truth."""
    from motor_ident.fleet.simulate import FleetSpec, simulate_fleet
    from motor_ident.io.robot_config import load_robot_config

    spec = FleetSpec(
        robots=args.robots,
        days=args.days,
        duration=args.duration,
        rate_hz=args.rate,
        drifts=not args.stationary,
        ramp_per_day=args.ramp,
        payload_mass=args.payload,
        outlier=args.outlier,
        seed=args.seed,
        noise_std=args.noise,
    )
    truth = simulate_fleet(load_robot_config(args.robot), args.out, spec)
    print(f"{args.robots} robots x {args.days} days of {truth['robot_config']} written to {args.out}")
    for drift in truth["drifts"]:
        print(f"  drift: {drift['robot']} {drift['parameter']} from day {drift['from_day']} ({drift['kind']})")
    return 0


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _settings(args: argparse.Namespace) -> Any:
    from motor_ident.fleet.worker import IdentifySettings

    return IdentifySettings(method=args.method, alpha=args.alpha, joint_states_topic=args.joint_states_topic)


def _recordings(args: argparse.Namespace) -> list[Any]:
    from motor_ident.errors import ConfigError
    from motor_ident.fleet.recordings import find_recordings, load_robot_map

    if not args.robot and not args.robot_map:
        raise ConfigError("give --robot CONFIG or --robot-map MAP.yaml (robot name -> config)")
    robot_map = load_robot_map(args.robot_map) if args.robot_map else None
    try:
        return find_recordings(args.recordings, robot_config=args.robot, robot_map=robot_map)
    except ConfigError as exc:  # a robot without a config: name the map that lacks it
        raise ConfigError(f"--robot-map {args.robot_map}: {exc}" if robot_map is not None else str(exc)) from None


def _run(args: argparse.Namespace, recordings: list[Any], settings: Any, store: Any, cluster: Any, console: Any) -> Any:
    """Identify on the cluster (``cluster``, or ``--scheduler``) with a progress bar; the run's summary."""
    from distributed import Client
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from motor_ident.errors import ClusterError
    from motor_ident.fleet.cluster import identify_fleet

    try:
        client = Client(args.scheduler or cluster, timeout=args.connect_timeout)
    except (OSError, ValueError) as exc:  # no scheduler at the address (timed out, refused), or a bad address
        where = f"the Dask scheduler {args.scheduler}" if args.scheduler else "the local cluster's scheduler"
        raise ClusterError(f"cannot reach {where} within {args.connect_timeout:g} s: {exc}") from None
    with (
        client,
        Progress(
            TextColumn("[bold]fleet identify[/]"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
            disable=not console.is_terminal,
        ) as bar,
    ):
        task = bar.add_task("recordings", total=len(recordings))
        return identify_fleet(
            recordings,
            settings,
            store,
            client,
            retries=args.retries,
            chunk_samples=args.chunk_samples,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
        )


def cmd_identify(args: argparse.Namespace) -> int:
    """Identify a fleet's recordings into the parameter store."""
    from rich.console import Console

    from motor_ident.fleet.cluster import RunSummary, local_cluster, pending, quiet_dask_logs
    from motor_ident.fleet.store import ParameterStore

    quiet_dask_logs()  # its reconnect tracebacks: a lost scheduler is said once, in the summary

    recordings = _recordings(args)
    store = ParameterStore(args.store)
    store.check_writable()  # before any work: a read-only or full store is found now, not after the run
    settings = _settings(args)
    signal.signal(signal.SIGTERM, _interrupt)  # stop like Ctrl-C: cancel, shut the cluster down
    console = Console(stderr=True)
    cluster, summary, torn_down = None, None, True
    try:
        try:
            if not pending(recordings, settings, store):  # nothing to do: no cluster to start
                summary = RunSummary(skipped=len(recordings))
            else:
                if not args.scheduler:
                    with interrupts_held_from_children():  # its workers stay quiet on a terminal's Ctrl-C
                        cluster = local_cluster(args.workers)
                summary = _run(args, recordings, settings, store, cluster, console)
        finally:
            if cluster is not None:
                torn_down = False
                cluster.close(timeout=60)
                torn_down = True
    except KeyboardInterrupt:
        if summary is None or summary.not_done or summary.stopped:
            print(
                f"interrupted: {len(store)} rows in {args.store}; run the same command again to resume",
                file=sys.stderr,
            )
            return 130
    if not torn_down:  # Ctrl-C while the cluster stopped, after the run: every row is stored
        print(f"interrupted while the local cluster stopped; the run had ended, its rows are in {args.store}")
    copies = (
        f"{summary.copies} {'copy' if summary.copies == 1 else 'copies'} of others (one row each), "
        if summary.copies
        else ""
    )
    print(
        f"{summary.identified} recordings identified, {summary.skipped} already in the store, {copies}"
        f"{len(summary.failed)} failed ({summary.workers} workers, {summary.seconds:.1f} s); store {args.store}"
    )
    for path, error in summary.failed:
        print(f"failed: {path}: {error}", file=sys.stderr)
    if summary.stopped:
        print(
            f"stopped: {summary.stopped}: {summary.not_done} recordings not done; run the same command again to resume",
            file=sys.stderr,
        )
    write_json(
        args.json,
        {
            "identified": summary.identified,
            "skipped": summary.skipped,
            "copies": summary.copies,
            "failed": [{"recording": p, "error": e} for p, e in summary.failed],
            "stopped": summary.stopped,
            "not_done": summary.not_done,
            "workers": summary.workers,
            "seconds": summary.seconds,
            "rows": len(store),
        },
    )
    return 1 if summary.failed or summary.stopped else 0


def cmd_report(args: argparse.Namespace) -> int:
    """Drift alarms and fleet outliers of a parameter store."""
    from motor_ident.fleet.drift import DriftSettings, detect, long_table, z_scores
    from motor_ident.fleet.store import ParameterStore

    settings = DriftSettings(
        baseline_days=args.baseline_days, alpha=args.alpha, std_scale=args.std_scale, min_fleet=args.min_fleet
    )
    table = long_table(ParameterStore(args.store).frame())
    result = detect(table, settings)
    print(
        f"{len(result['robots'])} robots, {result['tests']} tests ({result['test']}; |z| > {result['threshold']:.3g})"
    )
    print(f"{len(result['alarms'])} alarms, {len(result['outliers'])} fleet outliers")
    for a in result["alarms"]:
        print(f"  alarm: {a['robot']} {a['parameter']} day {a['day']}: z = {a['statistic']:.3g}")
    for o in result["outliers"]:
        print(f"  outlier: {o['robot']} {o['parameter']}: t = {o['statistic']:.3g}")
    if result["outliers_note"]:
        print(f"  note: {result['outliers_note']}")
    if args.html:
        from motor_ident.fleet.report import write_fleet_report

        page = write_fleet_report(args.html, table, z_scores(table, settings), result)
        print(f"report written to {page}")
    write_json(args.json, result)
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    """Throughput of fleet identification with 1 and 2 workers and on a TCP cluster."""
    from motor_ident.fleet.bench import scaling_benchmark
    from motor_ident.fleet.recordings import find_recordings
    from motor_ident.fleet.simulate import FleetSpec, simulate_fleet
    from motor_ident.io.robot_config import load_robot_config

    with tempfile.TemporaryDirectory(prefix="motor_ident_fleet_") as tmp:
        spec = FleetSpec(robots=args.robots, days=args.days, duration=args.duration, rate_hz=args.rate, seed=args.seed)
        simulate_fleet(load_robot_config(args.robot), Path(tmp), spec)
        recordings = find_recordings([tmp], robot_config=args.robot, robot_map=None)
        print(f"{len(recordings)} recordings of {args.duration:g} s at {args.rate:g} Hz ({args.robot})")
        result = scaling_benchmark(recordings, _settings(args))
    result |= {"recordings": len(recordings), "duration_s": args.duration, "rate_hz": args.rate, "robot": args.robot}
    for name, run in result["runs"].items():
        print(
            f"{name:>8}: {run['recordings_per_s']:6.2f} recordings/s, "
            f"parallel efficiency {run['parallel_efficiency']:.2f} ({run['seconds']:.1f} s; workers busy "
            f"{run['worker_busy_fraction']:.0%}, task CPU / wall {run['task_cpu_seconds'] / run['task_seconds']:.0%})"
        )
    write_json(args.json, result)
    return 0


def _identify_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--method", choices=["ols", "wls", "gls", "nominal", "sdp", "log_cholesky"], default="wls")
    p.add_argument("--alpha", type=arguments.FRACTION, default=0.9, help="data weight of --method nominal")
    p.add_argument("--joint-states-topic", default="/joint_states", help="bags: topic of the joint states")


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``fleet`` and its subcommands to the command line."""
    fleet = sub.add_parser("fleet", help="a fleet's recordings: identify on Dask, store, report drifts")
    commands = fleet.add_subparsers(dest="fleet_command", required=True)

    p = commands.add_parser("simulate", help="write N robots x M days of simulated recordings with injected drifts")
    p.add_argument("--robots", type=arguments.COUNT, required=True, help="number of robots")
    p.add_argument(
        "--days", type=arguments.COUNT, required=True, help="recording days (one recording per robot and day)"
    )
    p.add_argument("--out", required=True, help="output directory (DIR/<robot>/day_DDD.npz, DIR/truth.json)")
    p.add_argument("--robot", default="valkyrie_arm", help="robot config (default valkyrie_arm)")
    p.add_argument("--duration", type=arguments.POSITIVE, default=8.0, help="seconds per recording (default 8)")
    p.add_argument("--rate", type=arguments.POSITIVE, default=200.0, help="sample rate in Hz (default 200)")
    p.add_argument("--noise", type=arguments.NON_NEGATIVE, default=0.05, help="torque noise std in N m (default 0.05)")
    p.add_argument("--stationary", action="store_true", help="inject no drift (to measure false alarms)")
    p.add_argument(
        "--ramp",
        type=arguments.NON_NEGATIVE,
        default=0.25,
        help="friction ramp: relative increase per day (default 0.25)",
    )
    p.add_argument("--payload", type=arguments.NON_NEGATIVE, default=1.0, help="payload mass in kg (default 1)")
    p.add_argument(
        "--outlier",
        type=arguments.NON_NEGATIVE,
        default=0.0,
        help="last robot's last-joint Coulomb friction x this (default: none)",
    )
    p.add_argument("--seed", type=arguments.SEED, default=0, help="random seed")
    p.set_defaults(func=cmd_simulate)

    p = commands.add_parser("identify", help="identify recordings in parallel on Dask into a parameter store")
    p.add_argument("recordings", nargs="+", help="DIR/<robot>/<recording> directories or recordings")
    p.add_argument("--robot", help="robot config of every robot (name or YAML path)")
    p.add_argument("--robot-map", help="YAML mapping robot name -> robot config (overrides --robot)")
    p.add_argument("--store", required=True, help="parameter store directory (created)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--workers", type=arguments.COUNT, default=2, help="local worker processes (default 2)")
    where.add_argument("--scheduler", help="address of a running Dask scheduler, e.g. tcp://10.0.0.5:8786")
    p.add_argument(
        "--retries",
        type=arguments.NON_NEGATIVE_INT,
        default=2,
        help="extra attempts of a failing recording (default 2)",
    )
    p.add_argument(
        "--chunk-samples",
        type=arguments.NON_NEGATIVE_INT,
        default=500000,
        help="split NPZ recordings longer than this into chunks identified in parallel and merged exactly "
        "(default 500000; 0: never)",
    )
    p.add_argument("--connect-timeout", type=arguments.POSITIVE, default=60.0, help="seconds to reach the scheduler")
    p.add_argument("--json", help="write the run's summary to this JSON file")
    _identify_options(p)
    p.set_defaults(func=cmd_identify)

    p = commands.add_parser("report", help="drift alarms, fleet outliers and parameter plots from a store")
    p.add_argument("--store", required=True, help="parameter store directory")
    p.add_argument("--json", help="write alarms and outliers to this JSON file")
    p.add_argument("--html", metavar="DIR", help="write index.html and one PNG per robot and joint here")
    p.add_argument("--baseline-days", type=arguments.COUNT, default=2, help="days of each robot's baseline (default 2)")
    p.add_argument(
        "--alpha",
        type=arguments.real(low=0.0, high=1.0, open=(True, True)),
        default=0.01,
        help="false-alarm probability of the whole report",
    )
    p.add_argument("--std-scale", type=arguments.POSITIVE, default=1.0, help="factor on the fits' standard deviations")
    p.add_argument(
        "--min-fleet", type=arguments.integer(low=4), default=5, help="fewest robots for fleet outliers (default 5)"
    )
    p.set_defaults(func=cmd_report)

    p = commands.add_parser("bench", help="throughput with 1 and 2 local workers and a TCP cluster (127.0.0.1)")
    p.add_argument("--robot", default="valkyrie_arm", help="robot config (default valkyrie_arm)")
    p.add_argument("--robots", type=arguments.COUNT, default=4, help="simulated robots (default 4)")
    p.add_argument("--days", type=arguments.COUNT, default=6, help="days per robot (default 6)")
    p.add_argument("--duration", type=arguments.POSITIVE, default=60.0, help="seconds per recording (default 60)")
    p.add_argument("--rate", type=arguments.POSITIVE, default=500.0, help="sample rate in Hz (default 500)")
    p.add_argument("--seed", type=arguments.SEED, default=0, help="random seed")
    p.add_argument("--json", help="write the figures to this JSON file")
    _identify_options(p)
    p.set_defaults(func=cmd_bench)
