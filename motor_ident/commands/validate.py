"""``motor-ident validate``: predict a separate recording with identified parameters, and a verdict.

The identified model (a parameter file ``identify --out`` wrote) and the robot's nominal model
(URDF inertias, configured friction) predict the recording side by side; per joint RMSE, NRMSE,
relative residual error, centred and uncentred R^2 (`motor_ident.core.estimation.validation`).
The verdict checks per-joint acceptance limits: ``--max-rre`` / ``--min-r2``, else the robot
YAML's top-level ``acceptance: {max_rre: {elbow: 15, '*': 25}, min_r2: {...}}``, else RRE at most
25 % on every joint; and that no joint is predicted worse than by the nominal model. Exit status
1 when the verdict fails. ``identify --validate-on`` runs the same after fitting.

The recording's measurement becomes joint torque exactly as in identification (``--torque-source``,
the data spec's or the robot config's source; motor currents with the drive gains of ``--gains
FILE``, else those the parameter file holds, else the robot config's), and the models are compared
in joint torque on the recorded stamps.
"""

from __future__ import annotations

import argparse
import hashlib
import shlex
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from motor_ident.commands.common import floats
from motor_ident.commands.data_options import (
    add_data_arguments,
    add_robot_argument,
    load_robot,
    load_spec_arg,
    print_wrapped,
)
from motor_ident.commands.options import RecordingOptions, ValidateOptions
from motor_ident.commands.pipeline import EXIT_HELP
from motor_ident.commands.torque_options import add_torque_arguments

if TYPE_CHECKING:  # commands import their work inside functions (motor-ident --help stays light)
    from motor_ident.core.actuators.torque_sources import TorqueConverter
    from motor_ident.core.rigid_body.base_params import BaseParameters
    from motor_ident.core.rigid_body.regressor import Regressor
    from motor_ident.io.params import ParameterSet
    from motor_ident.io.robot_config import RobotConfig
    from motor_ident.io.validation_report import ValidationReportInput


