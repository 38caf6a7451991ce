"""``motor-ident soak``: a long run of a scenario's nodes over DDS, watching memory and cycles.

Runs the scenario (lockstep: as fast as the machine allows) for ``--duration`` simulated seconds
and reports resident memory over time, states published vs commands answered (a dropped control
cycle is a state without a command), non-finite commands and samples the identifier dropped.
With ``--processes`` every node is its own process (the layout on a robot, where the ros2_control
hardware interface is another process too); memory is then the sum over the node processes, and
``rss_per_node_mb`` has each one's.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from motor_ident.commands import arguments
from motor_ident.commands.common import write_json


def cmd_soak(args: argparse.Namespace) -> int:
    """Run the soak and print its figures."""
    from rich.console import Console

    from motor_ident.ros.runtime.processes import memory_mb
    from motor_ident.ros.runtime.runner import run_scenario

    console = Console()
    rss: list[tuple[float, float]] = []
    per_node: dict[str, list[tuple[float, float]]] = {}
    last = [0.0]

    def resident(result: Any) -> float:
        """Memory of the nodes [MB]: this process's, or the sum over the node processes."""
        processes = getattr(result, "processes", None)
        if not processes:
            return memory_mb()
        for p in processes:
            per_node.setdefault(p["node"], []).append((result.sim_time, p["rss_mb"]))
        return float(sum(p["rss_mb"] for p in processes))

    def progress(result: Any) -> None:
        now = time.monotonic()
        if now - last[0] >= 5.0:
            last[0] = now
            rss.append((result.sim_time, resident(result)))
            console.print(f"t = {result.sim_time:7.1f} / {args.duration:g} s  RSS {rss[-1][1]:.0f} MB", highlight=False)

    start_rss = memory_mb()
    result = run_scenario(
        args.scenario,
        duration=args.duration,
        lockstep=True,
        progress=progress,
        wall_timeout=args.duration * 10 + 60,
        keep_series=False,  # counters only: memory growth then belongs to the nodes
        processes=args.processes,
    )
    end_rss = resident(result)  # the node processes: as last seen before they were stopped
    if args.processes:
        start_rss = rss[0][1] if rss else end_rss
    rec = result.recording
    # Memory after the first minute of simulated time vs the end: start-up caches are excluded.
    settle_time = min(60.0, args.duration / 4)
    settled = [m for t, m in rss if t >= settle_time] or [start_rss]
    summary = {
        "scenario": result.scenario,
        "layout": "processes" if args.processes else "one process",
        "sim_time_s": result.sim_time,
        "wall_time_s": result.wall_time,
        "rss_start_mb": start_rss,
        "rss_settled_mb": settled[0],
        "rss_end_mb": end_rss,
        "rss_growth_after_settling_mb": end_rss - settled[0],
        "states": rec.states,
        "commands": rec.commands,
        "dropped_control_cycles": max(rec.states - rec.commands, 0),
        "nonfinite_commands": rec.nonfinite_commands,
        "identifier_dropped_samples": result.identifier_summary["dropped_samples"],
        "gate_open_at_end": result.identifier_summary["gate_open"],
        "rss_samples": rss,
    }
    if args.processes:
        summary["rss_per_node_mb"] = {
            node: {"settled": next((m for t, m in samples if t >= settle_time), samples[0][1]), "end": samples[-1][1]}
            for node, samples in per_node.items()
        }
        summary["processes"] = getattr(result, "processes", [])
    console.print({k: v for k, v in summary.items() if k not in ("rss_samples", "processes")})
    write_json(args.json, summary)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``soak`` to the command line."""
    p = sub.add_parser("soak", help="long scenario run over DDS: memory, dropped cycles, non-finite commands")
    p.add_argument("--scenario", default="valkyrie_arm", help="scenario (default valkyrie_arm)")
    p.add_argument("--duration", type=arguments.POSITIVE, default=600.0, help="simulated seconds (default 600)")
    p.add_argument("--processes", action="store_true", help="each node in its own process (memory summed over them)")
    p.add_argument("--json", help="write the figures to this JSON file")
    p.set_defaults(func=cmd_soak)
