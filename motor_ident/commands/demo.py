"""``motor-ident demo`` and ``motor-ident run``: a scenario's nodes over DDS, in one process or one each.

``demo`` is the README's main job: the simulated Valkyrie-like arm, an identifier that starts
from a deliberately wrong nominal model (30 % heavier bodies, no friction), and computed-torque
feedforward tracking an exciting trajectory. It shows live progress, then writes the JSON
summary and plots (torque measured vs predicted, R^2 over time, tracking error before and after
the gate opens). With ``--processes`` every node runs as its own process, started through its
entry point as ``ros2 launch`` starts it (logs in ``<out-dir>/logs``).

The demo's robot is simulated by MuJoCo (``--engine mujoco``, `motor_ident.sim.mujoco_plant`):
an engine that shares no dynamics code with the estimator and has effects the estimator does not
model (sticking dry friction, quadratic friction, a command delay, encoder quantisation), so
what the demo shows is not the estimator recovering its own model. ``--engine pinocchio`` runs
the exact plant instead. A scenario MuJoCo cannot simulate (PWM motor chains, directional
friction) runs on its own engine, and the demo says why.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from motor_ident.commands import arguments
from motor_ident.commands.common import write_json
from motor_ident.commands.monitor import add_monitor_arguments, monitor_overrides
from motor_ident.sim.lockstep import LockstepCounts
from motor_ident.sim.mujoco_config import ENGINES

DEMO_ENGINE = "mujoco"
"""Physics engine of ``motor-ident demo`` unless ``--engine`` says otherwise."""


def demo_engine(scenario: str) -> tuple[str, str | None]:
    """`DEMO_ENGINE`, or the scenario's engine (pinocchio) when MuJoCo cannot simulate its robot, with why."""
    from dataclasses import replace

    from motor_ident.io.robot_config import load_robot_config
    from motor_ident.scenario.loader import load_scenario
    from motor_ident.sim.mujoco_plant import mujoco_refusal

    sim = load_scenario(scenario).nodes["sim_robot"]
    refusal = mujoco_refusal(load_robot_config(sim.robot), replace(sim.plant, engine=DEMO_ENGINE))
    if refusal is None:
        return DEMO_ENGINE, None
    return (sim.plant.engine if sim.plant.engine != DEMO_ENGINE else "pinocchio"), refusal


def _run(args: argparse.Namespace, *, scenario: str, demo: bool) -> int:
    from rich.console import Console

    from motor_ident.io.demo_report import plot_run, summarize
    from motor_ident.ros.runtime.processes import ProcessRunResult
    from motor_ident.ros.runtime.runner import run_scenario
    from motor_ident.scenario.loader import load_scenario

    console = Console()
    layout = "one process per node" if args.processes else "one process"
    chosen = args.engine
    if chosen is None and demo:
        chosen, refusal = demo_engine(scenario)
        if refusal is not None:
            console.print(f"[yellow]running on {chosen}, not {DEMO_ENGINE}[/yellow]: {refusal}", highlight=False)
    overrides = {"sim_robot": {"engine": chosen}} if chosen else {}
    overrides.update(monitor_overrides(args))
    engine = load_scenario(scenario, overrides).nodes["sim_robot"].plant.engine
    console.print(
        f"[bold]motor_ident[/bold]: scenario {scenario}, {args.duration:g} s simulated on {engine}, nodes over DDS "
        f"({layout})"
    )

    def progress(result) -> None:  # type: ignore[no-untyped-def]
        s = result.identifier_summary
        err = result.recording.tracking_error
        e = f"{float(abs(err[-1][1]).max()):.4f} rad" if err else "-"
        r2 = ", ".join(f"{x:.3f}" for x in s["r2_uncentred_per_joint"]) if s["r2_uncentred_per_joint"] else "-"
        gate = "[green]OPEN[/green]" if s["gate_open"] else "[yellow]closed[/yellow]"
        line = f"t = {result.sim_time:6.2f} / {args.duration:g} s  gate {gate}  R2 [{r2}]  tracking error {e}"
        console.print(f"{line}  ({s['reason']})", highlight=False)

    out = Path(args.out_dir)
    result = run_scenario(
        scenario,
        duration=args.duration,
        lockstep=not args.real_time,
        progress=progress,
        processes=args.processes,
        log_dir=out / "logs",
        overrides=overrides or None,
    )
    summary = summarize(result)
    summary["engine"] = engine
    if result.sim_time < args.duration:
        console.print(
            f"[yellow]the run stopped at t = {result.sim_time:.2f} s of {args.duration:g} s[/yellow] "
            "(Ctrl-C, the wall time limit, or the simulated robot stopped publishing)"
        )
    if isinstance(result, ProcessRunResult):
        summary["processes"] = result.processes
        for p in result.processes:
            fine = p["returncode"] == 0 and p["stopped_with"] in ("SIGINT", "SIGTERM", "SIGHUP", "interrupted")
            ended = f"exit {p['returncode']} after {p['stopped_with'] or 'no signal'}"
            colour = "green" if fine else "red"
            memory = f"peak memory {p['peak_rss_mb']:.0f} MB"
            console.print(
                f"  {p['node']:<16} [{colour}]{ended}[/{colour}], {memory}, log {p['log']}",
                highlight=False,
            )
            if p["stopped_with"] == "SIGKILL":
                console.print(
                    "  [red]a node ignored SIGINT and SIGTERM[/red]: run `fastdds shm clean`", highlight=False
                )
    plots = plot_run(result, out)
    summary["plots"] = [str(p) for p in plots]
    console.print(f"simulated robot: {engine}; gate opened at: {summary['gate_opened_at_s']} s")
    r2 = summary["r2_per_joint"]
    console.print(f"R2 per joint at the end: {'-' if r2 is None else [round(float(v), 3) for v in r2]}")
    before, after = summary["tracking_rmse_nominal"], summary["tracking_rmse_identified"]
    if before and after:
        console.print(
            f"tracking RMSE: nominal model {before:.4f} rad -> identified model {after:.4f} rad "
            f"({100.0 * (1.0 - after / before):.0f} % lower)"
        )
    published, heard = summary["commands_published"], summary["commands_recorded"]
    heard_note = "" if heard == published else f" (the recorder received {heard})"
    console.print(f"commands published: {published}{heard_note}, non-finite: {summary['nonfinite_commands']}")
    for node, counts in summary["lockstep"].items():
        colour = "yellow" if counts["timeout_steps"] else "green"
        console.print(f"[{colour}]{node} lockstep[/{colour}]: {LockstepCounts(**counts).sentence()}", highlight=False)
    if summary["command_step_max_at_switch"] is not None:
        console.print(
            f"largest command step: {summary['command_step_max_at_switch']:.4f} N m while switching to the "
            f"identified model, {summary['command_step_max_tracking']:.4f} N m while tracking "
            f"(physically consistent: {summary['physically_consistent']})"
        )
    console.print(f"plots: {', '.join(summary['plots'])}")
    write_json(args.json or str(out / "summary.json"), summary)
    return 0