def sha256(path: str | Path) -> str | None:
    """Hex SHA-256 of a file, or of every file under a directory in name order (None when missing)."""
    path = Path(path)
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    if not all(f.is_file() for f in files):
        return None
    digest = hashlib.sha256()
    for f in files:
        with open(f, "rb") as stream:  # a block at a time: a recording may be larger than memory
            for block in iter(lambda: stream.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def provenance(config: RobotConfig, files: Mapping[str, str | Path | None]) -> dict[str, Any]:
    """What produced a result: motor_ident version, git describe, config and data hashes, command line."""
    from motor_ident import __version__

    try:
        describe = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--tags"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        describe = ""
    out: dict[str, Any] = {
        "motor_ident_version": __version__,
        "git_describe": describe or None,
        "robot_config": str(config.source) if config.source is not None else config.name,
        "robot_config_sha256": None if config.source is None else sha256(config.source),
        "urdf_sha256": sha256(config.urdf),
    }
    for key, path in files.items():
        if path:
            out[f"{key}_file"] = str(path)
            out[f"{key}_sha256"] = sha256(path)
    out["command_line"] = shlex.join(["motor-ident", *sys.argv[1:]])
    return out


def acceptance_limits(config: RobotConfig, max_rre: str | None, min_r2: str | None) -> Any:
    """Limits from the command line, else the robot YAML's ``acceptance:`` block, else the default."""
    from motor_ident.core.estimation.validation import AcceptanceLimits, parse_limits
    from motor_ident.errors import ConfigError
    from motor_ident.schema import read_yaml

    block: Any = {}
    if config.source is not None and config.source.suffix.lower() in (".yaml", ".yml"):
        doc = read_yaml(config.source)
        block = (doc.get("acceptance") if isinstance(doc, Mapping) else None) or {}
    if not isinstance(block, Mapping):
        raise ConfigError(f"{config.source}: acceptance = {block!r}: expected {{max_rre: ..., min_r2: ...}}")

    def limits(key: str, given: str | None) -> dict[str, float] | None:
        if given is not None:
            return parse_limits(given, f"--{key.replace('_', '-')}")
        raw = block.get(key)
        if raw is None:
            return None
        if isinstance(raw, Mapping):
            try:
                return {str(k): float(v) for k, v in raw.items()}
            except (TypeError, ValueError):
                raise ConfigError(f"{config.source}: acceptance.{key} = {raw!r}: expected numbers") from None
        return parse_limits(str(raw), f"acceptance.{key}")

    rre, r2 = limits("max_rre", max_rre), limits("min_r2", min_r2)
    defaults = AcceptanceLimits()
    return AcceptanceLimits(max_rre=defaults.max_rre if rre is None else rre, min_r2=r2 or {})


def _predict(regressor: Regressor, theta: np.ndarray, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
    chunks = [
        regressor.predict(theta, q[s : s + 5000], qd[s : s + 5000], qdd[s : s + 5000]) for s in range(0, len(q), 5000)
    ]
    return np.concatenate(chunks) if chunks else np.zeros((0, regressor.robot.n))


@dataclass(frozen=True)
class Validation:
    """A validation's JSON payload and its page, drawn by `write_validation_page` (a stage of its own)."""

    payload: dict[str, Any]
    page: ValidationReportInput


def validate_recording(
    config: RobotConfig,
    regressor: Regressor,
    theta: np.ndarray,
    data: str,
    options: RecordingOptions,
    *,
    max_rre: str | None,
    min_r2: str | None,
    files: Mapping[str, str | Path | None],
    converter: TorqueConverter | None = None,
    gains: Any = None,
    primary: bool = True,
) -> Validation:
    """Predict ``data`` with ``theta`` and the nominal model; print the metrics and verdict.

    The recording is read and its measurement turned into joint torque exactly as identification
    does (`read_recording`, `apply_torque_source`), and the models are compared in joint torque on
    the recorded stamps (`prepare_record` with ``recorded_stamps``).

    Args:
        options: how ``data`` is read and prepared.
        max_rre, min_r2: the acceptance limits of the command line (`acceptance_limits`).
        converter: the conversion identification used (``identify --validate-on``: its drive gains);
            None builds it from ``options`` and ``config`` like ``identify`` does.
        gains: the `DriveGains` put into ``config`` (`configured_gains`), for the notes.
        primary: ``data`` is the command's DATA (``validate``), on which the preparation options
            must act (`refuse_idle_preparation`); False for ``identify --validate-on``'s second recording.
    """
    from motor_ident.commands.data_options import preparation, spec_defaults
    from motor_ident.commands.option_checks import refuse_idle_preparation
    from motor_ident.commands.torque_options import apply_torque_source, data_label, read_recording
    from motor_ident.core.actuators.torque_sources import UNITS
    from motor_ident.core.estimation.validation import judge, prediction_metrics
    from motor_ident.errors import DataError
    from motor_ident.io.preprocess import prepare_record
    from motor_ident.io.torque_record import with_joint_torque
    from motor_ident.io.validation_report import ValidationReportInput

    spec = load_spec_arg(options)
    options = spec_defaults(options, spec)
    recording = read_recording(data, options, config, spec)
    if primary:  # identify --validate-on: the options were checked on DATA, which they act on
        refuse_idle_preparation(options, spec, recording.record, data_label(data, spec))
    how = replace(preparation(options, spec), recorded_stamps=True)
    record, notes = prepare_record(recording.record, how, source=data_label(data, spec))
    notes = recording.warnings + notes
    if options.keep_origin:
        notes += (f"{data}: range from {options.keep_origin}",)
    if converter is None:
        torque = apply_torque_source(options, config, regressor, record, gains=gains)
        record, converter, notes = torque.record, torque.converter, notes + torque.notes
    else:
        record = with_joint_torque(record, converter)
    assert record.qd is not None and record.qdd is not None
    if not np.all(np.isfinite(record.tau)):
        raise DataError(
            f"{data}: the joint torque from torque source {converter.kind!r} holds NaN: the recording lacks the "
            f"measurement it converts ({converter.needs}), or a joint the source cannot observe"
        )
    unit = UNITS[converter.kind]
    compared = (
        "joint torque [N m]"
        if converter.kind == "joint_effort"
        else f"joint torque [N m] converted from {converter.kind} [{unit}] as identification does"
    )
    predicted = _predict(regressor, theta, record.q, record.qd, record.qdd)
    nominal = _predict(regressor, config.nominal_parameters(regressor), record.q, record.qd, record.qdd)
    metrics = prediction_metrics(record.tau, predicted)
    nominal_metrics = prediction_metrics(record.tau, nominal)
    limits = acceptance_limits(config, max_rre, min_r2)
    verdict = judge(config.joints, metrics, nominal_metrics, limits)
    prov = provenance(config, {**files, "validation_data": data, "spec": options.spec})
    for note in notes:
        print_wrapped("note", note)
    print(f"validation on {data} ({record.t.size} recorded samples), identified vs nominal model, in {compared}:")
    print(f"{'joint':<24}{'RRE %':>9}{'nominal %':>11}{'R2':>9}{'R2 unc.':>9}{'RMSE':>10}{'NRMSE':>9}")
    for j, name in enumerate(config.joints):
        print(
            f"{name:<24}{metrics.rre[j]:9.3g}{nominal_metrics.rre[j]:11.3g}{metrics.r2[j]:9.4f}"
            f"{metrics.r2_uncentred[j]:9.4f}{metrics.rmse[j]:10.4g}{metrics.nrmse[j]:9.4f}"
        )
    print(f"verdict: {'PASSED' if verdict.passed else 'FAILED'}")
    for reason in verdict.reasons:
        print(f"  {reason}")
    page = ValidationReportInput(
        title=f"Validation of {config.name} on {Path(data).name}",
        source=str(data),
        robot=config.name,
        joints=config.joints,
        t=record.t,
        tau=record.tau,
        predicted=predicted,
        nominal=nominal,
        metrics=metrics,
        nominal_metrics=nominal_metrics,
        limits=limits,
        verdict=verdict,
        provenance=prov,
        notes=notes,
    )
    payload = {
        "data": str(data),
        "joints": list(config.joints),
        "n_samples": int(record.t.size),
        "compared_in": compared,
        "torque_source": converter.kind,
        "rre_per_joint": floats(metrics.rre),
        "r2_per_joint": floats(metrics.r2),
        "r2_uncentred_per_joint": floats(metrics.r2_uncentred),
        "rmse_per_joint": floats(metrics.rmse),
        "nrmse_per_joint": floats(metrics.nrmse),
        "nominal_rre_per_joint": floats(nominal_metrics.rre),
        "nominal_r2_per_joint": floats(nominal_metrics.r2),
        "nominal_rmse_per_joint": floats(nominal_metrics.rmse),
        "limits": {"max_rre": dict(limits.max_rre), "min_r2": dict(limits.min_r2)},
        "passed": verdict.passed,
        "reasons": list(verdict.reasons),
        "checks": list(verdict.checks),
        "notes": list(notes),
        "provenance": prov,
        "report": None,
    }
    return Validation(payload=payload, page=page)


def write_validation_page(report: str | Path, validation: Validation) -> None:
    """Draw ``validation``'s page into the folder ``report`` (whole or absent) and record it in its payload."""
    from motor_ident.io.validation_report import write_validation_report

    page = write_validation_report(report, validation.page)
    validation.payload["report"] = str(page)
    print(f"validation report written to {page}")


def write_nearest_urdf(
    path: str,
    config: RobotConfig,
    regressor: Regressor,
    base: BaseParameters,
    theta_base: np.ndarray,
    covariance: np.ndarray,
) -> dict[str, Any]:
    """``--urdf-out``: the consistent links nearest to the URDF's that reproduce the identified base parameters.

    Prints each link's mass nominal -> exported with what the data say about it, and the distance
    (`motor_ident.core.estimation.nearest_consistent`); returns the JSON summary.
    """
    from motor_ident.core.estimation.constraints import physical_constraints
    from motor_ident.core.estimation.nearest_consistent import METRIC, nearest_consistent

    near = nearest_consistent(
        physical_constraints(regressor),
        base.projection,
        theta_base,
        covariance,
        config.nominal_parameters(regressor),
    )
    if near.shrinkage > 0.0:
        print_wrapped(
            "note",
            f"the base parameters' covariance is singular (rank {near.covariance_rank} of {base.n_base}): the "
            f"distance uses it shrunk {100 * near.shrinkage:g} % toward its diagonal (each standard deviation kept)",
        )
    print(f"URDF links: the physically consistent set nearest to the nominal URDF ({METRIC}: {near.distance:.4g})")
    print(
        f"  its base parameters are {near.mahalanobis:.3g} standard units from the identified ones "
        f"(95 % ellipsoid: {near.radius:.3g})"
    )
    print(f"  {'link':<24}{'nominal kg':>12}{'exported kg':>13}{'+- std':>9}{'CoM shift mm':>14}  the data")
    for name, m0, m, std, shift, how in zip(
        regressor.robot.body_names, near.mass_nominal, near.mass, near.mass_std, near.com_shift, near.mass_class
    ):
        print(f"  {name:<24}{m0:12.4g}{m:13.4g}{std:9.2g}{1e3 * shift:14.4g}  {how}")
    print(f"  {'total':<24}{near.mass_nominal.sum():12.4g}{near.mass.sum():13.4g}")
    summary = write_urdf(path, config, regressor, near.theta)
    summary["links"] = {
        "metric": METRIC,
        "distance": near.distance,
        "mahalanobis": near.mahalanobis,
        "radius_95": near.radius,
        "names": list(regressor.robot.body_names),
        "mass_nominal": floats(near.mass_nominal),
        "mass": floats(near.mass),
        "mass_std": floats(near.mass_std),
        "mass_class": list(near.mass_class),
        "com_shift_m": floats(near.com_shift),
        "covariance_rank": near.covariance_rank,
        "covariance_shrinkage": near.shrinkage,
    }
    return summary


def write_urdf_of_file(path: str, config: RobotConfig, regressor: Regressor, params: ParameterSet) -> dict[str, Any]:
    """``validate --urdf-out``: the nearest consistent links when the file holds its base parameters' covariance.

    Parameter files written by ``identify --out`` hold the base parameters with their covariance;
    other files (hand-written, older) are written as they are (they must be physically consistent).
    """
    from motor_ident.core.estimation.identification import structural_base_parameters

    recorded = params.extra.get("base_parameters")
    if isinstance(recorded, dict) and "covariance" in recorded and "values" in recorded:
        base = structural_base_parameters(regressor)
        if list(recorded.get("expressions", [])) == list(base.expressions()):
            covariance = np.asarray(recorded["covariance"], dtype=float)
            return write_nearest_urdf(path, config, regressor, base, np.asarray(recorded["values"]), covariance)
    print_wrapped(
        "note",
        "the parameters file holds no base-parameter covariance (identify --out writes it): its full parameters "
        "go into the URDF as they are",
    )
    return write_urdf(path, config, regressor, params.values)


def write_urdf(path: str, config: RobotConfig, regressor: Regressor, theta: np.ndarray) -> dict[str, Any]:
    """``--urdf-out``: the identified URDF, checked by reloading it; returns its JSON summary."""
    from motor_ident.io.urdf_export import export_urdf

    done = export_urdf(path, config, regressor, theta)
    print(
        f"URDF written to {done.path} (reloaded by pinocchio: torques within {done.max_torque_error:.2g} N m of the "
        f"parameters written)"
    )
    return {"path": str(done.path), "max_torque_error": done.max_torque_error, "comments": list(done.comments)}


def add_validate_on_arguments(p: argparse.ArgumentParser) -> None:
    """``identify``'s ``--validate-on`` and how that recording is read and cropped."""
    p.add_argument(
        "--validate-on",
        metavar="DATA2",
        help="then predict this separate recording with the identified and the nominal model, its measurement "
        "converted to joint torque like DATA's (same torque source and drive gains): metrics, verdict and "
        "provenance under 'validation' in --json, a page in <report>/validation/; exit 1 when the verdict fails",
    )
    p.add_argument(
        "--validate-spec",
        metavar="SPEC",
        help="data spec of DATA2, with its own keep: range (default: --spec, keep: included; --keep-time and "
        "--keep-samples apply to DATA only)",
    )
    keep = p.add_mutually_exclusive_group()
    keep.add_argument(
        "--validate-keep-time", metavar="START:STOP", help="DATA2: keep only this time range [s], like --keep-time"
    )
    keep.add_argument(
        "--validate-keep-samples", metavar="FIRST:STOP", help="DATA2: keep only these samples, like --keep-samples"
    )


def add_verdict_arguments(p: argparse.ArgumentParser) -> None:
    """``--max-rre`` and ``--min-r2``."""
    p.add_argument(
        "--max-rre",
        metavar="LIMITS",
        help="acceptance: largest relative residual error per joint [%%], e.g. 20 or elbow=15,*=25 "
        "(default: the robot YAML's acceptance.max_rre, else 25 on every joint)",
    )
    p.add_argument(
        "--min-r2", metavar="LIMITS", help="acceptance: smallest centred R2 per joint, e.g. 0.9 or elbow=0.95,*=0.9"
    )


def cmd_validate(args: argparse.Namespace) -> int:
    """Predict a recording with identified parameters; exit 1 when the verdict fails."""
    return run_validate(ValidateOptions.from_namespace(args))


def run_validate(options: ValidateOptions) -> int:
    """``validate``'s stages: read (robot, parameters), validate, urdf, report; outputs checked first."""
    from motor_ident.commands.data_options import spec_defaults
    from motor_ident.commands.pipeline import Pipeline, check_outputs
    from motor_ident.commands.torque_options import configured_gains
    from motor_ident.io.params import load_parameters

    recording = options.recording
    check_outputs(
        {"--json": options.json, "--report": options.report, "--urdf-out": options.urdf_out},
        {"PARAMS": options.params, "DATA": options.data, "--spec": recording.spec, "--gains": recording.gains},
        directories=("--report",),
    )
    pipeline = Pipeline("validate", ("read", "validate", "urdf", "report"), json_path=options.json)
    with pipeline.stage("read"):
        config = load_robot(options.robot)
        recording = spec_defaults(replace(recording, params=options.params), load_spec_arg(recording))
        regressor = config.build_regressor()
        params = load_parameters(options.params, expected_names=regressor.names)
        config, gains = configured_gains(recording, config, params)
    with pipeline.stage("validate"):
        validation = validate_recording(
            config,
            regressor,
            params.values,
            options.data,
            recording,
            max_rre=options.max_rre,
            min_r2=options.min_r2,
            files={"parameters": options.params, "gains": recording.gains},
            gains=gains,
        )
    pipeline.results = {"robot": config.name, "parameters": str(options.params), "method": params.method}
    pipeline.results.update(validation.payload)
    pipeline.keep()
    if options.urdf_out:
        with pipeline.stage("urdf"):
            pipeline.results["urdf"] = write_urdf_of_file(options.urdf_out, config, regressor, params)
    else:
        pipeline.skip("urdf")
    if options.report:
        with pipeline.stage("report"):
            write_validation_page(options.report, validation)
            pipeline.results["report"] = validation.payload["report"]
    else:
        pipeline.skip("report")
    return pipeline.exit_code(passed=bool(validation.payload["passed"]))


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``validate`` to the command line."""
    p = sub.add_parser(
        "validate",
        help="predict a separate recording with identified parameters and the nominal model; metrics and a verdict",
        description=__doc__,
        epilog=EXIT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("params", help="identified parameters (the YAML identify --out writes)")
    p.add_argument(
        "data", help="the recording to predict: .csv (see --spec), .npz, or a rosbag2 bag (directory, .mcap or .db3)"
    )
    add_robot_argument(p)
    add_data_arguments(p)
    add_torque_arguments(p, payload=False)
    add_verdict_arguments(p)
    p.add_argument("--json", help="write metrics, verdict and provenance to this JSON file")
    p.add_argument("--report", metavar="DIR", help="write the validation page (index.html + PNGs) here")
    p.add_argument("--urdf-out", metavar="FILE", help="also write the parameters into a copy of the URDF (checked)")
    p.set_defaults(func=cmd_validate)
