"""``motor-ident identify``: offline identification from a recorded CSV / NPZ file or rosbag2 bag."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from motor_ident.commands import arguments
from motor_ident.commands.common import Stages, floats, write_json
from motor_ident.commands.data_options import add_data_arguments, add_robot_argument, is_bag, print_wrapped
from motor_ident.commands.option_checks import refuse_idle_preparation
from motor_ident.commands.torque_options import (
    add_torque_arguments,
    apply_torque_source,
    configured_gains,
    data_label,
    payload_reader,
    read_recording,
)
from motor_ident.commands.validate import add_validate_on_arguments, add_verdict_arguments

# Above this many samples the fitting stage reports its fraction done (a bar on a terminal).
PROGRESS_SAMPLES = 20000


def _size(path: str | Path) -> int:
    """Bytes of a file or of every file under a directory (0 when missing)."""
    path = Path(path)
    if path.is_dir():
        return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    return path.stat().st_size if path.exists() else 0


def online_replay(
    scenario: str,
    joints: tuple[str, ...],
    t: np.ndarray,
    q: np.ndarray,
    qd: np.ndarray,
    tau: np.ndarray,
    *,
    config: Any = None,
) -> dict[str, Any]:
    """Run the identifier node's estimator and gate (settings of ``scenario``) over a record.

    The same `OnlineIdentifier` the node wraps, built from the scenario's identifier settings
    (the identifier's defaults when ``scenario`` is empty) by `build_identifier`, for the robot
    ``config`` (a `RobotConfig`; else the robot the settings name), fed sample by sample: what
    the node would have done on this recording. No simulated plant is built.

    The sample counts come from the settings' times and the record's own rate, measured from its
    stamps as the node measures its stream's.

    Returns:
        ``gate`` [(t, open)] at every change, ``r2_t`` (M,) and ``r2`` (M, n) at every refit (the
        gate's R^2 definition), ``gate_opened_at_s``, the final ``reason``, ``fit``, ``counts``
        (`WindowCounts`, None for a record too short to measure its rate) and ``too_short`` (a
        plain sentence when the record cannot fill the window, else '').

    Raises:
        ConfigError: the scenario is invalid, or its identifier's robot has other joints than the record.
    """
    from motor_ident.errors import ConfigError
    from motor_ident.scenario.build import build_identifier
    from motor_ident.scenario.loader import load_scenario
    from motor_ident.scenario.nodes import IdentifierSettings

    settings = load_scenario(scenario).nodes["identifier"] if scenario else IdentifierSettings()
    core = build_identifier(settings, config)
    if tuple(core.regressor.robot.joint_names) != tuple(joints):
        raise ConfigError(
            f"--online {scenario}: its robot has joints {list(core.regressor.robot.joint_names)}, "
            f"the data {list(joints)}"
        )
    definition = core.config.gate.r2_definition
    gate: list[tuple[float, bool]] = [(float(t[0]), False)]
    r2_t: list[float] = []
    r2: list[np.ndarray] = []
    last = None
    for k in range(t.size):
        core.add_sample(t[k], q[k], qd[k], tau[k])
        if core.fit is not None and core.fit is not last:
            last = core.fit
            r2_t.append(float(t[k]))
            r2.append(core.fit.r2_of(definition))
        if core.gate_open != gate[-1][1]:
            gate.append((float(t[k]), core.gate_open))
    counts, span = core.counts, float(t[-1] - t[0]) if t.size else 0.0
    too_short = ""
    if counts is None:
        too_short = f"the record has {t.size} samples: the online identifier needs more to measure its rate"
    elif not core.window.full:
        need = counts.window * counts.decimation / counts.input_rate_hz
        too_short = (
            f"the record is too short for the online identifier's window: it spans {span:.3g} s, the window needs "
            f"{need:.3g} s of it ({counts.describe()}); lower window_duration (identifier: {{ros__parameters: "
            f"{{window_duration: ...}}}} in the --online scenario) or record longer"
        )
    return {
        "gate": gate,
        "r2_t": np.array(r2_t),
        "r2": np.array(r2).reshape(len(r2_t), len(joints)),
        "gate_opened_at_s": next((tg for tg, is_open in gate if is_open), None),
        "reason": core.gate.reason,
        "fit": core.fit,
        "counts": counts,
        "too_short": too_short,
    }


def report_directory(args: argparse.Namespace) -> Path | None:
    """Where the HTML report goes: ``--report``, else beside ``--out`` / ``--json``, else nowhere."""
    if args.no_report:
        return None
    if args.report:
        return Path(args.report)
    for given in (args.out, args.json):
        if given:
            path = Path(given)
            return path.with_name(f"{path.stem}_report")
    return None


def cmd_identify(args: argparse.Namespace) -> int:
    """Identify parameters from a recorded CSV / NPZ file or a rosbag2 bag."""
    from motor_ident.commands.data_options import load_robot, load_spec_arg, preparation, spec_defaults
    from motor_ident.core.estimation.identification import identify
    from motor_ident.io.params import ParameterSet, save_parameters
    from motor_ident.io.preprocess import prepare_record

    if args.floating_base:
        from motor_ident.commands.floating_base import cmd_identify_floating

        return cmd_identify_floating(args)
    config = load_robot(args.robot)
    spec = load_spec_arg(args)
    spec_defaults(args, spec)
    config, gains = configured_gains(args, config)
    regressor = config.build_regressor()
    gate: list[tuple[float, bool]] | None = None
    r2: tuple[np.ndarray, np.ndarray] | None = None
    with Stages("identify") as stages:
        big = is_bag(args.data) and _size(args.data) > 150 * PROGRESS_SAMPLES  # bags report the fraction read
        recording = read_recording(
            args.data, args, config, spec, progress=stages.stage(f"reading {args.data}", measured=big)
        )
        refuse_idle_preparation(args, spec, recording.record, data_label(args.data, spec))
        notes, bag = recording.warnings, recording.bag
        if bag is not None and bag.gate is not None:
            gate = [(float(t), bool(v[0])) for t, v in zip(bag.gate.t, bag.gate.values)]
        if bag is not None and bag.r2 is not None and bag.r2.values.shape[1] == len(config.joints):
            r2 = (bag.r2.t, bag.r2.values)
        record, prepared = prepare_record(recording.record, preparation(args, spec), source=data_label(args.data, spec))
        if getattr(args, "payload_data", None) is not None:
            stages.stage(f"drive gains from {args.payload_data} and {args.data}", measured=False)
        torque = apply_torque_source(args, config, regressor, record, payload_reader(args, config, spec), gains=gains)
        record = torque.record
        assert record.qd is not None and record.qdd is not None
        online = None
        if args.online is not None:
            stages.stage("replaying the online identifier", measured=False)
            online = online_replay(
                args.online, tuple(config.joints), record.t, record.q, record.qd, record.tau, config=config
            )
            gate = online["gate"]
            r2 = (online["r2_t"], online["r2"])
        theta_nominal = config.nominal_parameters(regressor)
        fitting = stages.stage(f"fitting {record.t.size} samples", measured=record.t.size > PROGRESS_SAMPLES)
        result = identify(
            regressor,
            record.q,
            record.qd,
            record.qdd,
            record.tau,
            method=args.method,
            theta_nominal=theta_nominal,
            alpha=args.alpha,
            validate_fraction=args.validate or 0.0,
            progress=fitting if record.t.size > PROGRESS_SAMPLES else None,
            check_consistency=True,
        )
    consistency = result.consistency
    if consistency is not None and not consistency.consistent:
        notes += (
            f"the estimate is not physically consistent ({consistency.reason}); "
            "--method sdp or --method log_cholesky keeps every link physically valid",
        )
    notes += tuple(
        f"joint {name}: training R2 {r2_joint:.3g} < 0, the fit predicts its torque worse than the torque's mean: "
        "check the torque column (sign, scale, unit), the joint's motion, and the derivatives' window"
        for name, r2_joint in zip(config.joints, result.fit.r2)
        if r2_joint < 0.0
    )
    for note in prepared + torque.notes:
        print_wrapped("note", note)
    for note in notes:
        print_wrapped("warning", note)
    fit, base = result.fit, result.base
    print(f"robot {config.name}: {result.n_train} training samples, {result.n_heldout} held out, method {fit.method}")
    print(f"condition number {fit.condition_number:.4g}, {base.n_base} base parameters")
    if fit.noise_covariance is not None:
        std = np.sqrt(np.diag(fit.noise_covariance))
        correlation = fit.noise_covariance / np.outer(std, std)
        print("noise the gls weights use: std per joint [N m] " + " ".join(f"{x:.4g}" for x in std))
        print("  cross-joint correlation (largest |r|): " + f"{np.max(np.abs(correlation - np.eye(std.size))):.3f}")
    if consistency is not None:
        verdict = f"yes ({consistency.reason})" if consistency.consistent else "NO (see the warning above)"
        print(f"physically consistent: {verdict}")
    print(f"{'joint':<24}{'R2':>10}{'R2 uncentred':>14}{'NRMSE':>10}{'held-out R2':>13}")
    for j, name in enumerate(config.joints):
        held = f"{result.heldout.r2[j]:13.4f}" if result.heldout is not None else f"{'-':>13}"
        print(f"{name:<24}{fit.r2[j]:10.4f}{fit.r2_uncentred[j]:14.4f}{fit.nrmse[j]:10.4f}{held}")
    from motor_ident.core.estimation.covariance import ESTIMATOR

    print(f"base parameters (value +- std; std: {ESTIMATOR}):")
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
                        "covariance": [floats(row) for row in fit.covariance],
                    },
                    "metrics": {
                        "r2_per_joint": floats(fit.r2),
                        "condition_number": float(fit.condition_number),
                    },
                    **torque.parameter_extra,
                },
            ),
        )
        print(f"parameters written to {args.out}")
    report = report_directory(args)
    report_page = None
    if report is not None:
        from motor_ident.io.report import ReportInput, write_report

        report_page = write_report(
            report,
            ReportInput(
                title=f"Identification of {config.name}",
                source=str(args.data),
                robot=config.name,
                regressor=regressor,
                result=result,
                t=record.t,
                q=record.q,
                qd=record.qd,
                qdd=record.qdd,
                tau=record.tau,
                gate=gate,
                r2=r2,
                notes=prepared + torque.notes + notes,
            ),
        )
        print(f"report written to {report_page}")
    payload: dict[str, Any] = {
        "robot": config.name,
        "method": fit.method,
        "joints": list(config.joints),
        "r2_per_joint": floats(fit.r2),
        "r2_uncentred_per_joint": floats(fit.r2_uncentred),
        "nrmse_per_joint": floats(fit.nrmse),
        "condition_number": float(fit.condition_number),
        "noise_covariance": None if fit.noise_covariance is None else fit.noise_covariance.tolist(),
        "n_base_parameters": base.n_base,
        "physically_consistent": None if consistency is None else bool(consistency.consistent),
        "heldout_r2_per_joint": None if result.heldout is None else floats(result.heldout.r2),
        "heldout_nrmse_per_joint": None if result.heldout is None else floats(result.heldout.nrmse),
        "base_parameters": dict(zip(base.expressions(), floats(fit.theta))),
        "base_parameter_std": floats(fit.std),
        "n_samples": int(record.t.size),
        "notes": list(prepared + torque.notes),
        "warnings": list(notes),
        **torque.json,
        "report": None if report_page is None else str(report_page),
    }
    if online is not None:
        fit_online = online["fit"]
        payload["online"] = {
            "scenario": args.online,
            "gate_opened_at_s": online["gate_opened_at_s"],
            "gate_open_at_end": bool(online["gate"][-1][1]),
            "reason": online["reason"],
            "window": None if online["counts"] is None else online["counts"].describe(),
            "too_short": online["too_short"] or None,
            "r2_per_joint": None if fit_online is None else floats(online["r2"][-1]),
            "condition_number": None if fit_online is None else float(fit_online.condition_number),
        }
        opened = online["gate_opened_at_s"]
        print(
            f"online identifier ({args.online or 'default settings'}"
            f"{'' if online['counts'] is None else '; ' + online['counts'].describe()}): gate opened at "
            f"{'never' if opened is None else f'{opened - record.t[0]:.3f} s after the start'}; "
            f"at the end: {online['reason']}"
        )
        if online["too_short"]:
            print_wrapped("warning", online["too_short"])
    passed = True
    if args.validate_on:
        from motor_ident.commands.validate import validate_on_args, validate_recording

        payload["validation"] = validate_recording(
            config,
            regressor,
            result.theta,
            args.validate_on,
            validate_on_args(args),
            report=None if report is None else report / "validation",
            files={"identification_data": args.data},
            converter=torque.converter,
            primary=False,
        )
        passed = bool(payload["validation"]["passed"])
    if args.urdf_out:
        from motor_ident.commands.validate import write_nearest_urdf

        payload["urdf"] = write_nearest_urdf(args.urdf_out, config, regressor, base, fit.theta, fit.covariance)
    write_json(args.json, payload)
    return 0 if passed else 1


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``identify`` to the command line."""
    p = sub.add_parser(
        "identify",
        help="offline identification from recorded data (CSV / NPZ / rosbag2)",
        description="Identify the base parameters from a recording. Exit status 1 when --validate-on's "
        "verdict fails, 2 on bad input.",
    )
    p.add_argument("data", help="recorded data: .npz, .csv, or a rosbag2 bag (directory, .mcap or .db3)")
    add_robot_argument(p)
    p.add_argument(
        "--method",
        choices=["ols", "wls", "gls", "nominal", "sdp", "log_cholesky"],
        default="wls",
        help="estimator (default wls): wls weights each joint by its residual variance, gls by the full cross-joint "
        "residual covariance (Liu et al. 2023, eq. 21-22); sdp and log_cholesky keep every body physically valid",
    )
    p.add_argument(
        "--alpha",
        type=arguments.FRACTION,
        default=0.9,
        help="data weight of --method nominal (Kolathaya et al. 2016, eq. 105)",
    )
    p.add_argument(
        "--validate",
        type=arguments.real(low=0.0, high=1.0, open=(True, True)),
        metavar="FRACTION",
        help="hold out this final fraction of the samples, in (0, 1) (default: none)",
    )
    p.add_argument("--out", help="write identified parameters to this YAML file")
    p.add_argument("--json", help="write the fit summary to this JSON file")
    p.add_argument(
        "--report",
        metavar="DIR",
        help="write the HTML report (index.html + PNGs) here (default: <out>_report/ beside --out or --json)",
    )
    p.add_argument("--no-report", action="store_true", help="write no HTML report")
    p.add_argument(
        "--online",
        metavar="SCENARIO",
        nargs="?",
        const="",
        help="also run the identifier node's sliding window and gate over the data, for the --robot robot: "
        "gate timeline and R2 over time in the report and JSON. The identifier's settings come from SCENARIO "
        "(a scenario file; it may name only the identifier's settings), or are the defaults without a value",
    )
    add_data_arguments(p)
    add_torque_arguments(p)
    add_validate_on_arguments(p)
    add_verdict_arguments(p)
    p.add_argument(
        "--urdf-out",
        metavar="FILE",
        help="write a copy of the URDF whose links are the physically consistent set nearest to the URDF's "
        "(log-det divergence of the pseudo-inertias) that reproduces the identified base parameters; "
        "prints each link's mass nominal -> exported; checked by reloading it",
    )
    p.add_argument(
        "--floating-base",
        action="store_true",
        help="a robot standing on its feet (robot YAML with a floating_base section): DATA is a floating-base NPZ "
        "(joint encoders, base IMU, a 6-axis wrench per foot; motor_ident/io/floating_record.py); identifies from "
        "the contact wrenches (docs/floating-base.md)",
    )
    p.add_argument(
        "--rows",
        choices=["base", "all"],
        default="base",
        help="--floating-base: the 6 base rows (contact wrenches only; default) or all rows (joint torques too)",
    )
    p.add_argument(
        "--imu-tilt",
        choices=("estimate", "trust"),
        default="estimate",
        help="--floating-base: estimate a constant tilt of the base orientation the IMU gives jointly with the "
        "parameters, its uncertainty in the mass's and CoM's (default), or trust the IMU's orientation",
    )
    p.add_argument(
        "--imu-topic", default="/imu/data", help="--floating-base bags: the base IMU's sensor_msgs/Imu topic"
    )
    p.add_argument(
        "--foot-wrench-topic",
        action="append",
        default=[],
        metavar="CONTACT=TOPIC",
        help="--floating-base bags: a contact's geometry_msgs/WrenchStamped topic (default /<contact>/wrench)",
    )
    p.set_defaults(func=cmd_identify)
