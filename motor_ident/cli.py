"""The ``motor-ident`` command: thin over core, sim and io.

Every subcommand with ``--json FILE`` writes the keys listed in the project's design brief, so
scripts can rely on them. Errors of motor_ident print one line saying what to fix and exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from motor_ident.errors import MotorIdentError


def _write_json(path: str | None, payload: dict[str, Any]) -> None:
    if not path:
        return
    from motor_ident.io.data import atomic_write

    text = json.dumps(payload, indent=2, allow_nan=True)
    atomic_write(Path(path), lambda tmp: tmp.write_text(text + "\n"))


def _floats(x: Any) -> list[float]:
    return [float(v) for v in np.asarray(x, dtype=float).ravel()]


def cmd_base_params(args: argparse.Namespace) -> int:
    """List base parameters and identifiability classes of a robot config."""
    from motor_ident.core.identification import structural_base_parameters
    from motor_ident.io.robot_config import load_robot_config

    config = load_robot_config(args.robot)
    regressor = config.build_regressor()
    base = structural_base_parameters(regressor)
    friction_cols = set()
    for s in regressor.layout.friction:
        friction_cols.update(range(s.start, s.stop))
    n_base_friction = int(sum(1 for j in base.independent if j in friction_cols))
    print(f"robot {config.name}: {regressor.robot.n} joints, {regressor.n_parameters} full parameters")
    print(base.listing())
    _write_json(
        args.json,
        {
            "robot": config.name,
            "n_full": regressor.n_parameters,
            "n_base_inertial": base.n_base - n_base_friction,
            "n_friction": n_base_friction,
            "n_total": base.n_base,
            "base_parameters": base.expressions(),
            "classes": dict(zip(base.names, base.classes())),
        },
    )
    return 0


def cmd_identify(args: argparse.Namespace) -> int:
    """Identify parameters from a recorded CSV / NPZ file."""
    from motor_ident.core.identification import identify
    from motor_ident.io.data import load_record
    from motor_ident.io.params import ParameterSet, save_parameters
    from motor_ident.io.robot_config import load_robot_config

    config = load_robot_config(args.robot)
    regressor = config.build_regressor()
    record = load_record(args.data).select(config.joints).with_derivatives()
    assert record.qd is not None and record.qdd is not None
    theta_nominal = config.nominal_parameters(regressor)
    result = identify(
        regressor,
        record.q,
        record.qd,
        record.qdd,
        record.tau,
        method=args.method,
        theta_nominal=theta_nominal,
        alpha=args.alpha,
        validate_fraction=args.validate,
    )
    fit, base = result.fit, result.base
    print(f"robot {config.name}: {result.n_train} training samples, {result.n_heldout} held out, method {fit.method}")
    print(f"condition number {fit.condition_number:.4g}, {base.n_base} base parameters")
    print(f"{'joint':<24}{'R2':>10}{'R2 uncentred':>14}{'NRMSE':>10}{'held-out R2':>13}")
    for j, name in enumerate(config.joints):
        held = f"{result.heldout.r2[j]:13.4f}" if result.heldout is not None else f"{'-':>13}"
        print(f"{name:<24}{fit.r2[j]:10.4f}{fit.r2_uncentred[j]:14.4f}{fit.nrmse[j]:10.4f}{held}")
    print("base parameters (value +- std):")
    for expr, value, std in zip(base.expressions(), fit.theta, fit.std):
        print(f"  {value:12.5g} +- {std:<10.3g} {expr}")
    if args.out:
        std_full = np.full(regressor.n_parameters, np.nan)
        std_full[base.independent] = np.where(np.any(base.B, axis=1), np.nan, fit.std)
        save_parameters(
            args.out,
            ParameterSet(
                names=regressor.names,
                values=result.theta,
                std=std_full,
                robot=config.name,
                method=fit.method,
                extra={
                    "base_parameters": {
                        "expressions": base.expressions(),
                        "values": _floats(fit.theta),
                        "std": _floats(fit.std),
                    },
                    "metrics": {
                        "r2_per_joint": _floats(fit.r2),
                        "condition_number": float(fit.condition_number),
                    },
                },
            ),
        )
        print(f"parameters written to {args.out}")
    _write_json(
        args.json,
        {
            "robot": config.name,
            "method": fit.method,
            "joints": list(config.joints),
            "r2_per_joint": _floats(fit.r2),
            "r2_uncentred_per_joint": _floats(fit.r2_uncentred),
            "nrmse_per_joint": _floats(fit.nrmse),
            "condition_number": float(fit.condition_number),
            "n_base_parameters": base.n_base,
            "heldout_r2_per_joint": None if result.heldout is None else _floats(result.heldout.r2),
            "base_parameters": dict(zip(base.expressions(), _floats(fit.theta))),
            "base_parameter_std": _floats(fit.std),
        },
    )
    return 0


def cmd_synth(args: argparse.Namespace) -> int:
    """Write a synthetic excitation record of a robot (true parameters = its nominal model)."""
    from motor_ident.io.data import save_record
    from motor_ident.io.robot_config import load_robot_config
    from motor_ident.sim.synthetic import excitation_record

    config = load_robot_config(args.robot)
    regressor = config.build_regressor()
    record, _ = excitation_record(
        regressor,
        config.nominal_parameters(regressor),
        duration=args.duration,
        rate_hz=args.rate,
        noise_std=args.noise,
        seed=args.seed,
    )
    save_record(args.out, record)
    print(f"{record.t.size} samples of {config.name} written to {args.out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``motor-ident``."""
    parser = argparse.ArgumentParser(prog="motor-ident", description="Identify joint and actuator dynamics.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("identify", help="offline identification from recorded data (CSV / NPZ)")
    p.add_argument("data", help="recorded data file (.npz or .csv)")
    p.add_argument("--robot", required=True, help="robot config name (e.g. valkyrie_arm) or YAML path")
    p.add_argument("--method", choices=["ols", "wls", "nominal"], default="wls", help="estimator (default wls)")
    p.add_argument("--alpha", type=float, default=0.9, help="data weight of --method nominal (seed 001 eq. 105)")
    p.add_argument("--validate", type=float, default=0.0, metavar="FRACTION", help="hold out this final fraction")
    p.add_argument("--out", help="write identified parameters to this YAML file")
    p.add_argument("--json", help="write the fit summary to this JSON file")
    p.set_defaults(func=cmd_identify)

    p = sub.add_parser("base-params", help="base parameters and identifiability of a robot")
    p.add_argument("--robot", required=True, help="robot config name or YAML path")
    p.add_argument("--json", help="write the listing to this JSON file")
    p.set_defaults(func=cmd_base_params)

    p = sub.add_parser("synth", help="write a synthetic excitation record from a robot's nominal model")
    p.add_argument("--robot", required=True, help="robot config name or YAML path")
    p.add_argument("--out", required=True, help="output file (.npz or .csv)")
    p.add_argument("--duration", type=float, default=30.0, help="seconds (default 30)")
    p.add_argument("--rate", type=float, default=200.0, help="sample rate in Hz (default 200)")
    p.add_argument("--noise", type=float, default=0.05, help="torque noise std in N m (default 0.05)")
    p.add_argument("--seed", type=int, default=0, help="random seed")
    p.set_defaults(func=cmd_synth)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``motor-ident``."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except MotorIdentError as exc:
        print(f"motor-ident {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