def _stopped(args: argparse.Namespace, *, scenario: str, demo: bool) -> int:
    """`_run`, and one line with exit code 128 + the signal's number when Ctrl-C (or, once node
    processes run, SIGTERM or SIGHUP) ends it before the run was under way or after it."""
    import signal
    import sys

    try:
        return _run(args, scenario=scenario, demo=demo)
    except KeyboardInterrupt as stop:  # a RunInterrupted: its nodes have been stopped
        signum = int(getattr(stop, "signum", signal.SIGINT))
        nodes = f"; every node process stopped (logs in {Path(args.out_dir) / 'logs'})" if args.processes else ""
        print(f"motor-ident {args.command}: stopped by {signal.Signals(signum).name}{nodes}", file=sys.stderr)
        return 128 + signum


def cmd_demo(args: argparse.Namespace) -> int:
    """Run the demo scenario."""
    return _stopped(args, scenario=args.scenario, demo=True)


def cmd_run(args: argparse.Namespace) -> int:
    """Run any scenario."""
    return _stopped(args, scenario=args.scenario, demo=False)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``demo`` and ``run`` to the command line."""
    for name, func, default, help_text in (
        ("demo", cmd_demo, "valkyrie_arm", "simulated robot + identifier + feedforward over DDS, with plots"),
        ("run", cmd_run, None, "run every node a scenario file names, over DDS (no ros2 launch needed)"),
    ):
        p = sub.add_parser(name, help=help_text)
        if default is None:
            p.add_argument("scenario", help="scenario name (config/scenarios/<name>.yaml) or parameter file")
        else:
            p.add_argument("--scenario", default=default, help=f"scenario (default {default})")
        p.add_argument("--duration", type=arguments.POSITIVE, default=20.0, help="simulated seconds (default 20)")
        engine_default = (
            f"{DEMO_ENGINE}, or the scenario's engine when {DEMO_ENGINE} cannot simulate its robot"
            if default is not None
            else "the scenario's sim_robot engine"
        )
        p.add_argument(
            "--engine",
            choices=ENGINES,
            help="physics of the simulated robot: pinocchio (the estimator's own model, exact) or mujoco "
            "(independent, with unmodelled effects); default: " + engine_default,
        )
        p.add_argument("--real-time", action="store_true", help="step the simulator in real time, not lockstep")
        p.add_argument(
            "--processes",
            action="store_true",
            help="each node in its own process, started through its entry point as ros2 launch does "
            "(logs in OUT_DIR/logs); default: all nodes in this process",
        )
        add_monitor_arguments(p)
        p.add_argument("--out-dir", default=f"out/{name}", help="where plots and summary.json go")
        p.add_argument("--json", help="also write the summary to this JSON file")
        p.set_defaults(func=func)
