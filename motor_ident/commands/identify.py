"""``motor-ident identify``: offline identification from a recorded CSV / NPZ file."""

from __future__ import annotations

import argparse

import numpy as np

from motor_ident.commands.common import floats, write_json


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
                        "values": floats(fit.theta),
                        "std": floats(fit.std),
                    },
                    "metrics": {
                        "r2_per_joint": floats(fit.r2),
                        "condition_number": float(fit.condition_number),
                    },
                },
            ),
        )
        print(f"parameters written to {args.out}")
    write_json(
        args.json,
        {
            "robot": config.name,
            "method": fit.method,
            "joints": list(config.joints),
            "r2_per_joint": floats(fit.r2),
            "r2_uncentred_per_joint": floats(fit.r2_uncentred),
            "nrmse_per_joint": floats(fit.nrmse),
            "condition_number": float(fit.condition_number),
            "n_base_parameters": base.n_base,
            "heldout_r2_per_joint": None if result.heldout is None else floats(result.heldout.r2),
            "base_parameters": dict(zip(base.expressions(), floats(fit.theta))),
            "base_parameter_std": floats(fit.std),
        },
    )
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``identify`` to the command line."""
    p = sub.add_parser("identify", help="offline identification from recorded data (CSV / NPZ)")
    p.add_argument("data", help="recorded data file (.npz or .csv)")
    p.add_argument("--robot", required=True, help="robot config name (e.g. valkyrie_arm) or YAML path")
    p.add_argument("--method", choices=["ols", "wls", "nominal"], default="wls", help="estimator (default wls)")
    p.add_argument("--alpha", type=float, default=0.9, help="data weight of --method nominal (seed 001 eq. 105)")
    p.add_argument("--validate", type=float, default=0.0, metavar="FRACTION", help="hold out this final fraction")
    p.add_argument("--out", help="write identified parameters to this YAML file")
    p.add_argument("--json", help="write the fit summary to this JSON file")
    p.set_defaults(func=cmd_identify)
