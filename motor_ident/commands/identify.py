"""``motor-ident identify``: offline identification from a recorded CSV / NPZ file or rosbag2 bag."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from motor_ident.commands import arguments
from motor_ident.commands.common import Stages, floats
from motor_ident.commands.data_options import add_data_arguments, add_robot_argument, is_bag, print_wrapped
from motor_ident.commands.online_replay import online_replay
from motor_ident.commands.option_checks import refuse_idle_preparation
from motor_ident.commands.options import IdentifyOptions
from motor_ident.commands.pipeline import EXIT_HELP
from motor_ident.commands.torque_options import (
    add_torque_arguments,
    apply_torque_source,
    configured_gains,
    data_label,
    payload_reader,
    read_recording,
)
from motor_ident.commands.validate import add_validate_on_arguments, add_verdict_arguments

if TYPE_CHECKING:  # commands import their work inside functions (motor-ident --help stays light)
    from motor_ident.commands.pipeline import Pipeline
    from motor_ident.commands.torque_options import TorqueOutcome
    from motor_ident.core.estimation.identification import Identification
    from motor_ident.core.rigid_body.regressor import Regressor
    from motor_ident.io.data import JointRecord
    from motor_ident.io.robot_config import RobotConfig

# Above this many samples the fitting stage reports its fraction done (a bar on a terminal).
PROGRESS_SAMPLES = 20000


def _size(path: str | Path) -> int:
    """Bytes of a file or of every file under a directory (0 when missing)."""
    path = Path(path)
    if path.is_dir():
        return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    return path.stat().st_size if path.exists() else 0


STAGES = ("read", "prepare", "fit", "parameters", "validate", "urdf", "report")
"""``identify``'s stages in order (`motor_ident.commands.pipeline`): the results exist after ``fit``."""


@dataclass(frozen=True)
class Prepared:
    """What the read and prepare stages hand to the fit."""

    config: RobotConfig
    regressor: Regressor
    record: JointRecord
    torque: TorqueOutcome
    notes: tuple[str, ...]
    warnings: tuple[str, ...]
    gate: list[tuple[float, bool]] | None
    r2: tuple[np.ndarray, np.ndarray] | None
    online: dict[str, Any] | None


def cmd_identify(args: argparse.Namespace) -> int:
    """Identify parameters from a recorded CSV / NPZ file or a rosbag2 bag."""
    if args.floating_base:
        from motor_ident.commands.floating_base import cmd_identify_floating

        return cmd_identify_floating(args)
    return run_identify(IdentifyOptions.from_namespace(args))


def run_identify(options: IdentifyOptions) -> int:
    """``identify``'s stages (`STAGES`), outputs checked first; the exit status of `motor_ident.commands.pipeline`."""
    from motor_ident.commands.pipeline import Pipeline, check_outputs
    from motor_ident.core.estimation.identification import identify

    recording, report = options.recording, options.report_directory()
    check_outputs(
        {"--out": options.out, "--json": options.json, "--urdf-out": options.urdf_out, "--report": report},
        {
            "DATA": options.data,
            "--robot": options.robot if Path(options.robot).exists() else None,
            "--spec": recording.spec,
            "--payload-data": recording.payload_data,
            "--gains": recording.gains,
            "--online": options.online,
            "--validate-on": options.validate_on,
            "--validate-spec": options.validate_spec,
        },
        directories=("--report",),
    )
    pipeline = Pipeline("identify", STAGES, json_path=options.json)
    with Stages("identify") as stages:
        prepared = _read_and_prepare(options, pipeline, stages)
        record = prepared.record
        assert record.qd is not None and record.qdd is not None
        with pipeline.stage("fit"):
            fitting = stages.stage(f"fitting {record.t.size} samples", measured=record.t.size > PROGRESS_SAMPLES)
            result = identify(
                prepared.regressor,
                record.q,
                record.qd,
                record.qdd,
                record.tau,
                method=options.method,
                theta_nominal=prepared.config.nominal_parameters(prepared.regressor),
                alpha=options.alpha,
                validate_fraction=options.validate or 0.0,
                progress=fitting if record.t.size > PROGRESS_SAMPLES else None,
                check_consistency=True,
            )
    warnings = prepared.warnings + _fit_warnings(tuple(prepared.config.joints), result)
    _print_fit(prepared, result, warnings)
    pipeline.results = _fit_payload(options, prepared, result, warnings)
    pipeline.keep()
    if options.out:
        with pipeline.stage("parameters"):
            _save_parameters(options.out, prepared, result)
    else:
        pipeline.skip("parameters")
    validation = None
    if options.validate_on:
        from motor_ident.commands.validate import validate_recording

        with pipeline.stage("validate"):
            validation = validate_recording(
                prepared.config,
                prepared.regressor,
                result.theta,
                options.validate_on,
                options.validation_recording(),
                max_rre=options.max_rre,
                min_r2=options.min_r2,
                files={"identification_data": options.data},
                converter=prepared.torque.converter,
                primary=False,
            )
            pipeline.results["validation"] = validation.payload
    else:
        pipeline.skip("validate")
    if options.urdf_out:
        from motor_ident.commands.validate import write_nearest_urdf

        with pipeline.stage("urdf"):
            fit, base = result.fit, result.base
            pipeline.results["urdf"] = write_nearest_urdf(
                options.urdf_out, prepared.config, prepared.regressor, base, fit.theta, fit.covariance
            )
    else:
        pipeline.skip("urdf")
    if report is not None:
        with pipeline.stage("report"):
            pipeline.results["report"] = str(_write_report(report, options, prepared, result, warnings))
            if validation is not None:
                from motor_ident.commands.validate import write_validation_page

                write_validation_page(report / "validation", validation)
    else:
        pipeline.skip("report")
    passed = validation is None or bool(validation.payload["passed"])
    return pipeline.exit_code(passed=passed)


