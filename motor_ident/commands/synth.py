"""``motor-ident synth``: a synthetic excitation record from a robot's nominal model."""

from __future__ import annotations

import argparse

from motor_ident.commands import arguments


def cmd_synth(args: argparse.Namespace) -> int:
    """Write a synthetic excitation record of a robot (true parameters = its nominal model)."""
    if args.floating_base:
        from motor_ident.commands.floating_base import cmd_synth_floating

        return cmd_synth_floating(args)
    import numpy as np

    from motor_ident.commands.common import floats, write_json
    from motor_ident.core.actuators.torque_sources import configured_side_gains
    from motor_ident.io.data import save_record
    from motor_ident.io.robot_config import load_robot_config
    from motor_ident.sim.synthetic import source_record

    config = load_robot_config(args.robot)
    made = source_record(
        config,
        args.torque_source,
        payload_mass=args.payload_mass,
        payload_frame=args.payload_frame,
        duration=args.duration,
        rate_hz=args.rate or 200.0,
        noise_std=args.noise,
        seed=args.seed,
    )
    record = made.record
    save_record(args.out, record)
    kind = args.torque_source or config.torque_source.kind
    transmission = config.build_transmission()

    def gains(values: np.ndarray | None) -> list[float] | None:  # on the config's side, as identify reports them
        return None if values is None else floats(configured_side_gains(values, config.torque_source, transmission))

    payload = f" with a {args.payload_mass:g} kg payload" if args.payload_mass > 0.0 else ""
    print(f"{record.t.size} samples of {config.name}{payload} measured as {kind} written to {args.out}")
    write_json(
        args.json,
        {
            "robot": config.name,
            "out": str(args.out),
            "torque_source": kind,
            "n_samples": int(record.t.size),
            "seed": args.seed,
            "payload_mass": args.payload_mass,
            "payload_frame": args.payload_frame,
            "joints": list(config.joints),
            "motors": list(transmission.motors),
            "true_drive_gains": gains(made.true_drive_gains),
            "nominal_drive_gains": gains(made.nominal_drive_gains),
            "drive_gain_side": config.torque_source.gain_side,
        },
    )
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``synth`` to the command line."""
    p = sub.add_parser("synth", help="write a synthetic excitation record from a robot's nominal model")
    p.add_argument("--robot", required=True, help="robot config name or YAML path")
    p.add_argument(
        "--out", required=True, help="output file (.npz or .csv); with --floating-base also a bag directory (no suffix)"
    )
    p.add_argument("--duration", type=arguments.POSITIVE, default=30.0, help="seconds (default 30)")
    p.add_argument(
        "--rate",
        type=arguments.POSITIVE,
        default=None,
        help="sample rate in Hz (default 200; 1000 with --floating-base)",
    )
    p.add_argument(
        "--noise", type=arguments.NON_NEGATIVE, default=0.05, help="joint torque noise std in N m (default 0.05)"
    )
    p.add_argument("--seed", type=arguments.SEED, default=0, help="random seed (trajectory and true drive gains)")
    p.add_argument(
        "--torque-source",
        default=None,
        metavar="joint_effort|motor_current|motor_pwm|ft_sensor",
        help="what the record measures (default: the robot config's torque_source): joint torques, motor "
        "currents (made with true drive gains a few %% off the config's), PWM duty cycles, or an F/T wrench",
    )
    p.add_argument(
        "--payload-mass",
        type=arguments.NON_NEGATIVE,
        default=0.0,
        metavar="KG",
        help="add a point payload of this mass [kg]",
    )
    p.add_argument(
        "--payload-frame",
        default="",
        metavar="FRAME",
        help="URDF frame the payload sits at (default: the last joint's frame)",
    )
    p.add_argument("--json", help="write a summary (true_drive_gains, ...) to this JSON file")
    p.add_argument(
        "--floating-base",
        action="store_true",
        help="the robot standing on its feet, simulated by MuJoCo or --plant rigid (robot YAML with a floating_base "
        "section): link "
        "masses perturbed 10-30 %%, balancing motion, F/T wrenches at the feet and an IMU at 1 kHz "
        "(--noise and the payload options do not apply)",
    )
    p.add_argument(
        "--plant",
        default="mujoco",
        metavar="mujoco|rigid",
        help="--floating-base: the simulator (HumanoidSimConfig.plant): mujoco (default; joint servos, soles welded) "
        "or rigid (pinocchio alone, both soles fixed exactly, the motion prescribed; double support only)",
    )
    p.add_argument(
        "--mass-seed",
        type=arguments.SEED,
        default=0,
        help="--floating-base: seed of the true masses (the same robot for every --seed)",
    )
    p.add_argument(
        "--single-support",
        type=arguments.NON_NEGATIVE_INT,  # the simulator's settings bound it above (HumanoidSimConfig)
        default=0,
        metavar="N",
        help="--floating-base: N single-support phases, alternating feet (each 5 s: CoM over one sole, the other "
        "foot lifted, moved and put down; default 0: both feet on the ground throughout)",
    )
    p.set_defaults(func=cmd_synth)
