"""``motor-ident excite``: an optimised Fourier excitation trajectory within the robot's limits."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

import numpy as np

from motor_ident.commands import arguments
from motor_ident.commands.common import floats, write_json


def plot_excitation(path: str, problem: Any, trajectory: Any, history: Any, title: str) -> None:
    """q, qd, qdd over one period with their limits, and the criterion per iteration, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from motor_ident.io.report import save_figure

    t = np.linspace(0.0, problem.period, 1000)
    q, qd, qdd = trajectory.evaluate(t)
    lim = problem.limits
    fig, axes = plt.subplots(4, 1, figsize=(9, 11))
    for ax, values, label, upper, lower in (
        (axes[0], q, "q [rad]", lim.position_upper, lim.position_lower),
        (axes[1], qd, "qd [rad/s]", lim.velocity, -lim.velocity),
        (axes[2], qdd, "qdd [rad/s^2]", lim.acceleration, -lim.acceleration),
    ):
        for j, name in enumerate(problem.regressor.robot.joint_names):
            (line,) = ax.plot(t, values[:, j], label=name)
            for bound in (upper[j], lower[j]):
                if np.isfinite(bound):
                    ax.axhline(bound, color=line.get_color(), linestyle="--", linewidth=0.8)
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    axes[0].legend(loc="upper right")
    axes[0].set_title(title)
    axes[2].set_xlabel("t [s]")
    for k, h in enumerate(history):
        axes[3].plot(np.arange(h.size), h, label=f"start {k}")
    axes[3].set_yscale("log" if all(np.all(h > 0) for h in history) else "linear")
    axes[3].set_xlabel("iteration")
    axes[3].set_ylabel(f"criterion {problem.config.criterion.value}")
    axes[3].grid(True, alpha=0.3)
    if len(history) <= 10:
        axes[3].legend(loc="upper right", fontsize="small")
    fig.tight_layout()
    save_figure(fig, path, dpi=110)