def _read_and_prepare(options: IdentifyOptions, pipeline: Pipeline, stages: Stages) -> Prepared:
    """The stages read (robot, spec, DATA) and prepare (range, derivatives, torque source, ``--online``)."""
    from motor_ident.commands.data_options import load_robot, load_spec_arg, preparation, spec_defaults
    from motor_ident.io.preprocess import prepare_record

    data = options.data
    with pipeline.stage("read"):
        config = load_robot(options.robot)
        spec = load_spec_arg(options.recording)
        recording = spec_defaults(options.recording, spec)
        config, gains = configured_gains(recording, config)
        regressor = config.build_regressor()
        big = is_bag(data) and _size(data) > 150 * PROGRESS_SAMPLES  # bags report the fraction read
        read = read_recording(data, recording, config, spec, progress=stages.stage(f"reading {data}", measured=big))
    gate: list[tuple[float, bool]] | None = None
    r2: tuple[np.ndarray, np.ndarray] | None = None
    bag = read.bag
    if bag is not None and bag.gate is not None:
        gate = [(float(t), bool(v[0])) for t, v in zip(bag.gate.t, bag.gate.values)]
    if bag is not None and bag.r2 is not None and bag.r2.values.shape[1] == len(config.joints):
        r2 = (bag.r2.t, bag.r2.values)
    with pipeline.stage("prepare"):
        refuse_idle_preparation(recording, spec, read.record, data_label(data, spec))
        record, notes = prepare_record(read.record, preparation(recording, spec), source=data_label(data, spec))
        if recording.payload_data is not None:
            stages.stage(f"drive gains from {recording.payload_data} and {data}", measured=False)
        payload = payload_reader(recording, config, spec)
        torque = apply_torque_source(recording, config, regressor, record, payload, gains=gains)
        online = None
        if options.online is not None:
            stages.stage("replaying the online identifier", measured=False)
            t, q, qd, tau = torque.record.t, torque.record.q, torque.record.qd, torque.record.tau
            assert qd is not None  # prepare_record differentiates
            online = {
                **online_replay(
                    options.online, tuple(config.joints), t, q, qd, tau, config=config, qdd=torque.record.qdd
                ),
                "scenario": options.online,
            }
            gate, r2 = online["gate"], (online["r2_t"], online["r2"])
    return Prepared(config, regressor, torque.record, torque, tuple(notes), tuple(read.warnings), gate, r2, online)


def _fit_warnings(joints: tuple[str, ...], result: Identification) -> tuple[str, ...]:
    """What the fit itself warns of: an estimate no physical robot has, a joint fitted worse than its mean."""
    consistency = result.consistency
    out: tuple[str, ...] = ()
    if consistency is not None and not consistency.consistent:
        out += (
            f"the estimate is not physically consistent ({consistency.reason}); "
            "--method sdp or --method log_cholesky keeps every link physically valid",
        )
    return out + tuple(
        f"joint {name}: training R2 {r2_joint:.3g} < 0, the fit predicts its torque worse than the torque's mean: "
        "check the torque column (sign, scale, unit), the joint's motion, and the derivatives' window"
        for name, r2_joint in zip(joints, result.fit.r2)
        if r2_joint < 0.0
    )


