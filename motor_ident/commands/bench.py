"""``motor-ident bench``: speed figures of motor_ident measured in one run on this machine.

- regressor cost per sample (rigid body + reflected inertia + friction columns) as a ratio to
  pinocchio's bare ``computeJointTorqueRegressor`` and to its RNEA (2, 4, 7 DoF);
- refit rate of a 7-DoF arm with friction at windows of 500, 2000 and 10000 samples, full
  re-solve vs the incremental sliding window;
- the 1 kHz path through DDS (`motor_ident.commands.bench_latency`): state-to-command latency
  p50 / p99, missed cycles and CPU per message of the feedforward node beside the floor, a bare
  rclpy echo node with the same messages and QoS, alternating runs, quiet and with ``--background``
  busy processes, with the stand-in robot in the node's process and in its own; once more with the
  executor a node process does not spin (`motor_ident.ros.runtime.common.NODE_EXECUTOR` is the one
  `run_node` uses), for comparison;
- the online identifier's cost per 1 kHz sample, its blocks averaged and its first samples kept;
- offline identification throughput on a 10-minute 1 kHz record, as a multiple of real time;
- resident memory at the start and end of a simulated closed-loop run;
- with ``--processes``: a lockstep scenario run with every node in its own process (the layout on a
  robot) next to the same run in one process: simulated seconds per wall second, dropped control
  cycles, each node process's memory.

Numbers are reported, never asserted: they depend on the machine.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, Any

import numpy as np

from motor_ident.commands import arguments, bench_latency
from motor_ident.commands.common import write_json

if TYPE_CHECKING:
    from motor_ident.ros.runtime.common import ExecutorKind


REALTIME_PRIORITY = 50
"""``--realtime`` without a value: ros2_control's controller manager's default ``thread_priority``."""


def _rss_mb() -> float:
    """Resident set size of this process [MB] (Linux /proc; NaN elsewhere)."""
    from motor_ident.ros.runtime.processes import memory_mb

    return memory_mb()


def _robots() -> list[tuple[str, Any]]:
    from motor_ident.core.actuators.friction import FrictionKind, FrictionShape
    from motor_ident.core.rigid_body.model import load_robot_model
    from motor_ident.core.rigid_body.regressor import Regressor
    from motor_ident.io.robot_config import load_robot_config
    from motor_ident.io.urdf_paths import example_robot_urdf

    stribeck = FrictionShape(kind=FrictionKind.STRIBECK, stribeck_velocity=0.05)
    pendulum = load_robot_model(example_robot_urdf("double_pendulum_description/urdf/double_pendulum.urdf"))
    panda = load_robot_model(
        example_robot_urdf("panda_description/urdf/panda.urdf"),
        joint_names=[f"panda_joint{i}" for i in range(1, 8)],
        gear_ratio=100.0,
        rotor_inertia=1e-5,
    )
    valkyrie = load_robot_config("valkyrie_arm").build_model()
    return [
        ("double_pendulum (2 DoF)", Regressor(pendulum, [stribeck] * pendulum.n)),
        ("valkyrie_arm (4 DoF)", Regressor(valkyrie, [stribeck] * valkyrie.n)),
        ("panda (7 DoF)", Regressor(panda, [stribeck] * panda.n)),
    ]


def _loop(func: Any, model: Any, data: Any, qp: np.ndarray, vp: np.ndarray, ap: np.ndarray) -> None:
    for k in range(qp.shape[0]):
        func(model, data, qp[k], vp[k], ap[k])


def _per_sample_us(samples: int, func: Any, *args: Any, **kwargs: Any) -> float:
    """Best of three timings of ``func(*args, **kwargs)``, per sample [us]."""
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        func(*args, **kwargs)
        times.append(time.perf_counter() - t0)
    return min(times) / samples * 1e6


def bench_regressor(samples: int = 3000) -> list[dict[str, Any]]:
    """Per-sample cost of the full regressor vs pinocchio's regressor and RNEA."""
    import pinocchio as pin

    from motor_ident.core.rigid_body.model import random_states
    from motor_ident.core.rigid_body.regressor import robot_batch_to_pin

    rows = []
    for name, regressor in _robots():
        robot = regressor.robot
        q, v, a = random_states(robot, np.random.default_rng(0), samples)
        qp, vp, ap = robot_batch_to_pin(robot, q, v, a)
        model, data = robot.model, robot.create_data()
        out = np.zeros((samples, robot.n, regressor.n_parameters))
        best = {
            "full": _per_sample_us(samples, regressor.rows, q, v, a, out=out),
            "pinocchio": _per_sample_us(samples, _loop, pin.computeJointTorqueRegressor, model, data, qp, vp, ap),
            "rnea": _per_sample_us(samples, _loop, pin.rnea, model, data, qp, vp, ap),
        }
        rows.append(
            {
                "robot": name,
                "n_parameters": regressor.n_parameters,
                "full_us": best["full"],
                "pinocchio_regressor_us": best["pinocchio"],
                "rnea_us": best["rnea"],
                "over_pinocchio": best["full"] / best["pinocchio"],
                "over_rnea": best["full"] / best["rnea"],
            }
        )
    return rows