def cmd_excite(args: argparse.Namespace) -> int:
    """Optimise an excitation trajectory and write it as YAML (plus JSON and PNG on request)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from motor_ident.core.estimation.identification import structural_base_parameters
    from motor_ident.core.excitation.design import ExcitationConfig, ExcitationProblem
    from motor_ident.core.excitation.limits import limits_from_robot
    from motor_ident.core.excitation.optimise import baseline_trajectory, design_excitation
    from motor_ident.errors import ConfigError
    from motor_ident.io.robot_config import load_robot_config
    from motor_ident.io.trajectory import NamedTrajectory, save_trajectory

    config = load_robot_config(args.robot)
    regressor = config.build_regressor()
    robot = regressor.robot
    weights = None
    if args.noise_std is not None:
        if len(args.noise_std) != robot.n or not all(s > 0.0 for s in args.noise_std):
            raise ConfigError(f"--noise-std = {args.noise_std}: expected {robot.n} values > 0 (one per joint)")
        weights = tuple(1.0 / s for s in args.noise_std)
    for key, values in (("--acceleration-limit", args.acceleration_limit), ("--velocity-limit", args.velocity_limit)):
        if values is not None and len(values) not in (1, robot.n):
            raise ConfigError(f"{key} = {values}: expected 1 or {robot.n} values (one per joint)")
    limits = limits_from_robot(
        robot,
        acceleration=args.acceleration_limit if len(args.acceleration_limit) > 1 else args.acceleration_limit[0],
        position_margin=args.position_margin,
        velocity_fraction=args.velocity_fraction,
        torque_fraction=args.torque_fraction,
    )
    if args.velocity_limit is not None:  # e.g. what the motors behind a coupling can reach, below the URDF's
        limits = replace(limits, velocity=np.minimum(limits.velocity, args.velocity_limit))
    design = ExcitationConfig(
        criterion=args.criterion,
        harmonics=args.harmonics,
        base_frequency=args.base_frequency,
        samples=args.samples,
        starts=args.starts,
        seed=args.seed,
        max_iterations=args.max_iterations,
        joint_weights=weights,
        block_weights=tuple(args.block_weights),
        rigid_only=args.rigid_only,
        optimise_offset=args.optimise_offset,
        method=args.method,
    )
    problem = ExcitationProblem(
        regressor,
        structural_base_parameters(regressor),
        limits,
        design,
        theta_nominal=config.nominal_parameters(regressor),
    )
    console = Console(stderr=True)
    with Progress(
        TextColumn("[bold]excitation[/] {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    ) as bar:
        task = bar.add_task(f"{design.criterion.value}: starting", total=design.starts)

        def progress(done: int, best: float) -> None:
            bar.update(task, completed=done, description=f"{design.criterion.value}: best {best:.5g}")

        result = design_excitation(problem, progress=progress)
    baseline = baseline_trajectory(problem, np.random.default_rng(args.seed + 1))
    full_range = baseline_trajectory(problem, np.random.default_rng(args.seed + 1), fill_limits=True)
    ours, base_values, full_values = (problem.all_criteria(t) for t in (result.trajectory, baseline, full_range))
    violation = problem.violation(result.trajectory)
    print(
        f"robot {config.name}: {robot.n} joints, {problem.base.n_base} base parameters, "
        f"criterion {design.criterion.value}"
    )
    print(f"{'':34}{'optimised':>14}{'random':>14}{'random, full range':>20}")
    for key in ("cond", "frobenius", "block", "dopt", "condition_number", "condition_number_rigid"):
        print(f"{key:34}{ours[key]:14.5g}{base_values[key]:14.5g}{full_values[key]:20.5g}")
    print(
        f"largest limit excess: q {violation.position:.2g} rad, qd {violation.velocity:.2g} rad/s, "
        f"qdd {violation.acceleration:.2g} rad/s^2; rest-to-rest residual {violation.rest:.2g}"
    )
    metadata: dict[str, Any] = {
        "robot": config.name,
        "criterion": design.criterion.value,
        "criterion_value": float(result.criterion_value),
        "condition_number": float(result.condition_number),
        "seed": args.seed,
    }
    save_trajectory(args.out, NamedTrajectory(result.trajectory, tuple(config.joints), metadata))
    print(f"trajectory written to {args.out}")
    if args.plot:
        plot_excitation(
            args.plot,
            problem,
            result.trajectory,
            result.history,
            f"{config.name}: {design.criterion.value} = {result.criterion_value:.4g}, "
            f"condition number {result.condition_number:.4g}",
        )
        print(f"plot written to {args.plot}")
    write_json(
        args.json,
        {
            "robot": config.name,
            "joints": list(config.joints),
            "criterion": design.criterion.value,
            "criterion_value": float(result.criterion_value),
            "condition_number": float(result.condition_number),
            "baseline_condition_number": float(base_values["condition_number"]),
            "baseline_criterion_value": float(base_values[design.criterion.value]),
            "baseline_full_range_condition_number": float(full_values["condition_number"]),
            "baseline_full_range_criterion_value": float(full_values[design.criterion.value]),
            "criteria": ours,
            "baseline_criteria": base_values,
            "baseline_full_range_criteria": full_values,
            "start_values": floats(result.start_values),
            "best_start": result.best_start,
            "evaluations": result.evaluations,
            "history": floats(result.history[result.best_start]),
            "max_limit_excess": {
                "position": violation.position,
                "velocity": violation.velocity,
                "acceleration": violation.acceleration,
                "rest": violation.rest,
            },
            "trajectory": {
                "a": result.trajectory.a.tolist(),
                "b": result.trajectory.b.tolist(),
                "q0": floats(result.trajectory.q0),
                "base_frequency": result.trajectory.base_frequency,
            },
        },
    )
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``excite`` to the command line."""
    p = sub.add_parser("excite", help="optimised Fourier excitation trajectory within the robot's limits")
    p.add_argument("--robot", required=True, help="robot config name (e.g. szabo_3dof) or YAML path")
    p.add_argument(
        "--criterion", choices=["cond", "frobenius", "block", "dopt"], required=True, help="what to minimise"
    )
    p.add_argument("--harmonics", type=arguments.COUNT, default=5, help="harmonics per joint (default 5)")
    p.add_argument(
        "--base-frequency", type=arguments.POSITIVE, default=0.1, help="fundamental frequency [Hz] (default 0.1)"
    )
    p.add_argument("--starts", type=arguments.COUNT, default=4, help="random starts (default 4)")
    p.add_argument("--seed", type=arguments.SEED, default=0, help="seed of the random starts (default 0)")
    p.add_argument(
        "--samples", type=arguments.integer(low=2), default=100, help="criterion samples per period (default 100)"
    )
    p.add_argument("--max-iterations", type=arguments.COUNT, default=150, help="iterations per start (default 150)")
    p.add_argument(
        "--acceleration-limit",
        type=arguments.POSITIVE,
        nargs="+",
        default=[5.0],
        help="|qdd| bound, 1 or per joint [rad/s^2]",
    )
    p.add_argument(
        "--position-margin", type=arguments.NON_NEGATIVE, default=0.05, help="kept from position limits [rad]"
    )
    p.add_argument(
        "--velocity-fraction", type=arguments.FRACTION, default=1.0, help="fraction of the URDF velocity limit"
    )
    p.add_argument(
        "--velocity-limit",
        type=arguments.POSITIVE,
        nargs="+",
        help="|qd| bound, 1 or per joint [rad/s] (capped by the URDF's)",
    )
    p.add_argument(
        "--torque-fraction", type=arguments.FRACTION, help="bound |tau| (RNEA + friction) by this fraction of effort"
    )
    p.add_argument(
        "--noise-std", type=arguments.POSITIVE, nargs="+", help="torque noise std per joint [N m]: weights rows 1/sigma"
    )
    p.add_argument(
        "--block-weights", type=arguments.NON_NEGATIVE, nargs=3, default=[1.0, 1.0, 1.0], help="w_alpha w_beta w_gamma"
    )
    p.add_argument(
        "--rigid-only",
        action="store_true",
        help="cond / frobenius / dopt on the rigid-body columns only, friction columns dropped as block does "
        "(compare criteria on the same matrix: condition_number_rigid)",
    )
    p.add_argument("--optimise-offset", action="store_true", help="optimise q0 too (default: mid-range)")
    p.add_argument("--method", choices=["SLSQP", "trust-constr"], default="SLSQP", help="optimiser")
    p.add_argument("--out", required=True, help="trajectory YAML to write")
    p.add_argument("--json", help="write the summary to this JSON file")
    p.add_argument("--plot", help="write q, qd, qdd and the criterion history to this PNG")
    p.set_defaults(func=cmd_excite)
