"""``motor-ident synth``: a synthetic excitation record from a robot's nominal model."""

from __future__ import annotations

import argparse


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


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``synth`` to the command line."""
    p = sub.add_parser("synth", help="write a synthetic excitation record from a robot's nominal model")
    p.add_argument("--robot", required=True, help="robot config name or YAML path")
    p.add_argument("--out", required=True, help="output file (.npz or .csv)")
    p.add_argument("--duration", type=float, default=30.0, help="seconds (default 30)")
    p.add_argument("--rate", type=float, default=200.0, help="sample rate in Hz (default 200)")
    p.add_argument("--noise", type=float, default=0.05, help="torque noise std in N m (default 0.05)")
    p.add_argument("--seed", type=int, default=0, help="random seed")
    p.set_defaults(func=cmd_synth)