def bench_floating(samples: int) -> list[dict[str, Any]]:
    """`motor_ident.commands.bench_floating.bench_floating_base` (a module of its own: it imports this one)."""
    from motor_ident.commands.bench_floating import bench_floating_base

    return bench_floating_base(samples)


def bench_refit(windows: tuple[int, ...] = (500, 2000, 10000), updates: int = 300) -> list[dict[str, Any]]:
    """Refit rate on a 7-DoF arm with Stribeck friction: full re-solve vs incremental window."""
    from motor_ident.core.estimation.identification import structural_base_parameters
    from motor_ident.core.estimation.least_squares import RegressionStatistics
    from motor_ident.core.estimation.sliding_window import SlidingWindowLS
    from motor_ident.core.rigid_body.model import random_states

    regressor = _robots()[2][1]
    base = structural_base_parameters(regressor)
    rng = np.random.default_rng(1)
    total = max(windows) + updates
    Y = base.base_regressor(regressor.rows(*random_states(regressor.robot, rng, total)))
    tau = Y @ rng.normal(size=base.n_base) + 0.1 * rng.standard_normal(Y.shape[:2])
    rows = []
    for window in windows:
        est = SlidingWindowLS(regressor.robot.n, base.n_base, window)
        for k in range(window):
            est.add(Y[k], tau[k])
        t0 = time.perf_counter()
        for k in range(window, window + updates):
            est.add(Y[k], tau[k])
            est.solve()
        incremental = updates / (time.perf_counter() - t0)
        repeats = max(3, min(updates, 20000 // window))
        t0 = time.perf_counter()
        for k in range(repeats):
            RegressionStatistics.from_arrays(Y[k : k + window], tau[k : k + window]).ols()
        full = repeats / (time.perf_counter() - t0)
        rows.append(
            {"window": window, "n_base_parameters": base.n_base, "full_resolve_hz": full, "incremental_hz": incremental}
        )
    return rows


def bench_consistency(repeats: int = 30) -> dict[str, Any]:
    """`motor_ident.commands.bench_identifier.bench_consistency` (a module of its own: it imports this one)."""
    from motor_ident.commands import bench_identifier

    return bench_identifier.bench_consistency(repeats)


def bench_online(seconds: float = 5.0) -> list[dict[str, Any]]:
    """`motor_ident.commands.bench_identifier.bench_online`."""
    from motor_ident.commands import bench_identifier

    return bench_identifier.bench_online(seconds)


def bench_batch(seconds: float = 600.0, rate_hz: float = 1000.0) -> dict[str, Any]:
    """Offline identification throughput on a synthetic valkyrie_arm record."""
    from motor_ident.core.estimation.identification import identify, structural_base_parameters
    from motor_ident.io.robot_config import load_robot_config
    from motor_ident.sim.synthetic import excitation_record

    config = load_robot_config("valkyrie_arm")
    regressor = config.build_regressor()
    base = structural_base_parameters(regressor)
    record, _ = excitation_record(
        regressor, config.nominal_parameters(regressor), duration=seconds, rate_hz=rate_hz, noise_std=0.1
    )
    qd, qdd = record.qd, record.qdd
    assert qd is not None and qdd is not None  # excitation_record gives exact derivatives
    t0 = time.perf_counter()
    result = identify(regressor, record.q, qd, qdd, record.tau, base=base, validate_fraction=0.2)
    wall = time.perf_counter() - t0
    assert result.heldout is not None  # validate_fraction > 0
    return {
        "record_s": seconds,
        "rate_hz": rate_hz,
        "wall_s": wall,
        "x_realtime": seconds / wall,
        "heldout_r2_min": float(result.heldout.r2.min()),
    }


def bench_memory(seconds: float) -> dict[str, Any]:
    """RSS before and after a closed-loop run of the valkyrie_arm scenario (no DDS)."""
    from motor_ident.scenario.closed_loop import build_closed_loop, run_closed_loop

    loop = build_closed_loop("valkyrie_arm")
    run_closed_loop(loop, 2.0)  # warm up caches and allocators
    start = _rss_mb()
    samples: list[float] = []
    t0 = time.perf_counter()
    run_closed_loop(loop, seconds, every=max(seconds / 20.0, 0.5), callback=lambda *_: samples.append(_rss_mb()))
    wall = time.perf_counter() - t0
    return {
        "sim_s": seconds,
        "wall_s": wall,
        "rss_start_mb": start,
        "rss_end_mb": _rss_mb(),
        "rss_max_mb": max(samples or [start]),
        "gate_open": loop.identifier.gate_open,
    }


def bench_feedforward(
    seconds: float, *, same_process: bool = True, executor: ExecutorKind | None = None, node: str = "feedforward"
) -> dict[str, Any]:
    """State-to-command latency of the feedforward node through DDS at 1 kHz.

    ``same_process``: the stand-in robot shares the node's process and executor (the JSON keys
    ``ff_*``); otherwise it runs in its own process as a hardware interface would (``ff_separate``).
    ``executor``: what spins the feedforward node (default: `run_node`'s). ``node="echo"``: the
    bare echo node instead (the floor; keys ``echo_*``).
    """
    from motor_ident.ros.bench.latency import measure_feedforward_latency
    from motor_ident.ros.runtime.common import NODE_EXECUTOR

    return measure_feedforward_latency(
        seconds,
        same_process=same_process,
        executor=executor or NODE_EXECUTOR,
        node="echo" if node == "echo" else "feedforward",
    )


def bench_layouts(seconds: float) -> dict[str, Any]:
    """The valkyrie_arm scenario in lockstep for ``seconds`` simulated, in one process and as processes.

    ``x_realtime``: simulated over wall seconds once the robot runs (start-up excluded), i.e. the
    closed loop's cycle rate / 1 kHz; ``dropped_control_cycles``: states without a command;
    ``peak_rss_mb``: per node process (as processes only).
    """
    from motor_ident.ros.runtime.runner import run_scenario

    rows: dict[str, Any] = {}
    for layout, processes in (("one_process", False), ("processes", True)):
        result = run_scenario("valkyrie_arm", duration=seconds, lockstep=True, keep_series=False, processes=processes)
        rec = result.recording
        rows[layout] = {
            "sim_s": result.sim_time,
            "wall_s": result.wall_time,
            "x_realtime": result.sim_time / result.wall_time,
            "states": rec.states,
            "dropped_control_cycles": max(rec.states - rec.commands, 0),
            "nonfinite_commands": rec.nonfinite_commands,
            "peak_rss_mb": {p["node"]: p["peak_rss_mb"] for p in getattr(result, "processes", [])},
        }
    return rows


def latency_keys(latency: dict[str, Any]) -> dict[str, Any]:
    """The JSON keys scripts rely on, from the medians of `bench_latency.summary`: the feedforward's
    ``ff_*`` and its floor's ``echo_*``, quiet with the robot in the node's process; ``*_separate``
    with the robot in its own process; ``*_contended`` (and ``*_separate_contended``) with the
    background load. The other nodes on the path: ``pwm_feedforward_*``, ``pwm_feedforward_echo_*``,
    ``pwm_feedforward_over_echo_*`` (and ``decoupler_...``)."""
    out: dict[str, Any] = {}
    for node, cases in latency.items():
        own, echo = ("ff", "echo") if node == "feedforward" else (node, f"{node}_echo")
        for name, row in cases.items():
            case, layout = name.split("_", 1)
            suffix = ("_separate" if layout == "separate" else "") + ("_contended" if case == "contended" else "")
            for key_in, prefix in (("node", own), ("echo", echo)):
                for key in ("latency_p50_ms", "latency_p99_ms", "missed_cycles", "cpu_us_per_message"):
                    out[f"{prefix}_{key}{suffix}"] = row[key_in][key]
            for ratio in ("p99", "missed", "cpu"):
                out[f"{own}_over_echo_{ratio}{suffix}"] = row[f"{ratio}_over_echo"]
            out[f"{own}_targets{suffix}"] = row["targets"]
    return out


def cmd_bench(args: argparse.Namespace) -> int:
    """Run every benchmark and print a table."""
    from rich.console import Console
    from rich.table import Table

    from motor_ident.ros.runtime.common import NODE_EXECUTOR

    console = Console()
    quick = args.quick
    other_executor: ExecutorKind = "single_threaded" if NODE_EXECUTOR == "events" else "events"
    results: dict[str, Any] = {}
    if args.latency_only:
        return _latency_only(args, console)
    with console.status("regressor cost ..."):
        results["regressor"] = bench_regressor()
    with console.status("floating-base regressor cost ..."):
        results["floating_base"] = bench_floating(200 if quick else 1000)
    with console.status("refit rate ..."):
        results["refit"] = bench_refit(updates=100 if quick else 300)
    with console.status("physical consistency check ..."):
        results["consistency"] = bench_consistency(10 if quick else 30)
    with console.status("online identifier per sample ..."):
        results["online"] = bench_online(2.0 if quick else 5.0)
    with console.status("offline identification throughput ..."):
        results["batch"] = bench_batch(60.0 if quick else 600.0)
    ff_seconds = 5.0 if quick else args.ff_seconds
    runs = 1 if quick else args.runs
    with console.status("1 kHz path through DDS ...") as status:
        measured = bench_latency.measure_cases(
            ff_seconds,
            runs=runs,
            background=args.background,
            kind=args.background_kind,
            nodes=("feedforward",) if quick and not args.nodes else tuple(args.nodes or bench_latency.NODES),
            progress=lambda text: status.update(f"1 kHz path through DDS: {text} ..."),
            priority=args.realtime,
        )
    results["latency"] = bench_latency.summary(measured)
    results["latency_runs"] = measured
    with console.status(f"feedforward latency, robot in its own process, {other_executor} executor ..."):
        results["feedforward_separate_other"] = bench_feedforward(
            ff_seconds, same_process=False, executor=other_executor
        )
    if args.processes:
        with console.status("scenario in one process and as processes ..."):
            results["layouts"] = bench_layouts(5.0 if quick else args.layout_seconds)
    with console.status("memory over a simulated run ..."):
        results["memory"] = bench_memory(20.0 if quick else args.sim_seconds)

    table = Table(title="motor_ident bench")
    for column in ("measure", "value", "target"):
        table.add_column(column)
    for row in results["regressor"]:
        table.add_row(
            f"regressor {row['robot']}",
            f"{row['full_us']:.1f} us/sample = {row['over_pinocchio']:.2f} x pinocchio, {row['over_rnea']:.2f} x RNEA",
            "<= 1.5 x pinocchio",
        )
    for row in results["floating_base"]:
        table.add_row(
            f"floating-base regressor, {row['dof']} DoF",
            f"{row['rows_us']:.0f} us/sample = {row['over_pinocchio']:.2f} x pinocchio free-flyer "
            f"({row['pinocchio_regressor_us']:.0f}); base rows {row['base_rows_us']:.0f} "
            f"({row['base_rows_over_pinocchio']:.2f} x); {row['rows_and_wrenches_us']:.0f} with the feet's "
            f"wrenches; base-row WLS refit "
            f"{row['refit_hz']:.0f} Hz ({row['n_base']} base parameters)",
            "<= 1.5 x pinocchio",
        )
    for row in results["refit"]:
        table.add_row(
            f"refit 7 DoF, window {row['window']}",
            f"{row['incremental_hz']:.0f} Hz incremental, {row['full_resolve_hz']:.1f} Hz full re-solve",
            ">= 1000 Hz at 2000",
        )
    c = results["consistency"]
    table.add_row(
        "consistency check, 4 links",
        f"SDP {c['sdp_ms']:.1f} ms (p95 {c['sdp_p95_ms']:.1f}), O(b) test {c['fast_us']:.0f} us",
        "< refit period (100 ms at 10 Hz)",
    )
    for row in results["online"]:
        table.add_row(
            f"online identifier, 4 DoF, decimation {row['decimation']}",
            f"{row['us_per_sample']:.0f} us per 1 kHz sample (refits included, consistency check apart)",
            "<= 100 us (a tenth of a core at 1 kHz)",
        )
    for row in bench_latency.table_rows(
        results["latency"], runs=runs, background=args.background, kind=args.background_kind, priority=args.realtime
    ):
        table.add_row(*row)
    other = results["feedforward_separate_other"]
    table.add_row(
        f"feedforward, robot in its own process, {other_executor} executor",
        f"p50 {other['latency_p50_ms']:.3f} ms, p99 {other['latency_p99_ms']:.3f} ms, missed {other['missed_cycles']}",
        f"for comparison with {NODE_EXECUTOR}",
    )
    b = results["batch"]
    table.add_row(
        "offline identification", f"{b['x_realtime']:.1f} x real time ({b['record_s']:.0f} s at 1 kHz)", ">= 20 x"
    )
    mem = results["memory"]
    table.add_row(
        "memory", f"{mem['rss_start_mb']:.0f} -> {mem['rss_end_mb']:.0f} MB over {mem['sim_s']:.0f} s simulated", "flat"
    )
    for layout, row in results.get("layouts", {}).items():
        memory = ", ".join(f"{node} {mb:.0f}" for node, mb in row["peak_rss_mb"].items())
        table.add_row(
            f"lockstep valkyrie_arm, {layout.replace('_', ' ')}",
            f"{row['x_realtime']:.2f} x real time, {row['dropped_control_cycles']} of {row['states']} cycles dropped"
            + (f"; peak memory [MB] {memory}" if memory else ""),
            "0 dropped",
        )
    console.print(table)
    for warning in bench_latency.realtime_warnings(measured):
        console.print(f"warning: {warning}")

    refit_2000 = next((r["incremental_hz"] for r in results["refit"] if r["window"] == 2000), None)
    summary = {
        "regressor_over_pinocchio": {r["robot"]: r["over_pinocchio"] for r in results["regressor"]},
        "regressor_over_rnea": {r["robot"]: r["over_rnea"] for r in results["regressor"]},
        "refit_hz": refit_2000,
        "consistency_check_ms": c["sdp_ms"],
        "online_us_per_sample": {r["decimation"]: r["us_per_sample"] for r in results["online"]},
        **latency_keys(results["latency"]),
        "ff_executor": NODE_EXECUTOR,
        f"ff_separate_{other_executor}_latency_p99_ms": other["latency_p99_ms"],
        f"ff_separate_{other_executor}_missed_cycles": other["missed_cycles"],
        "batch_x_realtime": b["x_realtime"],
        "rss_start_mb": mem["rss_start_mb"],
        "rss_end_mb": mem["rss_end_mb"],
        **(
            {f"{layout}_x_realtime": row["x_realtime"] for layout, row in results["layouts"].items()}
            if "layouts" in results
            else {}
        ),
        "details": results,
    }
    write_json(args.json, summary)
    return 0


def _latency_only(args: argparse.Namespace, console: Any) -> int:
    """``--latency-only``: the 1 kHz path's table alone (``--nodes``, ``--runs``, ``--ff-seconds``,
    ``--background``); the JSON holds its keys and the runs."""
    from rich.table import Table

    runs = 1 if args.quick else args.runs
    with console.status("1 kHz path through DDS ...") as status:
        measured = bench_latency.measure_cases(
            5.0 if args.quick else args.ff_seconds,
            runs=runs,
            background=args.background,
            kind=args.background_kind,
            nodes=tuple(args.nodes or bench_latency.NODES),
            progress=lambda text: status.update(f"1 kHz path through DDS: {text} ..."),
            priority=args.realtime,
        )
    latency = bench_latency.summary(measured)
    table = Table(title="motor_ident bench: the 1 kHz path")
    for column in ("measure", "value", "target"):
        table.add_column(column)
    for row in bench_latency.table_rows(
        latency, runs=runs, background=args.background, kind=args.background_kind, priority=args.realtime
    ):
        table.add_row(*row)
    console.print(table)
    for warning in bench_latency.realtime_warnings(measured):
        console.print(f"warning: {warning}")
    write_json(args.json, {**latency_keys(latency), "details": {"latency": latency, "latency_runs": measured}})
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``bench`` to the command line."""
    p = sub.add_parser("bench", help="measure regressor cost, refit rate, feedforward latency, throughput, memory")
    p.add_argument("--quick", action="store_true", help="short runs (about a minute in all)")
    p.add_argument(
        "--ff-seconds", type=arguments.POSITIVE, default=10.0, help="length of each 1 kHz latency run [s] (default 10)"
    )
    p.add_argument(
        "--sim-seconds",
        type=arguments.POSITIVE,
        default=600.0,
        help="simulated seconds for the memory run (default 600)",
    )
    p.add_argument(
        "--processes",
        action="store_true",
        help="also run the scenario with every node in its own process, next to the one-process run",
    )
    p.add_argument(
        "--layout-seconds",
        type=arguments.POSITIVE,
        default=30.0,
        help="simulated seconds of each --processes run (default 30)",
    )
    p.add_argument(
        "--runs",
        type=arguments.COUNT,
        default=3,
        help="alternating echo / node runs per node, case and layout (default 3)",
    )
    p.add_argument(
        "--background",
        type=arguments.NON_NEGATIVE_INT,
        default=1,
        help="busy processes beside the contended case's runs (default 1; 0: the quiet case only)",
    )
    p.add_argument(
        "--background-kind",
        choices=["cpu", "alloc"],
        default="cpu",
        help="what they do: a CPU-bound loop, or one that also allocates and frees memory",
    )
    p.add_argument(
        "--latency-only", action="store_true", help="only the 1 kHz path's table (the nodes beside the echo)"
    )
    p.add_argument(
        "--nodes",
        nargs="+",
        choices=list(bench_latency.NODES),
        help="the 1 kHz path's cases to measure (default: all; --quick: feedforward)",
    )
    p.add_argument(
        "--realtime",
        type=arguments.integer(low=1, high=99),
        nargs="?",
        const=REALTIME_PRIORITY,
        default=0,
        metavar="PRIORITY",
        help=f"run the 1 kHz path's echo, nodes and stand-in robot at SCHED_FIFO with this priority "
        f"(default {REALTIME_PRIORITY}, as ros2_control's controller manager); the busy processes stay normal",
    )
    p.add_argument("--json", help="write the figures to this JSON file")
    p.set_defaults(func=cmd_bench)