def _print_fit(prepared: Prepared, result: Identification, warnings: tuple[str, ...]) -> None:
    """The fit's summary on stdout: notes, warnings, metrics per joint, base parameters with their std."""
    from motor_ident.core.estimation.covariance import ESTIMATOR

    config = prepared.config
    for note in prepared.notes + prepared.torque.notes:
        print_wrapped("note", note)
    for note in warnings:
        print_wrapped("warning", note)
    fit, base, consistency = result.fit, result.base, result.consistency
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
    print(f"base parameters (value +- std; std: {ESTIMATOR}):")
    for expr, value, std in zip(base.expressions(), fit.theta, fit.std):
        print(f"  {value:12.5g} +- {std:<10.3g} {expr}")
    online = prepared.online
    if online is not None:
        opened, t0 = online["gate_opened_at_s"], prepared.record.t[0]
        print(
            f"online identifier ({online['scenario'] or 'default settings'}"
            f"{'' if online['counts'] is None else '; ' + online['counts'].describe()}): gate opened at "
            f"{'never' if opened is None else f'{opened - t0:.3f} s after the start'}; "
            f"at the end: {online['reason']}"
        )
        after = online["after_switch"]
        if after:
            print(
                f"after the switch ({after['seconds']:.3g} s, to the end): torque RMSE [N m] of the models in use "
                f"{' '.join(f'{x:.3g}' for x in after['rmse_active'])}, of the nominal model "
                f"{' '.join(f'{x:.3g}' for x in after['rmse_nominal'])}"
            )
        if online["too_short"]:
            print_wrapped("warning", online["too_short"])


def _fit_payload(
    options: IdentifyOptions, prepared: Prepared, result: Identification, warnings: tuple[str, ...]
) -> dict[str, Any]:
    """The ``--json`` keys of the fit (the later stages add theirs)."""
    config, torque, fit, base = prepared.config, prepared.torque, result.fit, result.base
    consistency = result.consistency
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
        "n_samples": int(prepared.record.t.size),
        "notes": list(prepared.notes + torque.notes),
        "warnings": list(warnings),
        **torque.json,
        "report": None,
    }
    online = prepared.online
    if online is not None:
        fit_online, after = online["fit"], online["after_switch"]
        payload["online"] = {
            "scenario": options.online,
            "gate_opened_at_s": online["gate_opened_at_s"],
            "gate_open_at_end": bool(online["gate"][-1][1]),
            "gate_changes": [[float(tg), bool(is_open)] for tg, is_open in online["gate"][1:]],
            "reason": online["reason"],
            "window": None if online["counts"] is None else online["counts"].describe(),
            "too_short": online["too_short"] or None,
            "r2_per_joint": None if fit_online is None else floats(online["r2"][-1]),
            "condition_number": None if fit_online is None else float(fit_online.condition_number),
            "gate_criterion": online["gate_criterion"],
            "after_switch": {k: floats(v) if isinstance(v, np.ndarray) else v for k, v in after.items()} or None,
        }
    return payload


def _save_parameters(path: str, prepared: Prepared, result: Identification) -> None:
    """``--out``: the full parameters (std where a base parameter is one alone), base parameters, covariance."""
    from motor_ident.io.params import ParameterSet, save_parameters

    regressor, fit, base = prepared.regressor, result.fit, result.base
    std_full = np.full(regressor.n_parameters, np.nan)
    std_full[base.independent] = np.where(np.any(base.B, axis=1), np.nan, fit.std)
    save_parameters(
        path,
        ParameterSet(
            names=regressor.names,
            values=result.theta,
            std=std_full,
            robot=prepared.config.name,
            method=fit.method,
            extra={
                "base_parameters": {
                    "expressions": base.expressions(),
                    "values": floats(fit.theta),
                    "std": floats(fit.std),
                    "covariance": [floats(row) for row in fit.covariance],
                },
                "metrics": {"r2_per_joint": floats(fit.r2), "condition_number": float(fit.condition_number)},
                **prepared.torque.parameter_extra,
            },
        ),
    )
    print(f"parameters written to {path}")


def _write_report(
    report: Path, options: IdentifyOptions, prepared: Prepared, result: Identification, warnings: tuple[str, ...]
) -> Path:
    """The HTML report, drawn aside and put into ``report`` whole; returns its ``index.html``."""
    from motor_ident.io.report import ReportInput, write_report

    record = prepared.record
    assert record.qd is not None and record.qdd is not None
    page = write_report(
        report,
        ReportInput(
            title=f"Identification of {prepared.config.name}",
            source=str(options.data),
            robot=prepared.config.name,
            regressor=prepared.regressor,
            result=result,
            t=record.t,
            q=record.q,
            qd=record.qd,
            qdd=record.qdd,
            tau=record.tau,
            gate=prepared.gate,
            r2=prepared.r2,
            notes=prepared.notes + prepared.torque.notes + warnings,
        ),
    )
    print(f"report written to {page}")
    return page


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``identify`` to the command line."""
    p = sub.add_parser(
        "identify",
        help="offline identification from recorded data (CSV / NPZ / rosbag2)",
        description="Identify the base parameters from a recording, in stages: read, prepare, fit, then each "
        "output as it is ready (--out, --validate-on's verdict, --urdf-out, the report), every output path checked "
        "before any work; --json records every stage's status with the results.",
        epilog=EXIT_HELP,
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
        "--orientation-noise",
        choices=("correct", "ignore"),
        default="correct",
        help="--floating-base: take the bias the IMU orientation's white noise leaves in the mass and CoM out by "
        "refitting with more of it (SIMEX), its uncertainty in their std (default), or ignore it",
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
