"""``motor-ident base-params``: base parameters and identifiability of a robot config."""

from __future__ import annotations

import argparse

from motor_ident.commands.common import write_json


def cmd_base_params(args: argparse.Namespace) -> int:
    """List base parameters and identifiability classes of a robot config."""
    from motor_ident.core.estimation.identification import structural_base_parameters
    from motor_ident.io.robot_config import load_robot_config

    config = load_robot_config(args.robot)
    regressor = config.build_regressor()
    base = structural_base_parameters(regressor)
    friction_cols: set[int] = set()
    for s in (*regressor.layout.friction, *regressor.layout.motor_friction):
        friction_cols.update(range(s.start, s.stop))
    n_base_friction = int(sum(1 for j in base.independent if j in friction_cols))
    print(f"robot {config.name}: {regressor.robot.n} joints, {regressor.n_parameters} full parameters")
    print(base.listing())
    write_json(
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


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``base-params`` to the command line."""
    p = sub.add_parser("base-params", help="base parameters and identifiability of a robot")
    p.add_argument("--robot", required=True, help="robot config name or YAML path")
    p.add_argument("--json", help="write the listing to this JSON file")
    p.set_defaults(func=cmd_base_params)
