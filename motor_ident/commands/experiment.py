"""``motor-ident experiment {friction,pwm}``: Guedelha et al.'s two identification phases on one motor chain.

Online on the simulated robot (the scenario's robot config; the group's other motors braked, an
external actuator back-driving the joints) or offline on a recorded CSV / NPZ (``--data``)::

    motor-ident experiment friction --scenario icub_torso --motor 2 --json friction.json --save rec.npz
    motor-ident experiment pwm --scenario icub_torso --motor 2 --friction friction.json
    motor-ident experiment friction --scenario icub_torso --motor m_0B3M1 --data rec.npz

Record layout (`motor_ident.io.data.JointRecord`, CSV columns or NPZ arrays): for each joint of the
motor's group ``q.<joint>``, ``qd.<joint>``, ``qdd.<joint>`` and ``tau.<joint>`` (measured joint
torque); for each motor of the group ``q.motor:<motor>``, ``qd.motor:<motor>``, ``qdd.motor:<motor>`` at
the gearbox output (motor encoder divided by the gear ratio) and ``tau.motor:<motor>`` = the applied PWM duty
(fraction, 1 = 100 %), as the ``effort`` of ``motor_states`` carries the drive command. Missing
``qd`` / ``qdd`` are differentiated from ``q``.

The friction phase needs PWM = 0 and motion in both directions; the pwm phase needs the friction
of the friction phase (``--friction`` its JSON; in simulation the friction phase is run first when
it is not given). The moving motor's column of T is measured from the motion (only that motor
moves), so errors in the configured coupling ratios do not enter; ``--nominal-coupling`` uses the
config's T instead.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from motor_ident.commands import arguments
from motor_ident.commands.common import floats, write_json

MOTOR_PREFIX = "motor:"  # record column name of a motor: an uncoupled joint's motor shares the joint's name


def _motor_name(motors: tuple[str, ...], motor: str) -> str:
    """A motor given by name or by 0-based index into ``motors``."""
    from motor_ident.errors import ConfigError

    if motor in motors:
        return motor
    try:
        index = int(motor)
    except ValueError:
        index = -1
    if not 0 <= index < len(motors):
        raise ConfigError(f"--motor {motor}: expected a motor name or an index 0..{len(motors) - 1} of {list(motors)}")
    return motors[index]


def _to_joint_record(record: Any, transmission: Any) -> Any:
    """An `ActuatorRecord` of one group as a `JointRecord` (joints, then motors; see the module docstring)."""
    from motor_ident.core.actuators.transmission import build_transmission
    from motor_ident.io.data import JointRecord

    group = transmission.group_of(record.motors[0])
    tr = build_transmission(group.joints, [group]) if group.n > 1 else build_transmission(group.joints)
    q_motor = tr.motor_position(record.q_joint)
    return JointRecord(
        t=record.t,
        joint_names=record.joints + tuple(MOTOR_PREFIX + m for m in record.motors),
        q=np.hstack([record.q_joint, q_motor]),
        qd=np.hstack([record.qd_joint, record.qd_motor]),
        qdd=np.hstack([record.qdd_joint, record.qdd_motor]),
        tau=np.hstack([record.tau_joint, record.pwm]),
    )


def _chain_signals(data: Any, group: Any, motor: str, nominal: bool) -> dict[str, Any]:
    """Chain velocity, acceleration, torque and PWM of ``motor`` from a `JointRecord` of its group."""
    from motor_ident.core.actuators.actuator_ident import chain_torque, coupling_column

    data = data.select(group.joints + (MOTOR_PREFIX + motor,)).with_derivatives()
    n = group.n
    qd_motor, qdd_motor, pwm = data.qd[:, n], data.qdd[:, n], data.tau[:, n]
    c = group.motors.index(motor)
    column = group.T[:, c] if nominal else coupling_column(data.qd[:, :n], qd_motor)
    return {
        "qd": qd_motor,
        "qdd": qdd_motor,
        "pwm": pwm,
        "tau": chain_torque(data.tau[:, :n], column),
        "column": column,
        "n_samples": int(data.t.size),
    }


def _fit_json(fit: Any) -> dict[str, Any]:
    return {
        "names": list(fit.shape.names),
        "values": floats(fit.theta),
        "condition_number": fit.condition_number,
        "rmse": fit.rmse,
        "n_samples": fit.n_samples,
    }


def _friction_from_json(path: str, shape: Any) -> Any:
    """The Stribeck fit saved by ``experiment friction --json``."""
    from motor_ident.core.actuators.actuator_ident import FrictionFit
    from motor_ident.errors import ConfigError

    try:
        saved = json.loads(Path(path).read_text())["friction"]["stribeck"]
        theta = np.array(saved["values"], dtype=float)
        with_offset = replace(shape, offset="offset" in saved["names"])
        if list(with_offset.names) != saved["names"] or not np.all(np.isfinite(theta)):
            raise ValueError(f"parameters {saved['names']}, expected {list(with_offset.names)}")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"--friction {path}: expected the JSON of 'motor-ident experiment friction': {exc}") from None
    return FrictionFit(shape=with_offset, theta=theta, condition_number=float("nan"), rmse=float("nan"), n_samples=0)


def cmd_experiment(args: argparse.Namespace) -> int:
    """Run one phase on one motor (simulated, or from ``--data``), print and save the identified values."""
    from motor_ident.core.actuators.actuator_ident import identify_motor_gain
    from motor_ident.io.data import load_record, save_record
    from motor_ident.io.robot_config import load_robot_config
    from motor_ident.papers.guedelha.coupled import run_motor_experiment
    from motor_ident.papers.guedelha.protocol import ProtocolConfig, fit_friction_phase
    from motor_ident.sim.actuator import ActuatorSimConfig, plant_from_config

    config = load_robot_config(args.scenario)
    transmission = config.build_transmission()
    motor = _motor_name(transmission.motors, args.motor)
    group = transmission.group_of(motor)
    c_all = transmission.motors.index(motor)
    drive = config.motor_drives()[c_all]
    reflected = float(transmission.reflected_inertia[c_all])
    shape = drive.friction
    protocol = ProtocolConfig(sim=ActuatorSimConfig(seed=args.seed))
    if args.duration is not None:
        protocol = replace(protocol, friction_duration=args.duration, pwm_duration=args.duration)
    plant = None if args.data else plant_from_config(config)

    def signals(phase: str) -> dict[str, Any]:
        if args.data:
            data = load_record(args.data)
        else:
            record = run_motor_experiment(plant, motor, phase=phase, protocol=protocol)  # type: ignore[arg-type]
            data = _to_joint_record(record, transmission)
            if args.save and phase == args.phase:
                save_record(args.save, data)
        return _chain_signals(data, group, motor, args.nominal_coupling)

    result: dict[str, Any] = {
        "phase": args.phase,
        "scenario": config.name,
        "motor": motor,
        "group": group.name,
        "source": str(args.data) if args.data else "simulation",
    }
    friction_fit = None
    if args.phase == "friction" or (args.friction is None and not args.data):
        s = signals("friction")
        phase1 = fit_friction_phase(
            s["qd"], s["tau"], s["qdd"], reflected_inertia=reflected, shape=shape, protocol=protocol
        )
        friction_fit = phase1.stribeck
        result["column"] = floats(s["column"])
        result["friction"] = {
            "coulomb_viscous": _fit_json(phase1.coulomb_viscous),
            "stribeck": _fit_json(phase1.stribeck),
            "stribeck_zero_slope": _fit_json(phase1.stribeck_zero_slope),
        }
        result["low_velocity_rmse"] = phase1.low_velocity_rmse
        result["sigma_s_pos"] = phase1.stribeck.value("static_pos")
        result["sigma_s_neg"] = phase1.stribeck.value("static_neg")
        result["k_v"] = phase1.stribeck.value("fv")
    if args.phase == "pwm":
        if friction_fit is None:
            if args.friction is None:
                from motor_ident.errors import ConfigError

                raise ConfigError("experiment pwm --data: give --friction FILE.json from 'experiment friction'")
            friction_fit = _friction_from_json(args.friction, shape)
        s = signals("pwm")
        fit = identify_motor_gain(
            s["pwm"],
            s["qd"],
            s["tau"],
            s["qdd"],
            reflected_inertia=reflected,
            friction=friction_fit,
            min_velocity=protocol.min_velocity,
        )
        result["column"] = floats(s["column"])
        result.update(k_pwm=fit.k_pwm, tau_0=fit.tau_0, condition_number=fit.condition_number, rmse=fit.rmse)
        result["n_samples"] = fit.n_samples
    if plant is not None and drive.motor is not None and drive.friction_values is not None:
        fc, fv, static_pos, static_neg = drive.friction_values
        truth = {"sigma_s_pos": static_pos, "sigma_s_neg": static_neg, "k_v": fv + drive.motor.back_emf}
        truth |= {"k_pwm": drive.motor.k_pwm, "tau_0": drive.motor.tau_0}
        result["truth"] = truth
        result["error_pct"] = {k: 100.0 * (result[k] / v - 1.0) for k, v in truth.items() if k in result and v != 0.0}
    _print(result)
    write_json(args.json, result)
    return 0


def _print(result: dict[str, Any]) -> None:
    print(
        f"{result['scenario']}: motor {result['motor']} (group {result['group']}), {result['phase']} phase, "
        f"data from {result['source']}"
    )
    print(f"  column of T used: {np.round(result['column'], 4).tolist()}")
    truth = result.get("truth", {})
    for key, unit in (
        ("sigma_s_pos", "N m"),
        ("sigma_s_neg", "N m"),
        ("k_v", "N m s/rad"),
        ("k_pwm", "N m"),
        ("tau_0", "N m"),
    ):
        if key in result:
            line = f"  {key:<12} {result[key]:10.4f} {unit}"
            if key in truth:
                line += f"   (simulator {truth[key]:.4f}, {result['error_pct'].get(key, 0.0):+.2f} %)"
            print(line)
    if "friction" in result:
        for name, fit in result["friction"].items():
            print(
                f"  {name:<20} cond(X'X) {fit['condition_number']:.3g}, residual near rest "
                f"{result['low_velocity_rmse'][name]:.4f} N m"
            )
    if "condition_number" in result:
        print(f"  phase 2 cond(X'X) {result['condition_number']:.3g}, residual {result['rmse']:.4f} N m")


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``experiment`` to the command line."""
    p = sub.add_parser("experiment", help="Guedelha et al.'s friction (PWM = 0) or PWM-gain phase on one motor")
    p.add_argument("phase", choices=["friction", "pwm"], help="which phase")
    p.add_argument("--scenario", required=True, help="robot config with motors (e.g. icub_torso) or YAML path")
    p.add_argument("--motor", required=True, help="motor name or 0-based index in the robot's motor order")
    p.add_argument("--data", help="identify from this recorded .npz / .csv instead of simulating")
    p.add_argument("--friction", help="pwm phase: friction JSON written by 'experiment friction --json'")
    p.add_argument("--nominal-coupling", action="store_true", help="use the config's T instead of measuring the column")
    p.add_argument(
        "--duration", type=arguments.POSITIVE, help="simulated experiment length [s] (default 30 friction, 15 pwm)"
    )
    p.add_argument("--seed", type=arguments.SEED, default=0, help="simulator noise seed (default 0)")
    p.add_argument("--save", help="write the simulated record to this .npz / .csv (for --data later)")
    p.add_argument("--json", help="write the identified values to this JSON file")
    p.set_defaults(func=cmd_experiment)
